module wasm-apiserver.io/guest

go 1.25

require go.bytecodealliance.org/pkg v0.2.3
