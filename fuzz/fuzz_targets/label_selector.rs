#![no_main]
//! See `endpoints::fuzz_targets::label_selector`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| endpoints::fuzz_targets::label_selector(data));
