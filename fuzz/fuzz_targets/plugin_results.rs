#![no_main]
//! See `endpoints::fuzz_targets::plugin_results`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| endpoints::fuzz_targets::plugin_results(data));
