#![no_main]
//! See `wasm_apiserver::endpoints::fuzz_targets::request_body`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| wasm_apiserver::endpoints::fuzz_targets::request_body(data));
