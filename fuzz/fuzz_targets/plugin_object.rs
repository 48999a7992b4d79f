#![no_main]
//! See `endpoints::fuzz_targets::plugin_object`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| endpoints::fuzz_targets::plugin_object(data));
