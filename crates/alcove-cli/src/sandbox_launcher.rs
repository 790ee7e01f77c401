//! `alcove-sandbox`: the sandbox launcher as a binary of its own.
//!
//! alcove runs it once per session as the holder of the session's network
//! namespace, which starts the confined commands, and per command as the
//! launcher where the holder cannot start one (`alcove_sandbox::launcher`).
//! It links nothing but the sandbox, so it starts in a fraction of the time
//! alcove's own binary takes; alcove re-executes itself (`alcove
//! __sandbox`) when this one is not installed beside it.

use std::process::ExitCode;

fn main() -> ExitCode {
    let code = alcove_sandbox::launcher::main(std::env::args_os().skip(1).collect());
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}
