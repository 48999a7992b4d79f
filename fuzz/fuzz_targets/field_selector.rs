#![no_main]
//! See `wasm_apiserver::endpoints::fuzz_targets::field_selector`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| wasm_apiserver::endpoints::fuzz_targets::field_selector(data));
