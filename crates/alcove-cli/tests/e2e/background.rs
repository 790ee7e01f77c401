//! Background commands (issue 37, point 2): `Bash {run_in_background}`,
//! `BashOutput` and `KillShell` through the real binary, in the real
//! sandbox, and the end of every command they start: after `KillShell`,
//! after the child that started one ends, after SIGINT, at the session's
//! end — checked by pid and process group in /proc.

use std::time::{Duration, Instant};

use alcove_testkit::{Script, Step};
use serde_json::{Value, json};

use crate::support::{
    assert_nothing_lost, exec, exec_command, finish, load, of_type, process_alive,
    results_but_loads, setup, transcript, wait_for_file,
};
use crate::tui::Pane;

/// A background `Bash` call of `command`.
fn background(command: &str) -> Step {
    // The timeout would end a command run in the foreground (as it was
    // before background commands): a test of them then fails fast.
    Step::tool_call(
        "Bash",
        json!({"command": command, "run_in_background": true, "timeout": 3000}),
    )
}

fn bash(command: &str) -> Step {
    Step::tool_call("Bash", json!({ "command": command }))
}

/// Prints GONE when the process whose pid is in `file` is gone (or a
/// zombie), ALIVE otherwise: run as a later command of the same session.
fn check_gone(file: &str) -> Step {
    bash(&format!(
        "pid=$(cat {file}); if [ -e /proc/$pid ] && ! grep -q ') Z' /proc/$pid/stat; \
         then echo ALIVE; else echo GONE; fi"
    ))
}

/// The pid a command wrote into `path`.
fn read_pid(path: &std::path::Path) -> u32 {
    std::fs::read_to_string(path)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// The live (not zombie) processes of process group `group`.
fn group_members(group: u32) -> Vec<u32> {
    let mut members = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let fields: Vec<&str> = stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect();
        if fields.first() != Some(&"Z") && fields.get(2) == Some(&group.to_string().as_str()) {
            members.push(pid);
        }
    }
    members
}

/// Waits (at most 10 s) until `pid` and its group are gone.
fn assert_gone(pid: u32, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while process_alive(pid) || !group_members(pid).is_empty() {
        assert!(
            Instant::now() < deadline,
            "{what}: {pid} (group {:?}) is still running",
            group_members(pid)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn with_type<'a>(events: &'a [Value], kind: &str, agent: &str) -> Vec<&'a Value> {
    of_type(events, kind)
        .into_iter()
        .filter(|event| event["agent"] == agent)
        .collect()
}

#[test]
fn a_background_server_is_reached_by_a_later_command_read_and_killed() {
    let (env, server) = setup(Script::new().conversation(
        "serve and fetch",
        vec![
            background(
                "echo $$ > server.pid; exec python3 -u -m http.server 8000 --bind 127.0.0.1",
            ),
            bash(
                "for i in $(seq 100); do curl -sf http://127.0.0.1:8000/hello.txt && exit 0; \
                 sleep 0.1; done; exit 1",
            ),
            // BashOutput and KillShell are deferred: loaded before their first call.
            load("BashOutput,KillShell"),
            Step::tool_call("BashOutput", json!({"bash_id": "bash_1", "filter": "GET"})),
            Step::tool_call("KillShell", json!({"shell_id": "bash_1"})),
            check_gone("server.pid"),
            Step::tool_call("BashOutput", json!({"bash_id": "bash_1"})),
            Step::text("done"),
        ],
    ));
    env.write_file("hello.txt", "HELLO-FROM-THE-SERVER\n");
    let out = exec(
        &env,
        &server,
        &[
            "--json",
            "-c",
            "sandbox.allow_loopback=true",
            "serve and fetch",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let results = results_but_loads(server.requests().last().unwrap());
    assert_eq!(results.len(), 6, "{results:?}");
    let (started, fetched, output, killed, check, after) = (
        &results[0],
        &results[1],
        &results[2],
        &results[3],
        &results[4],
        &results[5],
    );
    assert!(
        !started.2 && started.1.contains("running in background with ID: bash_1"),
        "{started:?}"
    );
    assert!(
        !fetched.2 && fetched.1.contains("HELLO-FROM-THE-SERVER"),
        "the later command reached the server: {fetched:?}"
    );
    assert!(!output.2 && output.1.contains("running"), "{output:?}");
    assert!(output.1.contains("GET /hello.txt"), "{output:?}");
    assert!(
        !output.1.contains("Serving HTTP"),
        "the filter keeps matching lines only: {output:?}"
    );
    assert!(
        !killed.2 && killed.1.contains("killed (KillShell)"),
        "{killed:?}"
    );
    assert_eq!(check.1.trim(), "GONE", "after KillShell: {check:?}");
    assert!(after.1.contains("killed (KillShell)"), "{after:?}");

    let pid = read_pid(&env.path("server.pid"));
    assert_gone(pid, "the server after KillShell");
    let events = out.events();
    let begun = with_type(&events, "background_started", "main");
    assert_eq!(begun.len(), 1, "{begun:?}");
    assert_eq!(begun[0]["id"], "bash_1");
    assert_eq!(begun[0]["pid"], pid);
    let ended = with_type(&events, "background_ended", "main");
    assert_eq!(ended.len(), 1, "{ended:?}");
    assert_eq!(ended[0]["killed"], true);
}

#[test]
fn a_childs_background_command_ends_with_the_child() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "CHILD: start a watcher",
                vec![
                    background("echo $$ > child.pid; exec sleep 300"),
                    // The watcher has started (a loaded machine may not have
                    // run it yet when the child ends).
                    Step::tool_call(
                        "Bash",
                        json!({"command": "for i in $(seq 100); do [ -s child.pid ] && break; sleep 0.1; done"}),
                    ),
                    Step::text("the watcher runs"),
                ],
            )
            .conversation(
                "delegate a watcher",
                vec![
                    Step::tool_call(
                        "Agent",
                        json!({"description": "watcher", "prompt": "CHILD: start a watcher"}),
                    ),
                    check_gone("child.pid"),
                    Step::text("done"),
                ],
            ),
    );
    let out = exec(&env, &server, &["--json", "delegate a watcher"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let child = server.requests_for("CHILD: start a watcher");
    let started = &child.last().unwrap().tool_results()[0];
    assert!(
        started.1.contains("running in background with ID"),
        "{started:?}"
    );
    let results = server
        .requests_for("delegate a watcher")
        .last()
        .unwrap()
        .tool_results();
    assert_eq!(
        results[1].1.trim(),
        "GONE",
        "the child's command outlived it: {results:?}"
    );
    assert_gone(read_pid(&env.path("child.pid")), "the child's command");
    let events = out.events();
    let ended = with_type(&events, "background_ended", "main/agent-1");
    assert_eq!(ended.len(), 1, "{events:?}");
    assert_eq!(ended[0]["killed"], true);
    // Its end comes before the child's.
    let position = |kind: &str| events.iter().position(|event| event["type"] == kind);
    assert!(position("background_ended") < position("agent_ended"));
}

#[test]
fn sigint_ends_the_background_commands() {
    let (env, server) = setup(Script::new().conversation(
        "serve then wait",
        vec![
            background("echo $$ > server.pid; exec sleep 300"),
            bash("touch waiting; sleep 300"),
            Step::text("never"),
        ],
    ));
    let child = exec_command(&env, &server, &["serve then wait"])
        .spawn()
        .unwrap();
    wait_for_file(&env.path("waiting"));
    let pid = read_pid(&env.path("server.pid"));
    assert!(process_alive(pid), "the background command runs");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let out = finish(child);
    assert_eq!(out.code, 130, "{}", out.stderr);
    assert_gone(pid, "the background command after SIGINT");
    let events = transcript(&env);
    assert_nothing_lost(&events);
    assert_eq!(with_type(&events, "background_started", "main").len(), 1);
    let ended = with_type(&events, "background_ended", "main");
    assert_eq!(ended.len(), 1, "{ended:?}");
    assert_eq!(ended[0]["killed"], true);
}

#[test]
fn the_sessions_end_ends_its_background_commands_and_the_limit_holds() {
    let (env, server) = setup(Script::new().conversation(
        "start two",
        vec![
            background("echo $$ > first.pid; exec sleep 300"),
            background("echo $$ > second.pid; exec sleep 300"),
            Step::text("done"),
        ],
    ));
    let out = exec(
        &env,
        &server,
        &["--json", "-c", "background.max_running=1", "start two"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let results = server.requests().last().unwrap().tool_results();
    assert!(
        results[0]
            .1
            .contains("running in background with ID: bash_1"),
        "{results:?}"
    );
    assert!(
        results[1].2 && results[1].1.contains("max_running") && results[1].1.contains("bash_1"),
        "the second was refused: {results:?}"
    );
    assert!(
        !env.path("second.pid").exists(),
        "a command over the limit never starts"
    );
    assert_gone(read_pid(&env.path("first.pid")), "at the session's end");
    let events = out.events();
    let position = |kind: &str| events.iter().position(|event| event["type"] == kind);
    assert!(position("background_ended").is_some(), "{events:?}");
    assert!(position("background_ended") < position("session_ended"));
}

#[test]
fn the_ui_lists_background_commands_and_esc_in_a_later_turn_ends_them() {
    let (env, server) = setup(Script::new().conversation(
        "start a server",
        vec![
            background("echo $$ > server.pid; exec python3 -m http.server 8000 --bind 127.0.0.1"),
            Step::text("SERVER-STARTED"),
            bash("touch waiting; sleep 300"),
            Step::text("AFTER-THE-INTERRUPT"),
        ],
    ));
    let pane = Pane::start(&env, &server, &["--permission-mode", "bypassPermissions"]);
    pane.wait_for_screen("Ask anything");
    pane.prompt("start a server");
    pane.wait_for("SERVER-STARTED");
    let screen = pane.wait_for_screen("background: 1 running");
    assert!(screen.contains("python3 -m http.server"), "{screen}");
    pane.prompt("/status");
    let status = pane.wait_for("bash_1 echo");
    assert!(status.contains("1 running"), "{status}");
    let pid = read_pid(&env.path("server.pid"));
    assert!(process_alive(pid), "it outlives the turn that started it");
    // An interrupt of a later turn ends it too.
    pane.prompt("now wait");
    wait_for_file(&env.path("waiting"));
    pane.key("Escape");
    pane.wait_for("Interrupted");
    assert_gone(pid, "the server after Esc");
    let deadline = Instant::now() + Duration::from_secs(10);
    while pane.screen().contains("background: 1 running") {
        assert!(Instant::now() < deadline, "the footer still lists it");
        std::thread::sleep(Duration::from_millis(50));
    }
    pane.prompt("/exit");
    assert_eq!(pane.wait_exit(), 0);
}
