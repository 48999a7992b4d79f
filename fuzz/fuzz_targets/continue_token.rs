#![no_main]
//! See `endpoints::fuzz_targets::continue_token`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| endpoints::fuzz_targets::continue_token(data));
