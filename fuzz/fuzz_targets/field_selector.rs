#![no_main]
//! See `fuzz_targets::field_selector`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_targets::field_selector(data));
