//! wasm-apiserver: a Kubernetes-style API server whose resource types are WebAssembly components.
pub mod plugins;
pub mod storage;
