#![no_main]
//! See `fuzz_targets::label_selector`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_targets::label_selector(data));
