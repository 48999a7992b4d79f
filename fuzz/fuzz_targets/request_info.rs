#![no_main]
//! See `fuzz_targets::request_info`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_targets::request_info(data));
