//! `Bash`: exit codes, merged output, caps, and that timeouts and cancels
//! leave no process behind.

use std::time::{Duration, Instant};

use alcove_tools::{Bash, TypedTool};
use nix::errno::Errno;
use nix::sys::signal::kill;
use nix::unistd::Pid;
use serde_json::json;

use crate::common::Env;

/// Whether the process group has no live member left. Members that are dead
/// but not yet reaped (zombies) count as gone: once the shell dies its
/// children are re-parented to PID 1, and an init that does not reap
/// orphans (as in some containers) would otherwise keep them forever.
fn group_gone(pgid: i32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        match kill(Pid::from_raw(-pgid), None) {
            Err(Errno::ESRCH) => return true,
            _ if live_members(pgid) == 0 => return true,
            _ if Instant::now() > deadline => return false,
            _ => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// Non-zombie processes whose process group is `pgid`, from /proc.
fn live_members(pgid: i32) -> usize {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| std::fs::read_to_string(entry.path().join("stat")).ok())
        .filter(|stat| {
            // pid (comm) state ppid pgrp ...; comm may hold spaces and parens.
            let Some(rest) = stat.rsplit_once(')').map(|(_, rest)| rest) else {
                return false;
            };
            let fields: Vec<&str> = rest.split_whitespace().collect();
            fields.len() > 2 && fields[2] == pgid.to_string() && fields[0] != "Z"
        })
        .count()
}

fn first_line_pid(out: &str) -> i32 {
    out.lines()
        .next()
        .unwrap()
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("no pid in {out}"))
}

#[tokio::test]
async fn runs_in_the_workspace_with_merged_output() {
    let env = Env::new();
    env.file("marker.txt", "x");
    let out = env
        .ok(&Bash::default(), json!({"command": "ls; echo out; echo err >&2; sleep 0.1; echo late", "description": "list"}))
        .await;
    assert_eq!(out, "marker.txt\nout\nerr\nlate");
}

#[tokio::test]
async fn stdout_and_stderr_arrive_in_the_order_they_were_written() {
    let env = Env::new();
    let out = env
        .ok(
            &Bash::default(),
            json!({"command": "for i in 1 2 3 4 5 6 7 8; do echo out$i; echo err$i >&2; done"}),
        )
        .await;
    let expected: Vec<String> = (1..=8)
        .flat_map(|i| [format!("out{i}"), format!("err{i}")])
        .collect();
    assert_eq!(out, expected.join("\n"));
}

#[tokio::test]
async fn non_zero_exit_is_an_error_with_the_code() {
    let env = Env::new();
    let bash = Bash::default();
    let err = env
        .err(&bash, json!({"command": "echo failing; exit 3"}))
        .await;
    assert_eq!(err, "failing\nExit code: 3");
    let err = env.err(&bash, json!({"command": "exit 1"})).await;
    assert_eq!(err, "(no output)\nExit code: 1");
    assert_eq!(
        env.ok(&bash, json!({"command": "true"})).await,
        "(no output)"
    );
    // stdin is closed: `cat` ends at once instead of waiting.
    assert_eq!(
        env.ok(&bash, json!({"command": "cat"})).await,
        "(no output)"
    );
}

#[tokio::test]
async fn timeout_kills_the_whole_group() {
    let env = Env::new();
    let started = Instant::now();
    let err = env
        .err(
            &Bash::default(),
            json!({"command": "echo $$; sleep 30 & sleep 30; echo never", "timeout": 500}),
        )
        .await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
    assert!(err.contains("Command timed out after 500 ms"), "{err}");
    assert!(err.contains("process group was killed"), "{err}");
    assert!(!err.contains("never"));
    let pgid = first_line_pid(&err);
    assert!(
        group_gone(pgid),
        "process group {pgid} survived the timeout"
    );
}

#[tokio::test]
async fn what_a_command_prints_as_it_is_stopped_is_kept() {
    let env = Env::new();
    // On SIGTERM it prints 128 KiB, more than a pipe holds, then a last
    // line: the pipe must be read while the command ends.
    let command = "s=x; for i in $(seq 17); do s=$s$s; done; \
                   trap 'echo \"$s\"; echo stopped-cleanly; exit 0' TERM; \
                   echo started; sleep 30 & wait";
    let err = env
        .err(
            &Bash::default(),
            json!({"command": command, "timeout": 1000}),
        )
        .await;
    assert!(err.contains("Command timed out after 1000 ms"), "{err}");
    assert!(err.starts_with("started"), "{}", &err[..err.len().min(200)]);
    assert!(
        err.contains("stopped-cleanly"),
        "{}",
        &err[err.len().saturating_sub(300)..]
    );
}

#[tokio::test]
async fn cancel_kills_the_whole_group() {
    let env = Env::new();
    let bash = Bash::default();
    let cancel = env.context.cancel.clone();
    let started = Instant::now();
    let (out, ()) = tokio::join!(
        env.call(&bash, json!({"command": "echo $$; sleep 30 & sleep 30"})),
        async {
            tokio::time::sleep(Duration::from_millis(400)).await;
            cancel.cancel();
        }
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
    assert!(out.is_error);
    assert!(out.content.contains("Command cancelled"), "{}", out.content);
    assert!(
        out.content.contains("process group was killed"),
        "{}",
        out.content
    );
    let pgid = first_line_pid(&out.content);
    assert!(group_gone(pgid), "process group {pgid} survived the cancel");
}

#[tokio::test]
async fn background_jobs_die_with_the_command() {
    let env = Env::new();
    let started = Instant::now();
    let out = env
        .ok(
            &Bash::default(),
            json!({"command": "echo $$; sleep 30 & echo started"}),
        )
        .await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "waited for the background job"
    );
    assert!(out.ends_with("started"), "{out}");
    assert!(group_gone(first_line_pid(&out)));
}

#[tokio::test]
async fn dropping_the_call_kills_the_group() {
    let env = Env::new();
    let pid_file = env.root().join("pid");
    let command = format!("echo $$ > {}; sleep 30", pid_file.display());
    let bash = Bash::default();
    let call = env.call(&bash, json!({"command": command}));
    let _ = tokio::time::timeout(Duration::from_millis(500), call).await;
    let pgid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        group_gone(pgid),
        "process group {pgid} survived the dropped call"
    );
}

#[tokio::test]
async fn long_output_keeps_head_and_tail() {
    let env = Env::new();
    let bash = Bash::default();
    // About 109 KB: kept whole in memory, cut to 30000 chars.
    let out = env.ok(&bash, json!({"command": "seq 1 20000"})).await;
    assert!(out.starts_with("1\n2\n3\n"), "{}", &out[..20]);
    assert!(out.ends_with("19999\n20000"), "{}", &out[out.len() - 20..]);
    let total = (1..=20000)
        .map(|i: u32| i.to_string().len() + 1)
        .sum::<usize>()
        - 1;
    assert!(
        out.contains(&format!(
            "[{} chars cut from the middle of the output]",
            total + 1 - 30_000
        )),
        "{}",
        out.lines().find(|l| l.contains("cut")).unwrap_or("")
    );
    // About 590 KB: only head and tail are ever held.
    let out = env.ok(&bash, json!({"command": "seq 1 100000"})).await;
    let total = (1..=100000)
        .map(|i: u32| i.to_string().len() + 1)
        .sum::<usize>();
    assert!(out.starts_with("1\n2\n"));
    assert!(out.ends_with("99999\n100000"));
    assert!(out.contains(&format!("[{} chars cut from the middle", total - 30_000)));
    assert!(out.len() < 30_200);
}

#[tokio::test]
async fn inspect_reports_the_command() {
    let env = Env::new();
    let bash = Bash::default();
    assert!(!bash.concurrency_safe());
    let invocation = alcove_tools::inspect(
        &bash,
        &json!({"command": "cargo test\ncargo clippy", "timeout": 1000}),
        &env.context.workspace,
    )
    .unwrap();
    assert_eq!(invocation.summary, "cargo test …");
    assert_eq!(
        invocation.command.as_deref(),
        Some("cargo test\ncargo clippy")
    );
    let reason = alcove_tools::inspect(&bash, &json!({"command": "  "}), &env.context.workspace)
        .unwrap_err();
    assert!(reason.contains("empty"), "{reason}");
    let reason =
        alcove_tools::inspect(&bash, &json!({"timeout": 5}), &env.context.workspace).unwrap_err();
    assert!(reason.contains("missing field `command`"), "{reason}");
}

#[test]
fn the_group_check_sees_live_members() {
    use std::os::unix::process::CommandExt;
    let mut child = std::process::Command::new("sleep")
        .arg("30")
        .process_group(0)
        .spawn()
        .unwrap();
    let pgid = i32::try_from(child.id()).unwrap();
    assert_eq!(live_members(pgid), 1);
    assert!(kill(Pid::from_raw(-pgid), None).is_ok());
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(group_gone(pgid));
}

/// How a command ended is data, not only text: the evidence footer reads it.
#[tokio::test]
async fn the_exit_code_and_printed_bytes_are_effects() {
    let env = Env::new();
    let bash = Bash::default();
    let out = env
        .call(&bash, json!({"command": "printf abcd; exit 3"}))
        .await;
    assert!(out.is_error);
    assert_eq!(out.effects.exit_code, Some(3));
    assert_eq!(out.effects.bytes, Some(4));
    let out = env.call(&bash, json!({"command": "true"})).await;
    assert_eq!(
        (out.effects.exit_code, out.effects.bytes),
        (Some(0), Some(0))
    );
}
