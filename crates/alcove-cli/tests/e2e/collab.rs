//! The asynchronous face of delegation: spawn_agent / send_input / wait /
//! close_agent / resume_agent (seed 001, the Memo test list rewritten for
//! alcove), both runners, hangs and cleanup.

use std::time::Duration;

use alcove_testkit::{FakeServer, Script, Step, TestEnv};
use serde_json::{Value, json};

use crate::support::{
    Outcome, assert_nothing_lost, exec_command, finish, of_type, parent_results, process_alive,
    setup, wait_for_file,
};

mod one_life;
mod process_runner;

/// Runs `alcove exec --json` with waits allowed down to 50 ms.
fn run(env: &TestEnv, server: &FakeServer, extra: &[&str], prompt: &str) -> Outcome {
    let mut args = vec!["-c", "agents.wait_min_ms=50", "--json"];
    args.extend_from_slice(extra);
    args.push(prompt);
    finish(exec_command(env, server, &args).spawn().unwrap())
}

/// `alcove exec --json` of `prompt` with `agents.command` set to `sh
/// <script>` (a file of the workspace), `Agent` allowed (starting a
/// runner's command is gated like Bash) and short waits; `extra` comes
/// first.
pub(crate) fn with_runner(
    env: &TestEnv,
    server: &FakeServer,
    script: &str,
    extra: &[&str],
    prompt: &str,
) -> std::process::Child {
    let mut args = vec!["-c", "agents.wait_min_ms=50"];
    args.extend_from_slice(extra);
    args.extend(["--allow", "Agent(general-purpose)", "--json", prompt]);
    exec_command(env, server, &args)
        .env("ALCOVE_SUBAGENT_COMMAND", format!("sh {script}"))
        .spawn()
        .unwrap()
}

fn spawn(message: &str) -> Step {
    Step::tool_call("spawn_agent", json!({"message": message}))
}

fn wait_for(ids: &[&str], timeout_ms: i64) -> Step {
    Step::tool_call("wait", json!({"ids": ids, "timeout_ms": timeout_ms}))
}

#[test]
fn spawn_then_wait_reaches_completed_with_the_final_payload() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "parent spawns",
                vec![
                    crate::support::load_deferred(),
                    spawn("ECHO child: say hello"),
                    wait_for(&["agent-1"], 10_000),
                    Step::text("done"),
                ],
            )
            .conversation("ECHO child", vec![Step::text("hello from the child")]),
    );
    let out = run(&env, &server, &[], "parent spawns");
    assert_eq!(out.code, 0, "{}", out.stderr);
    let results = parent_results(&server, "parent spawns");
    let (spawned, _, is_error) = &results[0];
    assert!(!is_error);
    assert_eq!(spawned["agent_id"], "agent-1");
    assert_eq!(spawned["status"], "running");
    // Short, and says what to do next; `wait` has the full record.
    assert_eq!(
        spawned["next"],
        "call wait with ids [\"agent-1\"] to collect it"
    );
    assert!(spawned.get("last_message").is_none(), "{spawned}");
    let (waited, _, _) = &results[1];
    assert_eq!(waited["timed_out"], false);
    assert_eq!(waited["status"]["agent-1"], "completed");
    assert_eq!(
        waited["details"]["agent-1"]["last_output"],
        "hello from the child"
    );
    let events = out.events();
    assert!(
        events
            .iter()
            .any(|event| event["agent"] == "main/agent-1" && event["type"] == "assistant_text")
    );
    assert_nothing_lost(&events);
}

#[test]
fn send_input_needs_interrupt_while_busy_and_interrupting_starts_anew() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "parent interrupts",
                vec![
                    crate::support::load_deferred(),
                    spawn("SLOW child: take your time"),
                    Step::tool_call("send_input", json!({"id": "agent-1", "message": "hurry"})),
                    Step::tool_call(
                        "send_input",
                        json!({"id": "agent-1", "message": "hurry", "interrupt": true}),
                    ),
                    wait_for(&["agent-1"], 10_000),
                    Step::text("done"),
                ],
            )
            .conversation(
                "SLOW child",
                vec![
                    Step::text("slow answer").delay(5000),
                    Step::text("fast answer"),
                ],
            ),
    );
    let out = run(&env, &server, &[], "parent interrupts");
    assert_eq!(out.code, 0, "{}", out.stderr);
    let results = parent_results(&server, "parent interrupts");
    assert!(
        results[1].2 && results[1].1.contains("set interrupt=true"),
        "{}",
        results[1].1
    );
    assert!(
        !results[2].2 && results[2].0["status"] == "running",
        "{}",
        results[2].1
    );
    assert_eq!(
        results[3].0["details"]["agent-1"]["last_output"],
        "fast answer"
    );
    let ended = of_type(&out.events(), "agent_ended")
        .into_iter()
        .cloned()
        .collect::<Vec<_>>();
    assert_eq!(
        ended[0]["status"], "aborted",
        "the interrupted submission is recorded as such"
    );
    // The interrupted conversation is continued, not restarted.
    let child_requests = server.requests_for("SLOW child");
    // (The Anthropic wire joins the two user messages in a row into one.)
    assert!(
        child_requests[1].last_user_text().ends_with("hurry"),
        "{}",
        child_requests[1].last_user_text()
    );
    assert!(
        child_requests[1]
            .first_user_message_text()
            .contains("SLOW child")
    );
}

#[test]
fn close_then_resume_restores_the_state_and_children_remember() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "parent closes",
                vec![
                    crate::support::load_deferred(),
                    spawn("MEMORY child: remember 42"),
                    wait_for(&["agent-1"], 10_000),
                    Step::tool_call("close_agent", json!({"id": "agent-1"})),
                    Step::tool_call(
                        "send_input",
                        json!({"id": "agent-1", "message": "what was it?"}),
                    ),
                    Step::tool_call("resume_agent", json!({"id": "agent-1"})),
                    Step::tool_call(
                        "send_input",
                        json!({"id": "agent-1", "message": "what was it?"}),
                    ),
                    wait_for(&["agent-1"], 10_000),
                    Step::text("done"),
                ],
            )
            .conversation(
                "MEMORY child",
                vec![Step::text("remembered"), Step::text("it was 42")],
            ),
    );
    let out = run(&env, &server, &[], "parent closes");
    assert_eq!(out.code, 0, "{}", out.stderr);
    let results = parent_results(&server, "parent closes");
    assert_eq!(results[2].0["status"], "closed");
    assert!(
        results[3].2 && results[3].1.contains("resume_agent"),
        "{}",
        results[3].1
    );
    assert_eq!(results[4].0["status"], "completed");
    assert!(!results[5].2);
    assert_eq!(
        results[6].0["details"]["agent-1"]["last_output"],
        "it was 42"
    );
    let second = &server.requests_for("MEMORY child")[1];
    assert_eq!(
        second.message_count(),
        3,
        "the child's second submission carries its first exchange"
    );
}

#[test]
fn wait_reports_unknown_ids_as_not_found_at_once() {
    let (env, server) = setup(Script::new().conversation(
        "parent waits on nothing",
        vec![
            crate::support::load_deferred(),
            wait_for(&["agent-99"], 10_000),
            Step::text("done"),
        ],
    ));
    let out = run(&env, &server, &[], "parent waits on nothing");
    assert_eq!(out.code, 0);
    let (waited, _, _) = &parent_results(&server, "parent waits on nothing")[0];
    assert_eq!(waited["status"]["agent-99"], "not_found");
    assert_eq!(waited["details"]["agent-99"]["last_output"], Value::Null);
    assert_eq!(waited["timed_out"], false);
    let finished = of_type(&out.events(), "tool_call_finished")[0].clone();
    assert!(finished["duration_ms"].as_u64().unwrap() < 1000);
}

#[test]
fn spawn_respects_the_concurrency_limit() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "parent over the limit",
                vec![
                    crate::support::load_deferred(),
                    spawn("HANG child one"),
                    spawn("HANG child two"),
                    Step::text("done"),
                ],
            )
            .conversation("HANG child", vec![Step::hang()]),
    );
    let out = finish(
        exec_command(
            &env,
            &server,
            &[
                "-c",
                "agents.wait_on_exit=false",
                "--json",
                "parent over the limit",
            ],
        )
        .env("ALCOVE_SUBAGENT_MAX_AGENTS", "1")
        .spawn()
        .unwrap(),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let results = parent_results(&server, "parent over the limit");
    assert!(
        results[1].2
            && results[1]
                .1
                .contains("subagent concurrency limit reached (1)"),
        "{}",
        results[1].1
    );
    // The refused spawn took no slot and announced nothing.
    assert_eq!(of_type(&out.events(), "agent_started").len(), 1);
    let warnings = of_type(&out.events(), "warning")
        .into_iter()
        .cloned()
        .collect::<Vec<_>>();
    assert!(
        warnings
            .iter()
            .any(|w| w["message"].as_str().unwrap().contains("closed: agent-1")),
        "{warnings:?}"
    );
}

#[test]
fn bad_timeouts_and_missing_agents_are_error_results() {
    let (env, server) = setup(Script::new().conversation(
        "parent errs",
        vec![
            crate::support::load_deferred(),
            Step::reply(vec![alcove_testkit::Block::tool_call(
                "wait",
                json!({"ids": ["x"], "timeout_ms": 0}),
            )]),
            Step::tool_call("send_input", json!({"id": "nope", "message": "hi"})),
            Step::tool_call("close_agent", json!({"id": "nope"})),
            Step::tool_call("resume_agent", json!({"id": "nope"})),
            Step::text("done"),
        ],
    ));
    assert_eq!(run(&env, &server, &[], "parent errs").code, 0);
    let results = parent_results(&server, "parent errs");
    assert!(
        results[0].2
            && results[0]
                .1
                .contains("timeout_ms must be greater than zero"),
        "{}",
        results[0].1
    );
    for (_, text, is_error) in &results[1..4] {
        assert!(
            *is_error && text.contains("agent not found: nope"),
            "{text}"
        );
    }
}

#[test]
fn a_failing_child_ends_errored() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "parent of a failure",
                vec![
                    crate::support::load_deferred(),
                    spawn("FAILING child"),
                    wait_for(&["agent-1"], 10_000),
                    Step::text("done"),
                ],
            )
            // A request the provider refuses for what it holds (a refused
            // key would stop the whole tree: `provider_health`).
            .conversation("FAILING child", vec![Step::http_error(400, "bad request")]),
    );
    assert_eq!(run(&env, &server, &[], "parent of a failure").code, 0);
    let (waited, _, _) = &parent_results(&server, "parent of a failure")[1];
    assert_eq!(waited["status"]["agent-1"], "errored");
    assert!(
        waited["details"]["agent-1"]["last_error"]
            .as_str()
            .unwrap()
            .contains("400")
    );
}

#[test]
fn a_hanging_child_never_hangs_wait_or_close() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "parent of a hang",
                vec![
                    crate::support::load_deferred(),
                    spawn("STUCK child"),
                    wait_for(&["agent-1"], 300),
                    Step::tool_call("close_agent", json!({"id": "agent-1"})),
                    wait_for(&["agent-1"], 10_000),
                    Step::tool_call("resume_agent", json!({"id": "agent-1"})),
                    Step::text("done"),
                ],
            )
            .conversation("STUCK child", vec![Step::hang()]),
    );
    let out = run(&env, &server, &[], "parent of a hang");
    assert_eq!(out.code, 0, "{}", out.stderr);
    let results = parent_results(&server, "parent of a hang");
    assert_eq!(results[1].0["timed_out"], true);
    assert_eq!(results[3].0["status"]["agent-1"], "closed");
    assert_eq!(
        results[3].0["details"]["agent-1"]["last_error"],
        "closed while running"
    );
    assert_eq!(
        results[4].0["status"], "errored",
        "a run killed by close_agent resumes as errored, not completed"
    );
    let durations: Vec<u64> = of_type(&out.events(), "tool_call_finished")
        .iter()
        .filter(|event| event["agent"] == "main")
        .map(|event| event["duration_ms"].as_u64().unwrap())
        .collect();
    assert!(
        durations[1] < 1300,
        "wait took {} ms for a 300 ms deadline",
        durations[1]
    );
    assert!(durations[2] < 1000, "close took {} ms", durations[2]);
}

#[test]
fn a_finished_child_is_announced_in_the_parents_next_request() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "parent keeps working",
                vec![
                    crate::support::load_deferred(),
                    spawn("QUICK child"),
                    // Deterministic: `wait` returns once the child is final, and the
                    // notice is left before waiters are woken.
                    wait_for(&["agent-1"], 10_000),
                    Step::text("done"),
                ],
            )
            .conversation("QUICK child", vec![Step::text("quick answer\nmore detail")]),
    );
    assert_eq!(run(&env, &server, &[], "parent keeps working").code, 0);
    // The child may finish before the parent's second request or while
    // its `wait` runs: either way the next request carries the notice, once.
    let requests = server.requests_for("parent keeps working");
    let notice = "[alcove notification] agent agent-1 completed: quick answer";
    let announced: Vec<usize> = requests
        .iter()
        .enumerate()
        .filter(|(_, request)| request.last_user_text() == notice)
        .map(|(index, _)| index)
        .collect();
    assert!(
        announced == [2] || announced == [3],
        "announced in requests {announced:?}"
    );
}

#[test]
fn collab_tools_can_be_switched_off() {
    let (env, server) = setup(Script::new().conversation("no collab", vec![Step::text("ok")]));
    let out = finish(
        exec_command(&env, &server, &["no collab"])
            .env("ALCOVE_ENABLE_COLLAB_TOOLS", "0")
            .spawn()
            .unwrap(),
    );
    assert_eq!(out.code, 0);
    let tools = server.requests()[0].tool_names();
    assert!(
        tools.contains(&"Agent".to_owned()) && !tools.contains(&"spawn_agent".to_owned()),
        "{tools:?}"
    );
}

const FAKE_RUNNER: &str = r#"#!/bin/sh
# A stand-in for a remote runner, as in seed 001's tests.
read -r message
case "$message" in
  echo:*) echo "${message#echo:}" ;;
  fail) echo "forced failure" >&2; exit 2 ;;
  hang) sleep 60 & echo $! > runner-child.pid; wait ;;
  *) echo "ok:$message" ;;
esac
"#;

#[test]
fn trace_shows_spawn_wait_and_close_with_ids_and_states() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "traced collab",
                vec![
                    crate::support::load_deferred(),
                    spawn("TRACED child"),
                    wait_for(&["agent-1"], 10_000),
                    Step::tool_call("close_agent", json!({"id": "agent-1"})),
                    Step::text("done"),
                ],
            )
            .conversation("TRACED child", vec![Step::text("traced")]),
    );
    let out = finish(
        exec_command(
            &env,
            &server,
            &["-c", "agents.wait_min_ms=50", "traced collab"],
        )
        .env("TRACE", "1")
        .spawn()
        .unwrap(),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    for expected in [
        "[trace] agent.spawn id=agent-1 status=running agent=main",
        "[trace] agent.wait states=agent-1:completed timed_out=false agent=main",
        "[trace] agent.close id=agent-1 status=closed agent=main",
    ] {
        assert!(
            out.stderr.contains(expected),
            "missing {expected:?} in:\n{}",
            out.stderr
        );
    }
}

#[test]
fn wait_returns_the_harness_evidence_footer_beside_the_childs_text() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "parent wants evidence",
                vec![
                    crate::support::load_deferred(),
                    spawn("EVIDENCE child"),
                    wait_for(&["agent-1"], 10_000),
                    Step::tool_call("send_input", json!({"id": "agent-1", "message": "again"})),
                    wait_for(&["agent-1"], 10_000),
                    Step::text("done"),
                ],
            )
            .conversation(
                "EVIDENCE child",
                vec![
                    Step::tool_call("Bash", json!({"command": "echo evidence > seen.txt"})),
                    Step::text("I wrote seen.txt"),
                    Step::text("nothing more to do"),
                ],
            ),
    );
    let out = run(&env, &server, &[], "parent wants evidence");
    assert_eq!(out.code, 0, "{}", out.stderr);
    let results = parent_results(&server, "parent wants evidence");
    let first = &results[1].0["details"]["agent-1"];
    assert_eq!(first["last_output"], "I wrote seen.txt", "{first}");
    let evidence = first["evidence"].as_str().unwrap_or_default();
    // The harness's footer, as Agent's report ends: from the call's
    // effects, not from what the child said.
    assert!(
        evidence.starts_with("[alcove evidence] status: completed | turns: 2 | tokens: "),
        "{evidence}"
    );
    assert!(
        evidence.contains("commands: `echo evidence > seen.txt` (exit 0)"),
        "{evidence}"
    );
    assert!(evidence.contains("tools: 1 call |"), "{evidence}");
    assert!(evidence.contains("transcript: "), "{evidence}");
    // Every submission gets its own footer: the second ran no command.
    let second = &results[3].0["details"]["agent-1"];
    assert_eq!(second["last_output"], "nothing more to do", "{second}");
    let evidence = second["evidence"].as_str().unwrap_or_default();
    assert!(evidence.contains("turns: 1 |"), "{evidence}");
    assert!(
        evidence.contains("tools: 0 calls") && evidence.contains("commands: none"),
        "{evidence}"
    );
}

#[test]
fn a_finished_child_closes_the_agents_it_spawned_and_frees_their_slots() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "parent delegates deep",
                vec![
                    crate::support::load_deferred(),
                    Step::tool_call(
                        "Agent",
                        json!({"description": "spawner", "prompt": "SPAWNER child"}),
                    ),
                    spawn("SECOND child"),
                    wait_for(&["agent-3"], 10_000),
                    Step::text("done"),
                ],
            )
            .conversation(
                "SPAWNER child",
                vec![
                    crate::support::load_deferred(),
                    spawn("GRAND child"),
                    Step::text("spawned one and left"),
                ],
            )
            .conversation("GRAND child", vec![Step::text("late").delay(8_000)])
            .conversation("SECOND child", vec![Step::text("second done")]),
    );
    let out = run(
        &env,
        &server,
        &["-c", "agents.max_depth=2", "-c", "agents.max_concurrent=1"],
        "parent delegates deep",
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let results = parent_results(&server, "parent delegates deep");
    // The grandchild's slot (the only one) was free again for the parent.
    assert!(!results[1].2, "{}", results[1].1);
    assert_eq!(
        results[2].0["status"]["agent-3"], "completed",
        "{}",
        results[2].1
    );
    // Its end was recorded before its parent's, and it never answered.
    let ended: Vec<String> = of_type(&out.events(), "agent_ended")
        .iter()
        .map(|event| event["child"].as_str().unwrap_or_default().to_owned())
        .collect();
    let grand = ended
        .iter()
        .position(|child| child == "main/agent-1/agent-2");
    let spawner = ended.iter().position(|child| child == "main/agent-1");
    assert!(grand.is_some() && grand < spawner, "{ended:?}");
}
