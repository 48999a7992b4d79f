// Package clientgo is an end-to-end suite that drives a running wasm-apiserver with client-go: the dynamic client,
// a dynamic shared informer with a resync period, a finalizer-driven delete, the `/status` subresource and
// server-side apply, against the wardle plugin's flunders (wardle.example.com).
//
// The tests need a running server with the wardle plugin: they read the path of a kubeconfig for it (an
// administrator) from WASM_APISERVER_KUBECONFIG. `cargo test --test client_go` (tests/tests/client_go.rs) starts a
// server, builds this package's test binary with `go test -c` and runs it. By hand:
//
//	WASM_APISERVER_KUBECONFIG=/path/to/kubeconfig go test -v ./
package clientgo
