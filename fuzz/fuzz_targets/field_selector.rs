#![no_main]
//! See `endpoints::fuzz_targets::field_selector`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| endpoints::fuzz_targets::field_selector(data));
