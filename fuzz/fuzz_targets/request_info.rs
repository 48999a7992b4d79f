#![no_main]
//! See `endpoints::fuzz_targets::request_info`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| endpoints::fuzz_targets::request_info(data));
