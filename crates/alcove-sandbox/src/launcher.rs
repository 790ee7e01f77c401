//! The launcher: `alcove-sandbox <policy-json> -- <program> <args…>`, or
//! `alcove __sandbox <policy-json> -- …` where that binary is missing.
//!
//! A confined command the session's holder cannot start ([`crate::held`]:
//! one with the network on, or a session without a holder) starts through
//! this small program (as Codex re-executes itself): the launcher sets the resource limits, moves
//! into the session's network namespace when the network is off
//! ([`shared_net`], or a fresh one where the session has none), locks
//! itself into a Landlock domain (after binding git's hooks and config
//! read-only in a mount namespace of its own, [`git_guard`]), and then replaces itself with the command,
//! which inherits all of it. Doing this in a fresh single-threaded process
//! needs no `unsafe` `pre_exec` hook in the multi-threaded agent, and
//! nothing can be undone by the command: Landlock domains and namespaces are
//! inherited by every descendant and never lifted.
//!
//! It is a binary of its own ([`BINARY`], built and installed beside
//! alcove) because starting alcove's own binary, most of which the
//! launcher never runs, cost about 1.6 ms of page faults per command;
//! alcove falls back to re-executing itself when it is not there.
//!
//! Any step that fails ends the launcher with [`LAUNCH_FAILED`] and a line
//! on stderr starting with [`FAILURE_PREFIX`]: a command never runs with
//! less confinement than asked.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::process::Command;

use crate::fs_rules;
use crate::git_guard;
use crate::net;
use crate::policy::{LaunchPolicy, SandboxMode};
use crate::shared_net;

/// The launcher's own binary, looked for beside alcove's.
pub const BINARY: &str = "alcove-sandbox";
/// The hidden subcommand that runs the launcher inside alcove's binary.
pub const SUBCOMMAND: &str = "__sandbox";
/// Exit status when the sandbox could not be set up.
pub const LAUNCH_FAILED: i32 = 125;
/// How the launcher's own errors start on stderr.
pub const FAILURE_PREFIX: &str = "alcove sandbox: ";

/// Runs the launcher with the arguments after the subcommand. Returns only
/// on failure, with the exit status to use, or when it held the session's
/// network namespace ([`shared_net::HOLD_ARGUMENT`]) until told to end.
pub fn main(args: Vec<OsString>) -> i32 {
    let result = if args
        .first()
        .is_some_and(|arg| arg == shared_net::HOLD_ARGUMENT)
    {
        let mut args = args.into_iter().skip(1);
        let loopback = args.next().is_some_and(|arg| arg == "loopback");
        parse_policy(args.next()).and_then(|check| shared_net::hold(loopback, &check).map(|()| 0))
    } else {
        launch(args).map(|never| match never {})
    };
    result.unwrap_or_else(|reason| {
        eprintln!("{FAILURE_PREFIX}{reason}");
        LAUNCH_FAILED
    })
}

enum Never {}

fn launch(args: Vec<OsString>) -> Result<Never, String> {
    let mut args = args.into_iter();
    let policy = parse_policy(args.next())?;
    if args.next().as_deref() != Some(std::ffi::OsStr::new("--")) {
        return Err("expected `--` before the command".to_owned());
    }
    let program = args.next().ok_or("missing command")?;
    let rest: Vec<OsString> = args.collect();

    policy.limits.apply_cgroup()?;
    if policy.mode != SandboxMode::Off && !policy.network {
        match policy.network_holder {
            Some(holder) => shared_net::join(holder)?,
            None => net::isolate(policy.allow_loopback)?,
        }
    }
    if policy.mode != SandboxMode::Off && !policy.guards.is_empty() {
        let binds = git_guard::Binds::new(&policy.guards)?;
        git_guard::own_mount_namespace()?;
        binds.apply()?;
    }
    restrict_self(&policy)?;
    let err = Command::new(&program).args(&rest).exec();
    // A machine without bash still has sh.
    if err.kind() == std::io::ErrorKind::NotFound && program == "bash" {
        let err = Command::new("sh").args(&rest).exec();
        return Err(format!("cannot run bash or sh: {err}"));
    }
    Err(format!("cannot run {}: {err}", program.to_string_lossy()))
}

/// The policy argument, parsed.
fn parse_policy(arg: Option<OsString>) -> Result<LaunchPolicy, String> {
    let policy = arg
        .ok_or("missing policy argument")?
        .into_string()
        .map_err(|_| "policy is not UTF-8".to_owned())?;
    serde_json::from_str(&policy).map_err(|err| format!("bad policy: {err}"))
}

/// Applies `policy`'s resource limits and Landlock domain to the calling
/// process. After its namespaces: RLIMIT_NPROC then counts the processes of
/// the new user namespace, not all of the user's.
pub(crate) fn restrict_self(policy: &LaunchPolicy) -> Result<(), String> {
    policy.limits.apply()?;
    if policy.mode != SandboxMode::Off {
        fs_rules::restrict(policy)?;
    }
    Ok(())
}
