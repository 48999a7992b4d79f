#![no_main]
//! See `wasm_apiserver::endpoints::fuzz_targets::plugin_object`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| wasm_apiserver::endpoints::fuzz_targets::plugin_object(data));
