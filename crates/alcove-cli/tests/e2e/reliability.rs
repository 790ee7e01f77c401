//! Reliability cases not covered by `faults`, `collab` and `agents` (issue 7):
//! 502/529 bursts, a server that refuses connections then comes back, an
//! enormous reply, and a child whose model never recovers; `processes` has
//! the crashes, leaks and signals.
//!
//! Every case checks that nothing was lost: the transcripts parse, every
//! tool_use has its result, and the workspace holds exactly what the tools
//! wrote. Nothing here depends on speed: waits are polls with deadlines, and
//! the points where `/proc` is read are handshakes (a Bash call that waits
//! for a file the test creates).

mod processes;

use std::path::Path;
use std::process::Child;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use alcove_testkit::{FakeServer, Script, Step, TestEnv};
use serde_json::{Value, json};

use crate::support::{
    Outcome, assert_nothing_lost, exec, exec_command, finish, of_type, read_jsonl, setup,
    transcripts, wait_for_file,
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

/// Checks every transcript (the sessions' and their children's): each line
/// parses and nothing was lost. Returns how many there were.
fn assert_transcripts_whole(env: &TestEnv) -> usize {
    let mut count = 0;
    let mut dirs = vec![env.home().join("sessions")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|ext| ext == "jsonl") {
                assert_nothing_lost(&read_jsonl(&path));
                count += 1;
            }
        }
    }
    count
}

/// Collects a spawned alcove's output on a thread, so a long run never
/// blocks on a full pipe while the test watches it.
fn in_background(child: Child) -> (u32, JoinHandle<Outcome>) {
    (child.id(), std::thread::spawn(move || finish(child)))
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
    crate::support::results_but_loads(requests.last().unwrap())
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
        &[
            "--permission-mode",
            "acceptEdits",
            "--json",
            "burst then work",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let events = out.events();
    let reasons: Vec<&str> = of_type(&events, "model_retry")
        .iter()
        .map(|retry| retry["reason"].as_str().unwrap())
        .collect();
    assert_eq!(reasons.len(), 6, "{reasons:?}");
    assert!(
        reasons[0].contains("502") && reasons[1].contains("529"),
        "{reasons:?}"
    );
    assert_eq!(
        of_type(&events, "assistant_text").last().unwrap()["text"],
        "survived"
    );
    assert_nothing_lost(&events);

    // Five failures in a row exhaust the four retries: exit 1, the work done
    // before the burst is kept and recorded.
    let out = exec(
        &env,
        &server,
        &[
            "--permission-mode",
            "acceptEdits",
            "--json",
            "endless burst",
        ],
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_eq!(server.requests_for("endless burst").len(), 6);
    let end = out.events().last().cloned().unwrap();
    assert_eq!(end["status"], "failed");
    assert!(end["error"].as_str().unwrap().contains("502"), "{end}");
    assert!(out.stderr.contains("502"), "{}", out.stderr);
    assert_eq!(assert_transcripts_whole(&env), 2);
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
    let line = |n: usize| format!("{n:07} the quick brown fox jumps over the lazy dog\n");
    let text: String = (0..100_000).map(line).collect();
    assert!(text.len() > 5_000_000);
    let content: String = text[..2_000_000].to_owned();
    // Many small deltas, as real services send them (about 9 000 events).
    let chatty: String = (0..2_000).map(line).collect();
    let (env, server) = setup(
        Script::new()
            .conversation(
                "say a lot",
                vec![
                    // 4 KB pieces keep the debug-build run short; the size is the point.
                    Step::tool_call("Write", json!({"file_path": "big.txt", "content": content}))
                        .piece_chars(4096),
                    Step::text(&text).piece_chars(4096),
                ],
            )
            .conversation("chatter", vec![Step::text(&chatty)]),
    );
    for (prompt, expected) in [("say a lot", &text), ("chatter", &chatty)] {
        let out = exec(
            &env,
            &server,
            &["--permission-mode", "acceptEdits", "--json", prompt],
        );
        assert_eq!(out.code, 0, "{}", out.stderr);
        let events = out.events();
        assert!(of_type(&events, "model_retry").is_empty());
        let streamed: String = of_type(&events, "text_delta")
            .iter()
            .map(|delta| delta["text"].as_str().unwrap())
            .collect();
        assert!(&streamed == expected, "the deltas lost text");
        let last = of_type(&events, "assistant_text").last().unwrap()["text"].clone();
        assert!(
            last.as_str() == Some(expected.as_str()),
            "the answer lost text"
        );
        assert_nothing_lost(&events);
    }
    assert_eq!(workspace_files(&env), ["big.txt"]);
    assert!(
        env.read_file("big.txt") == content,
        "the file was not written whole"
    );
    assert_eq!(assert_transcripts_whole(&env), 2);
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
        &[
            "--permission-mode",
            "acceptEdits",
            "--json",
            "delegate to the unlucky",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        server.requests_for("UNLUCKY child").len(),
        5,
        "1 try + 4 retries"
    );
    let results = server.requests_for("delegate to the unlucky")[1].tool_results();
    assert!(
        results[0].2 && results[0].1.starts_with("Agent failed: "),
        "{results:?}"
    );
    assert!(results[0].1.contains("529"), "{results:?}");
    let events = out.events();
    assert_eq!(of_type(&events, "agent_ended")[0]["ok"], false);
    assert_nothing_lost(&events);
    assert_eq!(
        assert_transcripts_whole(&env),
        2,
        "the session's and the child's"
    );
    assert_eq!(workspace_files(&env), ["after.txt"]);
}
