//! The `sse_responses` fuzz target: a thin libFuzzer wrapper around
//! `alcove_fuzz::sse_responses`, whose doc says what the input is and which
//! properties are checked (CI runs the same entry in its fuzz smoke test).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| alcove_fuzz::sse_responses(data));
