#![no_main]
//! See `fuzz_targets::continue_token`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_targets::continue_token(data));
