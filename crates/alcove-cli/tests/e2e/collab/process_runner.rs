//! The process runner (`agents.command`): commands in their own process
//! group, cleaned up when closed, and an alcove child process as a remote
//! subagent that remembers its conversation across `send_input`.

use super::*;

/// The "remote": a wrapper script, as `ssh host alcove exec --json -`
/// would be.
fn write_remote(env: &TestEnv) {
    env.write_file(
        "remote.sh",
        &format!(
            "#!/bin/sh\nexec '{}' exec --json - \"$@\"\n",
            crate::support::alcove().display()
        ),
    );
}

#[test]
fn the_process_runner_runs_commands_in_their_own_group_and_cleans_up() {
    let (env, server) = setup(Script::new().conversation(
        "parent of processes",
        vec![
            crate::support::load_deferred(),
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
    let child = with_runner(&env, &server, "runner.sh", &[], "parent of processes");
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
                    crate::support::load_deferred(),
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
    write_remote(&env);
    let out = finish(with_runner(
        &env,
        &server,
        "remote.sh",
        &[],
        "parent goes remote",
    ));
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

#[test]
fn a_remote_alcove_child_takes_its_turn_share_as_a_ceiling_and_is_reported_cut_short() {
    // The child would make seven requests; under agents.max_turns = 2 the
    // charter it is given stops it at two.
    let mut steps: Vec<Step> = (0..6)
        .map(|_| Step::tool_call("Glob", json!({"pattern": "*.sh"})))
        .collect();
    steps.push(Step::text("remote done"));
    let (env, server) = setup(
        Script::new()
            .conversation(
                "parent shares turns",
                vec![
                    crate::support::load_deferred(),
                    spawn("REMOTE child: look around"),
                    wait_for(&["agent-1"], 30_000),
                    Step::text("done"),
                ],
            )
            .conversation("REMOTE child", steps),
    );
    write_remote(&env);
    let out = finish(with_runner(
        &env,
        &server,
        "remote.sh",
        &["-c", "agents.max_turns=2"],
        "parent shares turns",
    ));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(server.requests_for("REMOTE child").len(), 2);
    let results = parent_results(&server, "parent shares turns");
    let details = &results[1].0["details"]["agent-1"];
    assert_eq!(
        results[1].0["status"]["agent-1"], "errored",
        "{}",
        results[1].1
    );
    assert!(
        details["last_error"].as_str().unwrap().contains("turn cap"),
        "{details}"
    );
    let events = out.events();
    let ended = of_type(&events, "agent_ended");
    assert_eq!(ended.len(), 1, "one end record");
    assert_eq!(ended[0]["status"], "max_turns", "{}", ended[0]);
    assert_eq!(ended[0]["turns"], 2, "{}", ended[0]);
}

/// A command that speaks alcove's events but ignores its charter: it
/// reports a turn (and 1,000 tokens) every 200 ms, writing `turn-N` first.
const GREEDY_RUNNER: &str = r#"#!/bin/sh
cat > /dev/null
n=1
while [ $n -le 10 ]; do
  touch "turn-$n"
  echo "{\"agent\":\"main\",\"type\":\"turn_started\",\"turn\":$n}"
  echo "{\"agent\":\"main\",\"type\":\"usage\",\"usage\":{\"input_tokens\":900,\"output_tokens\":100}}"
  sleep 0.2
  n=$((n + 1))
done
echo '{"agent":"main","type":"assistant_text","text":"greedy done"}'
"#;

#[test]
fn the_parent_kills_a_command_past_its_turn_or_token_share_and_charges_the_tree() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "parent meters turns",
                vec![
                    crate::support::load_deferred(),
                    spawn("greedy"),
                    wait_for(&["agent-1"], 20_000),
                    Step::text("done"),
                ],
            )
            .conversation(
                "parent meters tokens",
                vec![
                    crate::support::load_deferred(),
                    spawn("greedy"),
                    wait_for(&["agent-1"], 20_000),
                    Step::text("done"),
                ],
            ),
    );
    env.write_file("greedy.sh", GREEDY_RUNNER);
    let run = |prompt: &str, limit: &str| {
        finish(with_runner(
            &env,
            &server,
            "greedy.sh",
            &["-c", limit],
            prompt,
        ))
    };
    let out = run("parent meters turns", "agents.max_turns=2");
    assert_eq!(out.code, 0, "{}", out.stderr);
    let results = parent_results(&server, "parent meters turns");
    assert_eq!(
        results[1].0["status"]["agent-1"], "errored",
        "{}",
        results[1].1
    );
    let events = out.events();
    let ended = of_type(&events, "agent_ended");
    assert_eq!(ended[0]["status"], "max_turns", "{}", ended[0]);
    assert!(env.path("turn-3").exists());
    std::thread::sleep(Duration::from_millis(600));
    assert!(
        !env.path("turn-5").exists(),
        "the command ran past its share"
    );

    for n in 1..=10 {
        let _ = std::fs::remove_file(env.path(&format!("turn-{n}")));
    }
    let out = run("parent meters tokens", "agents.max_tokens=2500");
    assert_eq!(out.code, 0, "{}", out.stderr);
    let results = parent_results(&server, "parent meters tokens");
    let details = &results[1].0["details"]["agent-1"];
    assert!(
        details["last_error"]
            .as_str()
            .unwrap()
            .contains("tokens over 2500"),
        "{details}"
    );
    let events = out.events();
    let ended = of_type(&events, "agent_ended");
    assert_eq!(ended[0]["status"], "budget", "{}", ended[0]);
    // What its events reported is what it used: three requests' worth.
    assert_eq!(ended[0]["usage"]["input_tokens"], 2700, "{}", ended[0]);
    std::thread::sleep(Duration::from_millis(600));
    assert!(
        !env.path("turn-5").exists(),
        "the command ran past its share"
    );
}
