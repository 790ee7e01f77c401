//! When things go wrong: bad tool calls from the model, HTTP errors, broken
//! and stalled streams, and signals. Every case checks that nothing was lost.

use std::time::{Duration, Instant};

use alcove_testkit::{Block, Script, Step};
use serde_json::json;

use crate::support::{
    assert_nothing_lost, exec, exec_command, finish, of_type, process_alive, setup, transcript,
    wait_for_file,
};

#[test]
fn unknown_tools_bad_json_and_schema_mismatches_become_error_results() {
    let (env, server) = setup(Script::new().conversation(
        "bad calls",
        vec![
            Step::reply(vec![
                Block::tool_call("Teleport", json!({"to": "mars"})),
                // Beyond repair: a value is missing, not only closers.
                Block::raw_tool_call("Read", "{\"file_path\": \"a.txt\", \"limit\":"),
                Block::tool_call("Read", json!({"path": "a.txt"})),
            ])
            // A model inventing a tool's name.
            .unoffered(),
            Step::text("recovered"),
        ],
    ));
    let out = exec(&env, &server, &["--json", "bad calls"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout.lines().count(), out.events().len());
    let results = server.requests()[1].tool_results();
    assert_eq!(results.len(), 3);
    assert!(results.iter().all(|(_, _, is_error)| *is_error));
    assert!(
        results[0].1.contains("Unknown tool `Teleport`")
            && results[0].1.contains("Read, Glob, Grep"),
        "{}",
        results[0].1
    );
    assert!(results[1].1.contains("not valid JSON"), "{}", results[1].1);
    assert!(results[2].1.contains("file_path"), "{}", results[2].1);
    assert_nothing_lost(&out.events());
}

#[test]
fn server_errors_are_retried_with_backoff() {
    let (env, server) = setup(Script::new().conversation(
        "flaky",
        vec![
            Step::http_error(500, "boom"),
            Step::overloaded(),
            Step::http_error(503, "busy"),
            Step::text("finally"),
        ],
    ));
    let out = exec(&env, &server, &["--json", "flaky"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let events = out.events();
    let retries = of_type(&events, "model_retry");
    assert_eq!(retries.len(), 3);
    assert!(retries[0]["reason"].as_str().unwrap().contains("500"));
    assert_eq!(server.requests().len(), 4);
}

#[test]
fn retry_after_is_honoured() {
    let (env, server) = setup(Script::new().conversation(
        "rate limited",
        vec![Step::rate_limited(1), Step::text("after waiting")],
    ));
    let started = Instant::now();
    let out = exec(&env, &server, &["--json", "rate limited"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "waited {:?}",
        started.elapsed()
    );
    let events = out.events();
    assert_eq!(of_type(&events, "model_retry")[0]["delay_ms"], 1000);
}

#[test]
fn a_client_error_fails_at_once_with_exit_1() {
    let (env, server) = setup(Script::new().conversation(
        "rejected",
        vec![Step::http_error(400, "{\"error\":\"bad request body\"}")],
    ));
    let out = exec(&env, &server, &["--json", "rejected"]);
    assert_eq!(out.code, 1);
    assert_eq!(server.requests().len(), 1, "a 400 is not retried");
    let events = out.events();
    let end = events.last().unwrap();
    assert_eq!(end["status"], "failed");
    assert!(
        end["error"].as_str().unwrap().contains("bad request body"),
        "{end}"
    );
    assert!(out.stderr.contains("400"), "{}", out.stderr);
}

#[test]
fn a_stream_broken_mid_way_is_restarted_once_and_never_truncated() {
    let (env, server) = setup(Script::new().conversation(
        "broken stream",
        vec![
            Step::drop_mid_stream("partial ans"),
            Step::text("the whole answer"),
        ],
    ));
    let out = exec(&env, &server, &["--json", "broken stream"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let events = out.events();
    assert_eq!(of_type(&events, "stream_restarted").len(), 1);
    assert_eq!(
        of_type(&events, "assistant_text")[0]["text"],
        "the whole answer"
    );
}

#[test]
fn a_stream_broken_twice_fails_instead_of_truncating() {
    let (env, server) = setup(Script::new().conversation(
        "twice broken",
        vec![
            Step::drop_mid_stream("part one"),
            Step::drop_mid_stream("part two"),
        ],
    ));
    let out = exec(&env, &server, &["--json", "twice broken"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        of_type(&out.events(), "assistant_text").is_empty(),
        "no partial answer is passed off as complete"
    );
}

#[test]
fn malformed_sse_and_error_events_are_retried_then_reported() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "malformed",
                vec![Step::malformed_sse(), Step::text("clean now")],
            )
            .conversation(
                "error event",
                vec![
                    Step::error_event("overloaded_error", "Overloaded"),
                    Step::text("recovered"),
                ],
            ),
    );
    let out = exec(&env, &server, &["malformed"]);
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "clean now\n"),
        "{}",
        out.stderr
    );
    let out = exec(&env, &server, &["error event"]);
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "recovered\n"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_stalled_stream_hits_the_idle_timeout() {
    let (env, server) = setup(Script::new().conversation(
        "stalls",
        vec![
            Step::stall_after("thinking"),
            Step::stall_after("still thinking"),
        ],
    ));
    std::fs::write(
        env.home().join("config.toml"),
        "[retry]\nbase_delay_ms = 10\nidle_timeout_ms = 300\n",
    )
    .unwrap();
    let out = exec(&env, &server, &["--json", "stalls"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let end = out.events().last().cloned().unwrap();
    assert!(end["error"].as_str().unwrap().contains("idle"), "{end}");
}

/// Starts a run whose Bash call sleeps in the background and records its pid,
/// waits until the sleep runs, then sends `signal`.
fn interrupt_a_running_command(
    signal: nix::sys::signal::Signal,
) -> (crate::support::Outcome, u32, Vec<serde_json::Value>) {
    let (env, server) = setup(Script::new().conversation(
        "long command",
        vec![Step::tool_call(
            "Bash",
            json!({"command": "sleep 30 & echo $! > sleeper.pid; wait"}),
        )],
    ));
    let child = exec_command(
        &env,
        &server,
        &[
            "--permission-mode",
            "bypassPermissions",
            "--json",
            "long command",
        ],
    )
    .spawn()
    .unwrap();
    let pid_file = env.path("sleeper.pid");
    wait_for_file(&pid_file);
    std::thread::sleep(Duration::from_millis(100));
    let sleeper: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(process_alive(sleeper));
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), signal).unwrap();
    let out = finish(child);
    let lines = transcript(&env);
    (out, sleeper, lines)
}

#[test]
fn sigint_kills_the_command_group_pairs_every_call_and_exits_130() {
    let (out, sleeper, lines) = interrupt_a_running_command(nix::sys::signal::Signal::SIGINT);
    assert_eq!(out.code, 130, "{}", out.stderr);
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        !process_alive(sleeper),
        "the background sleep was left running"
    );
    assert_nothing_lost(&lines);
    assert_eq!(lines.last().unwrap()["status"], "aborted");
    let finished = of_type(&lines, "tool_call_finished");
    assert!(finished[0]["is_error"].as_bool().unwrap());
}

#[test]
fn sigterm_exits_143_with_nothing_left_behind() {
    let (out, sleeper, lines) = interrupt_a_running_command(nix::sys::signal::Signal::SIGTERM);
    assert_eq!(out.code, 143, "{}", out.stderr);
    std::thread::sleep(Duration::from_millis(200));
    assert!(!process_alive(sleeper));
    assert_nothing_lost(&lines);
}
