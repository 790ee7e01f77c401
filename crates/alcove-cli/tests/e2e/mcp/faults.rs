//! Servers that misbehave: one crashes mid-call (error result, restarted on
//! the next use), one hangs (the call ends at `tool_timeout_sec` and the
//! server is sent `notifications/cancelled`), and SIGINT mid-call leaves no
//! server process (the process group goes, children of the server included).

use std::time::{Duration, Instant};

use alcove_testkit::{FakeServer, Script, Step, TestEnv};
use serde_json::{Value, json};

use super::{BYPASS, assert_all_dead, pids, server_script, test_env, write_mcp_json};
use crate::support::{exec, exec_command, finish};

/// The faulty server, recording its pids and what it saw under the home.
fn faulty(env: &TestEnv, extra: Value) -> Value {
    let mut server = json!({
        "command": "python3",
        "args": [server_script("faulty.py"), "serve"],
        "env": {
            "FAULTY_PIDS": env.home().join("faulty.pids"),
            "FAULTY_LOG": env.home().join("faulty.log"),
        },
    });
    if let (Value::Object(server), Value::Object(extra)) = (&mut server, extra) {
        server.extend(extra);
    }
    server
}

fn seen(env: &TestEnv) -> String {
    std::fs::read_to_string(env.home().join("faulty.log")).unwrap_or_default()
}

#[test]
fn a_crash_mid_call_is_an_error_result_and_the_next_call_restarts_the_server() {
    let env = test_env();
    write_mcp_json(&env, json!({"faulty": faulty(&env, json!({}))}));
    let server = FakeServer::start(Script::new().conversation(
        "crash it",
        vec![
            Step::tool_call("mcp__faulty__crash", json!({})),
            Step::tool_call("mcp__faulty__ok", json!({})),
            Step::text("recovered"),
        ],
    ));
    let out = exec(&env, &server, &[BYPASS[0], BYPASS[1], "crash it"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let requests = server.requests_for("crash it");
    let (_, crashed, is_error) = requests[1].tool_results().remove(0);
    assert!(is_error, "{crashed}");
    assert!(
        crashed.contains("exited or disconnected during the call"),
        "{crashed}"
    );
    assert!(crashed.contains("faulty: crashing on purpose"), "{crashed}");
    let started = pids(&env.home().join("faulty.pids"));
    assert_eq!(started.len(), 2, "one restart: {started:?}");
    let (_, ok, is_error) = requests[2].tool_results().remove(1);
    assert_eq!(
        (ok, is_error),
        (
            super::framed("faulty", &format!("ok from {}", started[1])),
            false
        )
    );
    assert_all_dead(&started);
}

#[test]
fn a_hung_call_ends_at_the_tool_timeout_and_is_cancelled_on_the_server() {
    let env = test_env();
    write_mcp_json(&env, json!({"faulty": faulty(&env, json!({}))}));
    // The TOML layer sets the timeout of the server `.mcp.json` defined.
    env.write_file(
        ".alcove/config.toml",
        "[mcp_servers.faulty]\ntool_timeout_sec = 1\n",
    );
    let server = FakeServer::start(Script::new().conversation(
        "hang it",
        vec![
            Step::tool_call("mcp__faulty__hang", json!({})),
            Step::tool_call("mcp__faulty__ok", json!({})),
            Step::text("moved on"),
        ],
    ));
    let started_at = Instant::now();
    let out = exec(&env, &server, &[BYPASS[0], BYPASS[1], "hang it"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(started_at.elapsed() < Duration::from_secs(30));
    let requests = server.requests_for("hang it");
    let (_, hung, is_error) = requests[1].tool_results().remove(0);
    assert!(is_error);
    assert!(
        hung.contains("did not answer within 1s (tool_timeout_sec)"),
        "{hung}"
    );
    assert!(
        seen(&env).contains("cancelled"),
        "no notifications/cancelled: {}",
        seen(&env)
    );
    // The same process answers the next call.
    let started = pids(&env.home().join("faulty.pids"));
    assert_eq!(started.len(), 1, "{started:?}");
    let (_, ok, _) = requests[2].tool_results().remove(1);
    assert_eq!(
        ok,
        super::framed("faulty", &format!("ok from {}", started[0]))
    );
    assert_all_dead(&started);
}

#[test]
fn sigint_mid_call_cancels_it_and_leaves_no_server_process() {
    let env = test_env();
    let pid_file = env.home().join("faulty.pids");
    // A background process in the server's group stands for what `npx` and
    // shells leave behind: it must go too.
    write_mcp_json(
        &env,
        json!({"faulty": faulty(&env, json!({
            "command": "sh",
            "args": ["-c", format!("sleep 300 & echo $! >> {}; exec python3 {} serve", pid_file.display(), server_script("faulty.py"))],
        }))}),
    );
    let server = FakeServer::start(Script::new().conversation(
        "hang forever",
        vec![
            Step::tool_call("mcp__faulty__hang", json!({})),
            Step::text("never"),
        ],
    ));
    let child = exec_command(&env, &server, &[BYPASS[0], BYPASS[1], "hang forever"])
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !seen(&env).contains("call hang") {
        assert!(
            Instant::now() < deadline,
            "the call never reached the server"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let out = finish(child);
    assert_eq!(out.code, 130, "{}", out.stderr);
    assert!(
        seen(&env).contains("cancelled"),
        "the call was not cancelled: {}",
        seen(&env)
    );
    let started = pids(&pid_file);
    assert_eq!(started.len(), 2, "the sleep and the server: {started:?}");
    assert_all_dead(&started);
}

#[test]
fn a_server_that_never_answers_delays_the_first_request_only_its_startup_timeout() {
    let env = test_env();
    write_mcp_json(
        &env,
        json!({"mute": faulty(&env, json!({
            "args": [server_script("faulty.py"), "mute"],
            "startup_timeout_sec": 1,
        }))}),
    );
    let server =
        FakeServer::start(Script::new().conversation("go on", vec![Step::text("went on")]));
    let started_at = Instant::now();
    let out = exec(&env, &server, &[BYPASS[0], BYPASS[1], "--json", "go on"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let first_request = server.requests_for("go on")[0].received_at;
    assert!(
        first_request.duration_since(started_at) < Duration::from_secs(8),
        "the first request waited {:?}",
        first_request.duration_since(started_at)
    );
    assert!(
        out.stdout.contains("MCP server `mute` failed to start")
            && out
                .stdout
                .contains("did not start within 1s (startup_timeout_sec)"),
        "{}",
        out.stdout
    );
    assert_all_dead(&pids(&env.home().join("faulty.pids")));
}

#[test]
fn restarts_after_crashes_are_bounded() {
    let env = test_env();
    write_mcp_json(&env, json!({"faulty": faulty(&env, json!({}))}));
    let mut steps: Vec<Step> = (0..4)
        .map(|_| Step::tool_call("mcp__faulty__crash", json!({})))
        .collect();
    steps.push(Step::tool_call("mcp__faulty__ok", json!({})));
    steps.push(Step::text("gave up"));
    let server = FakeServer::start(Script::new().conversation("crash it again", steps));
    let out = exec(&env, &server, &[BYPASS[0], BYPASS[1], "crash it again"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let results = server.requests_for("crash it again")[5].tool_results();
    assert!(results[..4].iter().all(|(_, content, is_error)| *is_error
        && content.contains("exited or disconnected during the call")));
    let (_, last, is_error) = &results[4];
    assert!(is_error);
    assert!(
        last.contains("restarted 3 times; it stays down this session"),
        "{last}"
    );
    let started = pids(&env.home().join("faulty.pids"));
    assert_eq!(
        started.len(),
        4,
        "the first start and three restarts: {started:?}"
    );
    assert_all_dead(&started);
}
