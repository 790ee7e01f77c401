//! The `agent_definition` fuzz target: a thin libFuzzer wrapper around
//! `alcove_fuzz::agent_definition`, whose doc says what the input is and which
//! properties are checked (CI runs the same entry in its fuzz smoke test).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| alcove_fuzz::agent_definition(data));
