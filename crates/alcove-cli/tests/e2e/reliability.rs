//! Reliability cases not covered by `faults`, `collab` and `agents` (issue 7):
//! 502/529 bursts, a server that refuses connections then comes back, an
//! enormous reply, a child whose model never recovers, a process-runner child
//! killed with SIGKILL, 200 spawned-and-closed children with nothing leaked,
//! SIGINT/SIGTERM with sleeping children, and `kill -9` of alcove itself.
//!
//! Every case checks that nothing was lost: the transcripts parse, every
//! tool_use has its result, and the workspace holds exactly what the tools
//! wrote. Nothing here depends on speed: waits are polls with deadlines, and
//! the points where `/proc` is read are handshakes (a Bash call that waits
//! for a file the test creates).

use std::collections::{BTreeSet, HashSet};
use std::path::Path;
use std::time::{Duration, Instant};

use alcove_testkit::{Block, FakeServer, Script, Step, TestEnv};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::{Value, json};

use crate::support::{
    assert_nothing_lost, exec, exec_command, finish, of_type, read_jsonl, setup,
    transcript, transcripts, wait_for_file,
};

/// Polls `check` every 20 ms until it returns `Ok`, failing with its last
/// error after `secs` seconds.
fn poll<T>(secs: u64, mut check: impl FnMut() -> Result<T, String>) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        match check() {
            Ok(value) => return value,
            Err(why) if Instant::now() > deadline => panic!("gave up after {secs} s: {why}"),
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// Every file under the workspace, relative, sorted.
fn workspace_files(env: &TestEnv) -> Vec<String> {
    fn walk(dir: &Path, root: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, root, out);
            } else {
                out.push(path.strip_prefix(root).unwrap().display().to_string());
            }
        }
    }
    let mut out = Vec::new();
    walk(env.workspace(), env.workspace(), &mut out);
    out.sort();
    out
}

/// Every event of every transcript (the session's and its children's), each
/// line parsed.
fn all_transcript_lines(env: &TestEnv) -> Vec<Value> {
    let mut lines = Vec::new();
    let mut dirs = vec![env.home().join("sessions")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|ext| ext == "jsonl") {
                lines.extend(read_jsonl(&path));
            }
        }
    }
    lines
}

/// `(ppid, pgid, start time)` of a live, non-zombie process.
fn proc_stat(pid: u32) -> Option<(u32, u32, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    if fields.first() == Some(&"Z") {
        return None;
    }
    Some((
        fields[1].parse().ok()?,
        fields[2].parse().ok()?,
        fields[19].parse().ok()?,
    ))
}

fn all_pids() -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
        .collect()
}

/// The live descendants of `root`: `(pid, pgid, start time)`.
fn descendants(root: u32) -> Vec<(u32, u32, u64)> {
    let table: Vec<(u32, (u32, u32, u64))> = all_pids()
        .into_iter()
        .filter_map(|pid| Some((pid, proc_stat(pid)?)))
        .collect();
    let mut found = Vec::new();
    let mut frontier = vec![root];
    while let Some(parent) = frontier.pop() {
        for (pid, (ppid, pgid, start)) in &table {
            if *ppid == parent {
                found.push((*pid, *pgid, *start));
                frontier.push(*pid);
            }
        }
    }
    found
}

/// Open descriptors of `pid`: (sockets, everything else).
fn fd_counts(pid: u32) -> (usize, usize) {
    let mut sockets = 0;
    let mut other = 0;
    for entry in std::fs::read_dir(format!("/proc/{pid}/fd")).unwrap() {
        match std::fs::read_link(entry.unwrap().path()) {
            Ok(target) if target.to_string_lossy().starts_with("socket:") => sockets += 1,
            Ok(_) => other += 1,
            Err(_) => {} // closed while listing
        }
    }
    (sockets, other)
}

fn read_pid(path: &Path) -> u32 {
    wait_for_file(path);
    poll(20, || {
        std::fs::read_to_string(path)
            .unwrap()
            .trim()
            .parse()
            .map_err(|err| format!("{}: {err}", path.display()))
    })
}

/// The parent's tool results from its last request: (content, is_error).
fn last_results(server: &FakeServer, parent: &str) -> Vec<(String, bool)> {
    let requests = server.requests_for(parent);
    requests
        .last()
        .unwrap()
        .tool_results()
        .into_iter()
        .map(|(_, content, is_error)| (content, is_error))
        .collect()
}

#[test]
fn bursts_of_502_and_529_are_ridden_out_and_a_longer_one_fails_cleanly() {
    let bad_gateway = || Step::http_error(502, "<html>502 Bad Gateway</html>");
    let (env, server) = setup(
        Script::new()
            .conversation(
                "burst then work",
                vec![
                    Step::tool_call("Write", json!({"file_path": "a.txt", "content": "one\n"})),
                    bad_gateway(),
                    Step::overloaded(),
                    bad_gateway(),
                    Step::overloaded(),
                    Step::tool_call(
                        "Edit",
                        json!({"file_path": "a.txt", "old_string": "one", "new_string": "two"}),
                    ),
                    Step::overloaded(),
                    bad_gateway(),
                    Step::text("survived"),
                ],
            )
            .conversation(
                "endless burst",
                vec![
                    Step::tool_call("Write", json!({"file_path": "b.txt", "content": "kept\n"})),
                    bad_gateway(),
                    Step::overloaded(),
                    bad_gateway(),
                    Step::overloaded(),
                    bad_gateway(),
                ],
            ),
    );
    let out = exec(
        &env,
        &server,
        &["--permission-mode", "acceptEdits", "--json", "burst then work"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let events = out.events();
    let reasons: Vec<&str> = of_type(&events, "model_retry")
        .iter()
        .map(|retry| retry["reason"].as_str().unwrap())
        .collect();
    assert_eq!(reasons.len(), 6, "{reasons:?}");
    assert!(reasons[0].contains("502") && reasons[1].contains("529"), "{reasons:?}");
    assert_eq!(of_type(&events, "assistant_text").last().unwrap()["text"], "survived");
    assert_nothing_lost(&events);

    // Five failures in a row exhaust the four retries: exit 1, the work done
    // before the burst is kept and recorded.
    let out = exec(
        &env,
        &server,
        &["--permission-mode", "acceptEdits", "--json", "endless burst"],
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_eq!(server.requests_for("endless burst").len(), 6);
    let end = out.events().last().cloned().unwrap();
    assert_eq!(end["status"], "failed");
    assert!(end["error"].as_str().unwrap().contains("502"), "{end}");
    assert!(out.stderr.contains("502"), "{}", out.stderr);
    assert_nothing_lost(&all_transcript_lines(&env));
    assert_eq!(workspace_files(&env), ["a.txt", "b.txt"]);
    assert_eq!(env.read_file("a.txt"), "two\n");
    assert_eq!(env.read_file("b.txt"), "kept\n");
    server.assert_script_finished();
}

#[test]
fn a_refused_connection_is_retried_until_the_server_comes_back() {
    let env = TestEnv::new();
    std::fs::write(
        env.home().join("config.toml"),
        "[retry]\nmax_retries = 8\nbase_delay_ms = 400\nmax_delay_ms = 2000\n",
    )
    .unwrap();
    // A port nothing listens on: bound, then released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let nowhere = FakeServer::start(Script::new());
    let mut command = exec_command(
        &env,
        &nowhere,
        &["--permission-mode", "acceptEdits", "--json", "come back"],
    );
    command.env("ANTHROPIC_BASE_URL", format!("http://127.0.0.1:{port}"));
    let child = command.spawn().unwrap();
    // Once a refusal was recorded, the next attempt is at least 300 ms away.
    let reason = poll(20, || {
        let file = transcripts(&env).pop().ok_or("no transcript yet")?;
        let text = std::fs::read_to_string(file).unwrap();
        text.lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .find(|event| event["type"] == "model_retry")
            .map(|event| event["reason"].as_str().unwrap().to_owned())
            .ok_or_else(|| "no retry yet".to_owned())
    });
    assert!(reason.contains("connect"), "{reason}");
    let server = FakeServer::start_on(
        port,
        Script::new().conversation(
            "come back",
            vec![
                Step::tool_call("Write", json!({"file_path": "back.txt", "content": "up\n"})),
                Step::text("the server is back"),
            ],
        ),
    );
    let out = finish(child);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(nowhere.requests().is_empty());
    assert_eq!(server.requests().len(), 2);
    let events = out.events();
    assert!(!of_type(&events, "model_retry").is_empty());
    assert_nothing_lost(&events);
    assert_eq!(workspace_files(&env), ["back.txt"]);
    assert_eq!(env.read_file("back.txt"), "up\n");
}

#[test]
fn an_enormous_reply_and_an_enormous_tool_argument_arrive_whole() {
    let text: String = (0..100_000)
        .map(|n| format!("{n:07} the quick brown fox jumps over the lazy dog\n"))
        .collect();
    assert!(text.len() > 5_000_000);
    let content: String = text[..2_000_000].to_owned();
    let (env, server) = setup(Script::new().conversation(
        "say a lot",
        vec![
            Step::tool_call("Write", json!({"file_path": "big.txt", "content": content})),
            Step::text(&text),
        ],
    ));
    let out = exec(&env, &server, &["--permission-mode", "acceptEdits", "say a lot"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout == format!("{text}\n"), "the answer was not printed whole");
    assert_eq!(workspace_files(&env), ["big.txt"]);
    assert!(env.read_file("big.txt") == content, "the file was not written whole");
    let lines = transcript(&env);
    assert_nothing_lost(&lines);
    let last_text = of_type(&lines, "assistant_text").last().unwrap()["text"].clone();
    assert!(last_text.as_str() == Some(text.as_str()), "the transcript lost text");
}

#[test]
fn a_child_whose_model_never_recovers_fails_and_the_parent_goes_on() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "delegate to the unlucky",
                vec![
                    Step::tool_call(
                        "Agent",
                        json!({"description": "unlucky", "prompt": "UNLUCKY child"}),
                    ),
                    Step::tool_call("Write", json!({"file_path": "after.txt", "content": "x"})),
                    Step::text("parent carried on"),
                ],
            )
            .conversation("UNLUCKY child", vec![Step::overloaded(); 5]),
    );
    let out = exec(
        &env,
        &server,
        &["--permission-mode", "acceptEdits", "--json", "delegate to the unlucky"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(server.requests_for("UNLUCKY child").len(), 5, "1 try + 4 retries");
    let results = server.requests_for("delegate to the unlucky")[1].tool_results();
    assert!(results[0].2 && results[0].1.starts_with("Agent failed: "), "{results:?}");
    assert!(results[0].1.contains("529"), "{results:?}");
    let events = out.events();
    assert_eq!(of_type(&events, "agent_ended")[0]["ok"], false);
    assert_nothing_lost(&events);
    assert_nothing_lost(&all_transcript_lines(&env));
    assert_eq!(workspace_files(&env), ["after.txt"]);
}

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
            Step::tool_call("spawn_agent", json!({"message": "crash"})),
            Step::tool_call("wait", json!({"ids": ["agent-1"], "timeout_ms": 30_000})),
            Step::tool_call("spawn_agent", json!({"message": "again"})),
            Step::tool_call("wait", json!({"ids": ["agent-2"], "timeout_ms": 30_000})),
            Step::text("parent carried on"),
        ],
    ));
    env.write_file("runner.sh", CRASHING_RUNNER);
    let child = exec_command(
        &env,
        &server,
        &["-c", "agents.wait_min_ms=50", "--json", "parent of a crash"],
    )
    .env("ALCOVE_SUBAGENT_COMMAND", "sh runner.sh")
    .spawn()
    .unwrap();
    let runner = read_pid(&env.path("runner.pid"));
    let sleeper = read_pid(&env.path("sleeper.pid"));
    kill(Pid::from_raw(runner as i32), Signal::SIGKILL).unwrap();
    let out = finish(child);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let results = server.requests_for("parent of a crash");
    let waited: Value = serde_json::from_str(&results[2].tool_results()[1].1).unwrap();
    assert_eq!(waited["status"]["agent-1"], "errored", "{waited}");
    let waited: Value = serde_json::from_str(&last_results(&server, "parent of a crash")[3].0)
        .unwrap();
    assert_eq!(waited["details"]["agent-2"]["last_output"], "ok:again", "{waited}");
    poll(20, || match proc_stat(sleeper) {
        None => Ok(()),
        Some(_) => Err(format!("the killed runner's sleep {sleeper} is still running")),
    });
    assert_nothing_lost(&out.events());
    assert_eq!(workspace_files(&env), ["runner.pid", "runner.sh", "sleeper.pid"]);
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
            json!({"command": format!("echo $$ > {name}.pid; while [ ! -f {name}.go ]; do sleep 0.02; done")}),
        )
    };
    let mut parent = vec![handshake("start")];
    let mut next_id = 1;
    let mut round = |kinds: &dyn Fn(usize) -> &'static str, size: usize, parent: &mut Vec<Step>| {
        let spawns = (0..size)
            .map(|i| Block::tool_call("spawn_agent", json!({"message": format!("LEAK {} child", kinds(i))})))
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
        json!({"command": "echo $$ > busy/$$.pid; exec sleep 30"}),
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
    let pid = child.id();
    // Outside a handshake's own shell, alcove has no live descendant.
    let strays = |shell: u32| -> Vec<u32> {
        let inside: HashSet<u32> = descendants(shell).iter().map(|d| d.0).collect();
        descendants(pid)
            .into_iter()
            .map(|d| d.0)
            .filter(|p| *p != shell && !inside.contains(p))
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
            return Err(format!("{other} non-socket descriptors, {other_before} at the start"));
        }
        // Idle keep-alive connections may stay pooled, at most one per
        // request that was in flight at once.
        if sockets > sockets_before + BATCH + 1 {
            return Err(format!("{sockets} sockets, {sockets_before} at the start"));
        }
        Ok((sockets, other))
    });
    std::fs::write(env.path("end.go"), "").unwrap();
    let out = finish(child);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_ne!(start_shell, end_shell);
    eprintln!(
        "descriptors: sockets {sockets_before} -> {sockets_after}, others {other_before} -> {other_after}"
    );

    let requests = server.requests_for("LEAK parent");
    let last = requests.last().unwrap();
    let calls = last.assistant_tool_calls();
    let results = last.tool_results();
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
        let shell = read_pid(&entry.unwrap().path());
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
        &["--permission-mode", "bypassPermissions", "--json", "FAMILY parent"],
    );
    if runner {
        command.env("ALCOVE_SUBAGENT_COMMAND", "sh runner.sh");
    }
    let child = command.spawn().unwrap();
    let pid = child.id();
    let sleepers: Vec<u32> = ["SLEEPY-1", "SLEEPY-2", "SLEEPY-3"]
        .iter()
        .map(|name| read_pid(&env.path(&format!("sleeper-{name}.pid"))))
        .collect();
    let family = descendants(pid);
    for sleeper in &sleepers {
        assert!(family.iter().any(|d| d.0 == *sleeper), "{sleeper} not under alcove");
    }
    let own_group = proc_stat(pid).unwrap().1;
    kill(Pid::from_raw(pid as i32), signal).unwrap();
    let code = finish(child).code;
    // Nothing of the family survives, by pid or by process group.
    let groups: HashSet<u32> = family.iter().map(|d| d.1).filter(|g| *g != own_group).collect();
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
            Err(format!("left behind: {alive:?}, in the family's groups: {in_groups:?}"))
        }
    });
    let lines = all_transcript_lines(&env);
    assert_nothing_lost(&lines);
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
                json!({"command": "echo $$ > crash.pid; while [ ! -f never ]; do sleep 0.02; done"}),
            ),
            Step::text("resumed fine"),
        ],
    ));
    let child = exec_command(&env, &server, &["--permission-mode", "bypassPermissions", "crash me"])
        .spawn()
        .unwrap();
    let shell = read_pid(&env.path("crash.pid"));
    kill(Pid::from_raw(child.id() as i32), Signal::SIGKILL).unwrap();
    assert_eq!(finish(child).code, -1, "killed by a signal");
    // The orphaned command is the test's to clean up (its own group).
    let _ = nix::sys::signal::killpg(Pid::from_raw(shell as i32), Signal::SIGKILL);
    let lines = transcript(&env);
    let session = lines[0]["session_id"].as_str().unwrap().to_owned();
    assert!(of_type(&lines, "session_ended").is_empty());

    let out = exec(
        &env,
        &server,
        &["--permission-mode", "bypassPermissions", "--resume", &session, "go on"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "resumed fine\n");
    let resumed = server.requests().last().cloned().unwrap();
    let uses: HashSet<String> = resumed.assistant_tool_calls().into_iter().map(|c| c.0).collect();
    let answered: HashSet<String> = resumed.tool_results().into_iter().map(|r| r.0).collect();
    assert_eq!(uses, answered, "the interrupted call was not answered on resume");
    assert_eq!(workspace_files(&env), ["crash.pid", "kept.txt"]);
    assert_eq!(env.read_file("kept.txt"), "kept\n");
}
