#![no_main]
//! See `fuzz_targets::plugin_results`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_targets::plugin_results(data));
