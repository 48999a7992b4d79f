#![no_main]
//! See `fuzz_targets::plugin_object`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_targets::plugin_object(data));
