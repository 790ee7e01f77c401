//! The process runner (`agents.command`): commands in their own process
//! group, cleaned up when closed, and an alcove child process as a remote
//! subagent that remembers its conversation across `send_input`.

use super::*;

#[test]
fn the_process_runner_runs_commands_in_their_own_group_and_cleans_up() {
    let (env, server) = setup(Script::new().conversation(
        "parent of processes",
        vec![
            Step::reply(vec![
                alcove_testkit::Block::tool_call(
                    "spawn_agent",
                    json!({"message": "echo:hello runner"}),
                ),
                alcove_testkit::Block::tool_call("spawn_agent", json!({"message": "fail"})),
                alcove_testkit::Block::tool_call("spawn_agent", json!({"message": "hang"})),
            ]),
            wait_for(&["agent-1"], 10_000),
            wait_for(&["agent-2"], 10_000),
            Step::tool_call("close_agent", json!({"id": "agent-3"})),
            Step::text("done"),
        ],
    ));
    env.write_file("runner.sh", FAKE_RUNNER);
    let child = exec_command(
        &env,
        &server,
        &[
            "-c",
            "agents.wait_min_ms=50",
            // Starting a runner's command is gated like Bash.
            "--allow",
            "Agent(general-purpose)",
            "--json",
            "parent of processes",
        ],
    )
    .env("ALCOVE_SUBAGENT_COMMAND", "sh runner.sh")
    .spawn()
    .unwrap();
    wait_for_file(&env.path("runner-child.pid"));
    let out = finish(child);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let results = parent_results(&server, "parent of processes");
    assert_eq!(
        results[3].0["details"]["agent-1"]["last_output"],
        "hello runner"
    );
    assert_eq!(results[4].0["status"]["agent-2"], "errored");
    let failed = &results[4].0["details"]["agent-2"];
    assert_eq!(failed["last_error"], "submission failed with exit code 2");
    assert!(
        failed["last_output"]
            .as_str()
            .unwrap()
            .contains("stderr:\nforced failure")
    );
    std::thread::sleep(Duration::from_millis(300));
    let sleeper: u32 = std::fs::read_to_string(env.path("runner-child.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        !process_alive(sleeper),
        "closing the agent left its runner's process behind"
    );
}

#[test]
fn an_alcove_child_process_is_a_remote_subagent_with_memory() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "parent goes remote",
                vec![
                    spawn("REMOTE child: hello"),
                    wait_for(&["agent-1"], 20_000),
                    Step::tool_call(
                        "send_input",
                        json!({"id": "agent-1", "message": "and again"}),
                    ),
                    wait_for(&["agent-1"], 20_000),
                    Step::text("done"),
                ],
            )
            .conversation(
                "REMOTE child",
                vec![Step::text("remote hello"), Step::text("remote again")],
            ),
    );
    // The "remote": a wrapper script, as `ssh host alcove exec --json -` would be.
    env.write_file(
        "remote.sh",
        &format!(
            "#!/bin/sh\nexec '{}' exec --json - \"$@\"\n",
            crate::support::alcove().display()
        ),
    );
    let out = finish(
        exec_command(
            &env,
            &server,
            &[
                "-c",
                "agents.wait_min_ms=50",
                "--allow",
                "Agent(general-purpose)",
                "--json",
                "parent goes remote",
            ],
        )
        .env("ALCOVE_SUBAGENT_COMMAND", "sh remote.sh")
        .spawn()
        .unwrap(),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let results = parent_results(&server, "parent goes remote");
    assert_eq!(
        results[1].0["details"]["agent-1"]["last_output"],
        "remote hello"
    );
    assert_eq!(
        results[3].0["details"]["agent-1"]["last_output"],
        "remote again"
    );
    let second = &server.requests_for("REMOTE child")[1];
    assert_eq!(
        second.message_count(),
        3,
        "the remote child resumed its own conversation"
    );
    let events = out.events();
    assert!(
        events
            .iter()
            .any(|event| event["agent"] == "main/agent-1" && event["type"] == "assistant_text"),
        "the remote child's events are re-tagged under its path"
    );
}
