module wardle

go 1.25

require wasm-apiserver.io/guest v0.0.0

require go.bytecodealliance.org/pkg v0.2.3 // indirect

replace wasm-apiserver.io/guest => ../../guest-sdk/go
