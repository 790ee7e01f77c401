//! The process side of reliability: a process-runner child killed with
//! SIGKILL, 200 spawned-and-closed children with nothing leaked, SIGINT and
//! SIGTERM with sleeping children, and `kill -9` of alcove itself.

use std::collections::{BTreeSet, HashSet};

use alcove_testkit::{Block, Script, Step, TestEnv};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::{Value, json};

use super::{
    all_pids, assert_transcripts_whole, descendants, fd_counts, in_background, last_results, poll,
    proc_stat, read_pid, workspace_files,
};
use crate::collab::with_runner;
use crate::support::{assert_nothing_lost, exec, exec_command, of_type, setup, transcript};

const CRASHING_RUNNER: &str = r#"#!/bin/sh
# A process runner whose first submission is killed by the test: its
# background sleep keeps the stdout pipe open after the shell is gone.
read -r message
case "$message" in
  crash) sleep 60 & echo $! > sleeper.pid; echo $$ > runner.pid; wait ;;
  *) echo "ok:$message" ;;
esac
"#;

#[test]
fn a_process_runner_child_killed_by_sigkill_ends_errored_and_the_parent_goes_on() {
    let (env, server) = setup(Script::new().conversation(
        "parent of a crash",
        vec![
            crate::support::load_deferred(),
            Step::tool_call("spawn_agent", json!({"message": "crash"})),
            Step::tool_call("wait", json!({"ids": ["agent-1"], "timeout_ms": 30_000})),
            Step::tool_call("spawn_agent", json!({"message": "again"})),
            Step::tool_call("wait", json!({"ids": ["agent-2"], "timeout_ms": 30_000})),
            Step::text("parent carried on"),
        ],
    ));
    env.write_file("runner.sh", CRASHING_RUNNER);
    let child = with_runner(&env, &server, "runner.sh", &[], "parent of a crash");
    let (_, running) = in_background(child);
    let runner = read_pid(&env.path("runner.pid"));
    let sleeper = read_pid(&env.path("sleeper.pid"));
    kill(Pid::from_raw(runner as i32), Signal::SIGKILL).unwrap();
    let out = running.join().unwrap();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let results = server.requests_for("parent of a crash");
    let waited: Value =
        serde_json::from_str(&crate::support::results_but_loads(&results[3])[1].1).unwrap();
    assert_eq!(waited["status"]["agent-1"], "errored", "{waited}");
    let waited: Value =
        serde_json::from_str(&last_results(&server, "parent of a crash")[3].0).unwrap();
    assert_eq!(
        waited["details"]["agent-2"]["last_output"], "ok:again",
        "{waited}"
    );
    poll(20, || match proc_stat(sleeper) {
        None => Ok(()),
        Some(_) => Err(format!(
            "the killed runner's sleep {sleeper} is still running"
        )),
    });
    assert_nothing_lost(&out.events());
    assert_eq!(
        workspace_files(&env),
        ["runner.pid", "runner.sh", "sleeper.pid"]
    );
}

/// Spawns and closes `n` children (in rounds of 10) of three kinds: quick
/// (answers at once), stuck (the model never answers) and busy (a Bash
/// `sleep`). Handshakes before and after let the test compare the alcove
/// process's descriptors and descendants; a last round then takes every slot.
#[test]
fn two_hundred_spawned_and_closed_children_leave_no_slot_task_process_or_descriptor() {
    const ROUNDS: usize = 20;
    const BATCH: usize = 10;
    const SLOTS: usize = 20;
    let handshake = |name: &str| {
        Step::tool_call(
            "Bash",
            // Bounded (about a minute), so a failed test leaves nothing running.
            json!({"command": format!("echo $$ > {name}.pid; for _ in $(seq 3000); do [ -f {name}.go ] && break; sleep 0.02; done")}),
        )
    };
    let mut parent = vec![crate::support::load_deferred(), handshake("start")];
    let mut next_id = 1;
    let mut round = |kinds: &dyn Fn(usize) -> &'static str, size: usize, parent: &mut Vec<Step>| {
        let spawns = (0..size)
            .map(|i| {
                Block::tool_call(
                    "spawn_agent",
                    json!({"message": format!("LEAK {} child", kinds(i))}),
                )
            })
            .collect();
        let closes = (next_id..next_id + size)
            .map(|id| Block::tool_call("close_agent", json!({"id": format!("agent-{id}")})))
            .collect();
        next_id += size;
        parent.push(Step::reply(spawns));
        parent.push(Step::reply(closes));
    };
    let mixed = |i: usize| ["stuck", "busy", "quick"][i % 3];
    for _ in 0..ROUNDS {
        round(&mixed, BATCH, &mut parent);
    }
    parent.push(handshake("end"));
    round(&|_| "quick", SLOTS, &mut parent);
    parent.push(Step::text("all closed"));
    let busy = Step::tool_call(
        "Bash",
        // The file's name is the pid (a shell killed at once leaves it empty).
        json!({"command": "touch busy/$$.pid; exec sleep 30"}),
    );
    let (env, server) = setup(
        Script::new()
            .conversation("LEAK parent", parent)
            .conversation("LEAK quick child", vec![Step::text("quick done"); 200])
            .conversation("LEAK stuck child", vec![Step::hang(); 200])
            .conversation("LEAK busy child", vec![busy; 200]),
    );
    std::fs::create_dir(env.path("busy")).unwrap();
    let child = exec_command(
        &env,
        &server,
        &[
            "--permission-mode",
            "bypassPermissions",
            "-c",
            &format!("agents.max_concurrent={SLOTS}"),
            "--json",
            "LEAK parent",
        ],
    )
    .spawn()
    .unwrap();
    let (pid, running) = in_background(child);
    // Outside a handshake's own shell, alcove has no live descendant but
    // the process holding the session's network namespace.
    let holder = |p: u32| {
        std::fs::read(format!("/proc/{p}/cmdline"))
            .is_ok_and(|cmdline| String::from_utf8_lossy(&cmdline).contains("--hold-network"))
    };
    let strays = |shell: u32| -> Vec<u32> {
        let inside: HashSet<u32> = descendants(shell).iter().map(|d| d.0).collect();
        descendants(pid)
            .into_iter()
            .map(|d| d.0)
            .filter(|p| *p != shell && !inside.contains(p) && !holder(*p))
            .collect()
    };
    let start_shell = read_pid(&env.path("start.pid"));
    let (sockets_before, other_before) = fd_counts(pid);
    std::fs::write(env.path("start.go"), "").unwrap();

    let end_shell = read_pid(&env.path("end.pid"));
    let (sockets_after, other_after) = poll(20, || {
        let left = strays(end_shell);
        let (sockets, other) = fd_counts(pid);
        if !left.is_empty() {
            return Err(format!("processes left: {left:?}"));
        }
        if other > other_before {
            return Err(format!(
                "{other} non-socket descriptors, {other_before} at the start"
            ));
        }
        // Idle keep-alive connections may stay pooled, at most one per
        // request that was in flight at once.
        if sockets > sockets_before + BATCH + 1 {
            return Err(format!("{sockets} sockets, {sockets_before} at the start"));
        }
        Ok((sockets, other))
    });
    std::fs::write(env.path("end.go"), "").unwrap();
    let out = running.join().unwrap();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_ne!(start_shell, end_shell);
    eprintln!(
        "descriptors: sockets {sockets_before} -> {sockets_after}, others {other_before} -> {other_after}"
    );

    let requests = server.requests_for("LEAK parent");
    let last = requests.last().unwrap();
    let mut calls = last.assistant_tool_calls();
    calls.retain(|(_, name, _)| name != "ToolSearch");
    let results = crate::support::results_but_loads(last);
    assert_eq!(calls.len(), results.len());
    let mut spawned = 0;
    for ((_, name, _), (_, content, is_error)) in calls.iter().zip(&results) {
        match name.as_str() {
            "spawn_agent" => {
                spawned += 1;
                assert!(!is_error, "a spawn failed: {content}");
            }
            "close_agent" => assert!(!is_error && content.contains("\"closed\""), "{content}"),
            _ => {}
        }
    }
    assert_eq!(spawned, ROUNDS * BATCH + SLOTS);
    for entry in std::fs::read_dir(env.path("busy")).unwrap() {
        let path = entry.unwrap().path();
        let shell: u32 = path.file_stem().unwrap().to_str().unwrap().parse().unwrap();
        poll(20, || match proc_stat(shell) {
            None => Ok(()),
            Some(_) => Err(format!("a closed child's sleep {shell} is still running")),
        });
    }
    assert_nothing_lost(&out.events());
    let files: BTreeSet<String> = workspace_files(&env)
        .into_iter()
        .filter(|file| !file.starts_with("busy/"))
        .collect();
    let expected = ["end.go", "end.pid", "start.go", "start.pid"];
    assert_eq!(files, expected.iter().map(|f| f.to_string()).collect());
}

const SLEEPING_RUNNER: &str = r#"#!/bin/sh
read -r message
sleep 30 & echo $! > "sleeper-$message.pid"; wait
"#;

/// Starts a parent with two spawned children (in-process, or through the
/// process runner when `runner`) and one `Agent` child, all in Bash `sleep`s,
/// then sends `signal` once every sleep runs.
fn signal_a_family(signal: Signal, runner: bool) -> (i32, TestEnv) {
    let sleeper = |name: &str| {
        Step::tool_call(
            "Bash",
            json!({"command": format!("sleep 30 & echo $! > sleeper-{name}.pid; wait")}),
        )
    };
    let (env, server) = setup(
        Script::new()
            .conversation(
                "FAMILY parent",
                vec![
                    crate::support::load_deferred(),
                    Step::reply(vec![
                        Block::tool_call("spawn_agent", json!({"message": "SLEEPY-1"})),
                        Block::tool_call("spawn_agent", json!({"message": "SLEEPY-2"})),
                    ]),
                    Step::tool_call(
                        "Agent",
                        json!({"description": "sleepy", "prompt": "SLEEPY-3"}),
                    ),
                ],
            )
            .conversation("SLEEPY-1", vec![sleeper("SLEEPY-1")])
            .conversation("SLEEPY-2", vec![sleeper("SLEEPY-2")])
            .conversation("SLEEPY-3", vec![sleeper("SLEEPY-3")]),
    );
    env.write_file("runner.sh", SLEEPING_RUNNER);
    let mut command = exec_command(
        &env,
        &server,
        &[
            "--permission-mode",
            "bypassPermissions",
            "--json",
            "FAMILY parent",
        ],
    );
    if runner {
        command.env("ALCOVE_SUBAGENT_COMMAND", "sh runner.sh");
    }
    let (pid, running) = in_background(command.spawn().unwrap());
    let sleepers: Vec<u32> = ["SLEEPY-1", "SLEEPY-2", "SLEEPY-3"]
        .iter()
        .map(|name| read_pid(&env.path(&format!("sleeper-{name}.pid"))))
        .collect();
    let family = descendants(pid);
    for sleeper in &sleepers {
        assert!(
            family.iter().any(|d| d.0 == *sleeper),
            "{sleeper} not under alcove"
        );
    }
    let own_group = proc_stat(pid).unwrap().1;
    kill(Pid::from_raw(pid as i32), signal).unwrap();
    let code = running.join().unwrap().code;
    // Nothing of the family survives, by pid or by process group.
    let groups: HashSet<u32> = family
        .iter()
        .map(|d| d.1)
        .filter(|g| *g != own_group)
        .collect();
    poll(20, || {
        let alive: Vec<u32> = family
            .iter()
            .filter(|(p, _, start)| proc_stat(*p).is_some_and(|s| s.2 == *start))
            .map(|d| d.0)
            .collect();
        let in_groups: Vec<u32> = all_pids()
            .into_iter()
            .filter(|p| proc_stat(*p).is_some_and(|s| groups.contains(&s.1)))
            .collect();
        if alive.is_empty() && in_groups.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "left behind: {alive:?}, in the family's groups: {in_groups:?}"
            ))
        }
    });
    assert!(
        assert_transcripts_whole(&env) >= 2,
        "the session and its children"
    );
    let main = transcript(&env);
    assert_eq!(main.last().unwrap()["status"], "aborted");
    (code, env)
}

#[test]
fn sigint_with_sleeping_children_exits_130_and_leaves_no_process() {
    let (code, env) = signal_a_family(Signal::SIGINT, false);
    assert_eq!(code, 130);
    drop(env);
}

#[test]
fn sigterm_with_sleeping_runner_and_agent_children_exits_143_and_leaves_no_process() {
    let (code, env) = signal_a_family(Signal::SIGTERM, true);
    assert_eq!(code, 143);
    drop(env);
}

#[test]
fn kill_9_leaves_a_valid_transcript_that_resume_continues() {
    let (env, server) = setup(Script::new().conversation(
        "crash me",
        vec![
            Step::tool_call("Write", json!({"file_path": "kept.txt", "content": "kept\n"})),
            Step::tool_call(
                "Bash",
                json!({"command": "echo $$ > crash.pid; for _ in $(seq 3000); do [ -f never ] && break; sleep 0.02; done"}),
            ),
            Step::text("resumed fine"),
        ],
    ));
    let child = exec_command(
        &env,
        &server,
        &["--permission-mode", "bypassPermissions", "crash me"],
    )
    .spawn()
    .unwrap();
    let (pid, running) = in_background(child);
    let shell = read_pid(&env.path("crash.pid"));
    kill(Pid::from_raw(pid as i32), Signal::SIGKILL).unwrap();
    assert_eq!(running.join().unwrap().code, -1, "killed by a signal");
    // The sandbox holder that started the command finds alcove gone and
    // kills it: nothing is orphaned.
    let gone = |pid: u32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| {
            stat.rsplit(')')
                .next()
                .is_some_and(|rest| rest.trim_start().starts_with('Z'))
        })
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !gone(shell) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let orphaned = !gone(shell);
    let _ = nix::sys::signal::killpg(Pid::from_raw(shell as i32), Signal::SIGKILL);
    assert!(!orphaned, "the command outlived alcove");
    let lines = transcript(&env);
    let session = lines[0]["session_id"].as_str().unwrap().to_owned();
    assert!(of_type(&lines, "session_ended").is_empty());

    let out = exec(
        &env,
        &server,
        &[
            "--permission-mode",
            "bypassPermissions",
            "--resume",
            &session,
            "go on",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "resumed fine\n");
    let resumed = server.requests().last().cloned().unwrap();
    let uses: HashSet<String> = resumed
        .assistant_tool_calls()
        .into_iter()
        .map(|c| c.0)
        .collect();
    let answered: HashSet<String> = crate::support::results_but_loads(&resumed)
        .into_iter()
        .map(|r| r.0)
        .collect();
    assert_eq!(
        uses, answered,
        "the interrupted call was not answered on resume"
    );
    assert_eq!(workspace_files(&env), ["crash.pid", "kept.txt"]);
    assert_eq!(env.read_file("kept.txt"), "kept\n");
}
