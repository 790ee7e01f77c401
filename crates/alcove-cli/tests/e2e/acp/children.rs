//! Children as subagent sessions (the client sets the subagents
//! capability), and as the parent's tool calls without it.

use std::collections::HashMap;

use alcove_testkit::{Block, FakeServer, Script, Step, TestEnv};
use serde_json::{Value, json};

use super::{Seen, new_session_id, sdk_client};
use crate::agents::agent;
use crate::support::{assert_nothing_lost, setup, transcript};

/// A parent that starts three `Agent` children at once; the second runs
/// `child_two_command`.
fn three_children(child_two_command: &str) -> (TestEnv, FakeServer) {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "ACP KIDS",
                vec![
                    Step::reply(vec![
                        Block::tool_call("Agent", agent("one", "KID ONE: read a.txt")),
                        Block::tool_call("Agent", agent("two", "KID TWO: run the command")),
                        Block::tool_call("Agent", agent("three", "KID THREE: list the files")),
                    ]),
                    Step::text("Kids done."),
                ],
            )
            .conversation(
                "KID ONE",
                vec![
                    Step::tool_call("Read", json!({"file_path": "a.txt"})),
                    Step::text("one: a.txt says hello"),
                ],
            )
            .conversation(
                "KID TWO",
                vec![
                    Step::tool_call("Bash", json!({"command": child_two_command})),
                    Step::text("two: the command ran"),
                ],
            )
            .conversation(
                "KID THREE",
                vec![
                    Step::tool_call("Glob", json!({"pattern": "*.txt"})),
                    Step::text("three: one file"),
                ],
            ),
    );
    env.write_file("a.txt", "hello\n");
    (env, server)
}

/// The child sessions announced on `parent`, by title.
fn announced(seen: &Seen, parent: &str) -> HashMap<String, String> {
    seen.updates("subagent_update")
        .into_iter()
        .filter(|(session, update)| *session == parent && update["title"].is_string())
        .map(|(_, update)| {
            (
                update["title"].as_str().unwrap().to_owned(),
                update["sessionId"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// The last state a child session was given.
fn last_state<'a>(seen: &'a Seen, child: &str) -> &'a Value {
    &seen
        .updates("subagent_update")
        .into_iter()
        .rfind(|(_, update)| update["sessionId"] == child && !update["state"].is_null())
        .unwrap()
        .1["state"]
}

#[test]
fn three_parallel_children_are_subagent_sessions_and_one_is_cancelled_alone() {
    let (env, server) = three_children("sleep 30");
    let seen = sdk_client(
        &env,
        &server,
        &json!({
            "subagents": true,
            "args": ["--permission-mode", "bypassPermissions"],
            "steps": [
                {"op": "new"},
                {"op": "prompt", "text": "ACP KIDS go", "cancelWhen": {"sessionIncludes": "/main/", "toolTitle": "sleep 30"}},
            ],
        }),
    );
    let parent = new_session_id(&seen);
    assert_eq!(seen.stop_reasons(), ["end_turn"], "{}", seen.stderr);
    assert_eq!(seen.text_on(&parent), "Kids done.");
    let children = announced(&seen, &parent);
    assert_eq!(children.len(), 3, "{children:?}");

    // Each child was announced before any update of its own, and its own
    // tool call flowed under its own id.
    for (title, tool) in [("one", "read"), ("two", "execute"), ("three", "search")] {
        let child = &children[title];
        let first = seen
            .of("update")
            .into_iter()
            .position(|line| {
                line["sessionId"] == child.as_str() || line["update"]["sessionId"] == child.as_str()
            })
            .unwrap();
        let line = &seen.of("update")[first];
        assert_eq!(
            line["sessionId"],
            parent.as_str(),
            "{title} was announced first on its parent: {line}"
        );
        assert_eq!(line["update"]["sessionUpdate"], "subagent_update");
        let calls: Vec<&Value> = seen
            .updates("tool_call")
            .into_iter()
            .filter(|(session, _)| session == child)
            .map(|(_, call)| call)
            .collect();
        assert_eq!(calls.len(), 1, "{title}: {calls:?}");
        assert_eq!(calls[0]["kind"], tool);
    }
    // The text of a child is streamed on its own session.
    assert_eq!(seen.text_on(&children["one"]), "one: a.txt says hello");

    // The parent's Agent calls point at their children (on the wire: the
    // SDK drops `session` content, which its schema does not know yet).
    let linked: Vec<(String, String)> = seen
        .of("wire")
        .into_iter()
        .filter(|line| line["message"]["params"]["sessionId"] == parent.as_str())
        .flat_map(|line| {
            let update = &line["message"]["params"]["update"];
            let call = update["toolCallId"].as_str().unwrap_or_default().to_owned();
            update["content"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .filter(|content| content["type"] == "session")
                .map(move |content| {
                    (
                        call.clone(),
                        content["sessionId"].as_str().unwrap().to_owned(),
                    )
                })
        })
        .collect();
    let agent_calls: Vec<&str> = seen
        .updates("tool_call")
        .into_iter()
        .filter(|(session, call)| {
            *session == parent && call["title"].as_str().unwrap().starts_with("Agent")
        })
        .map(|(_, call)| call["toolCallId"].as_str().unwrap())
        .collect();
    assert_eq!(agent_calls.len(), 3);
    for child in children.values() {
        assert!(
            linked
                .iter()
                .any(|(call, linked)| linked == child && agent_calls.contains(&call.as_str())),
            "{child} not linked from its parent's call: {linked:?}"
        );
    }

    // Only the second child was cancelled; the others finished.
    let cancelled = seen.of("cancel");
    assert_eq!(cancelled.len(), 1);
    assert_eq!(cancelled[0]["sessionId"], children["two"].as_str());
    assert_eq!(
        last_state(&seen, &children["two"])["stopReason"],
        "cancelled"
    );
    assert_eq!(
        last_state(&seen, &children["one"])["stopReason"],
        "end_turn"
    );
    assert_eq!(
        last_state(&seen, &children["three"])["stopReason"],
        "end_turn"
    );
    let reports = server
        .requests_for("ACP KIDS")
        .pop()
        .unwrap()
        .tool_results();
    assert_eq!(reports.len(), 3);
    assert!(
        reports
            .iter()
            .any(|(_, text, _)| text.contains("one: a.txt says hello")),
        "{reports:?}"
    );
    assert!(
        reports.iter().any(|(_, text, _)| text.contains("aborted")),
        "{reports:?}"
    );
    assert_eq!(seen.exit_code(), Some(0));
    assert_nothing_lost(&transcript(&env));
}

#[test]
fn without_the_capability_children_are_their_parents_tool_calls_with_progress_and_report() {
    let (env, server) = three_children("echo two-ran");
    let seen = sdk_client(
        &env,
        &server,
        &json!({
            "args": ["--permission-mode", "bypassPermissions"],
            "steps": [{"op": "new"}, {"op": "prompt", "text": "ACP KIDS go"}],
        }),
    );
    let parent = new_session_id(&seen);
    assert_eq!(seen.stop_reasons(), ["end_turn"], "{}", seen.stderr);
    assert!(seen.updates("subagent_update").is_empty());
    // Every update is the parent's; the children's own calls are not shown as calls.
    assert!(
        seen.of("update")
            .iter()
            .all(|line| line["sessionId"] == parent.as_str())
    );
    let calls = seen.updates("tool_call");
    assert_eq!(calls.len(), 3, "{calls:?}");
    for (_, call) in &calls {
        assert_eq!(call["kind"], "think");
        let id = call["toolCallId"].as_str().unwrap();
        let contents: Vec<String> = seen
            .updates("tool_call_update")
            .into_iter()
            .filter(|(_, update)| update["toolCallId"] == id)
            .map(|(_, update)| {
                update["content"][0]["content"]["text"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned()
            })
            .collect();
        // Progress (turns, tokens, time, the current tool), then the report.
        assert!(
            contents.iter().any(|text| text.contains("turn 1")),
            "{contents:?}"
        );
        assert!(
            contents.iter().any(|text| text.contains(" · Read")
                || text.contains(" · Bash")
                || text.contains(" · Glob")),
            "{contents:?}"
        );
        let report = contents.last().unwrap();
        assert!(
            report.contains("one: a.txt")
                || report.contains("two: the command")
                || report.contains("three: one file"),
            "{report}"
        );
    }
    assert_eq!(seen.text_on(&parent), "Kids done.");
    assert_nothing_lost(&transcript(&env));
}

#[test]
fn two_childrens_approvals_are_pending_at_once_each_on_its_own_session() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "ACP ASKERS",
                vec![
                    Step::reply(vec![
                        Block::tool_call("Agent", agent("left", "ASKER LEFT: write left.txt")),
                        Block::tool_call("Agent", agent("right", "ASKER RIGHT: write right.txt")),
                    ]),
                    Step::text("Both asked."),
                ],
            )
            .conversation(
                "ASKER LEFT",
                vec![
                    Step::tool_call("Write", json!({"file_path": "left.txt", "content": "l\n"})),
                    Step::text("left: done"),
                ],
            )
            .conversation(
                "ASKER RIGHT",
                vec![
                    Step::tool_call("Write", json!({"file_path": "right.txt", "content": "r\n"})),
                    Step::text("right: done"),
                ],
            ),
    );
    let seen = sdk_client(
        &env,
        &server,
        &json!({
            "subagents": true,
            "permissionsTogether": 2,
            "permissions": ["allow-once", "reject"],
            "steps": [{"op": "new"}, {"op": "prompt", "text": "ACP ASKERS go"}],
        }),
    );
    let parent = new_session_id(&seen);
    assert_eq!(seen.stop_reasons(), ["end_turn"], "{}", seen.stderr);
    assert_eq!(
        seen.of("permissions-pending").len(),
        1,
        "both were pending at once: {:?}",
        seen.lines
    );
    let children = announced(&seen, &parent);
    let asks = seen.of("permission");
    assert_eq!(asks.len(), 2);
    // Each was asked on the asking child's own session, about its own call.
    let mut asked: Vec<&str> = asks
        .iter()
        .map(|ask| ask["params"]["sessionId"].as_str().unwrap())
        .collect();
    asked.sort();
    let mut expected: Vec<&str> = children.values().map(String::as_str).collect();
    expected.sort();
    assert_eq!(asked, expected);
    for ask in &asks {
        let session = ask["params"]["sessionId"].as_str().unwrap();
        let call = seen
            .updates("tool_call")
            .into_iter()
            .find(|(id, _)| *id == session)
            .unwrap()
            .1;
        assert_eq!(ask["params"]["toolCall"]["toolCallId"], call["toolCallId"]);
    }
    // While it waited, each child's state said so.
    for child in children.values() {
        assert!(
            seen.updates("subagent_update")
                .iter()
                .any(|(_, update)| update["sessionId"] == child.as_str()
                    && update["state"]["state"] == "requires_action"),
            "{child}"
        );
    }
    // One was allowed, one rejected: one file exists.
    let written = [
        env.path("left.txt").exists(),
        env.path("right.txt").exists(),
    ];
    assert_eq!(
        written.iter().filter(|written| **written).count(),
        1,
        "{written:?}"
    );
    assert_nothing_lost(&transcript(&env));
}

/// A parent that spawns one background agent running `sleep 40` and waits
/// for it.
fn spawned_sleeper() -> Script {
    Script::new()
        .conversation(
            "ACP SPAWN",
            vec![
                crate::support::load_deferred(),
                Step::tool_call(
                    "spawn_agent",
                    json!({"message": "SPAWNED KID: run the command"}),
                ),
                Step::tool_call("wait", json!({"ids": ["agent-1"], "timeout_ms": 120_000})),
                Step::text("parent done"),
            ],
        )
        .conversation(
            "SPAWNED KID",
            vec![
                Step::tool_call("Bash", json!({"command": "sleep 40"})),
                Step::text("kid: the command ran"),
            ],
        )
}

/// What `wait` told the parent of `agent-1`.
fn waited_status(server: &FakeServer) -> Value {
    let last = server.requests_for("ACP SPAWN").pop().unwrap();
    let results = crate::support::results_but_loads(&last);
    let (_, text, _) = results.last().unwrap();
    let waited: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    waited["status"]["agent-1"].clone()
}

#[test]
fn session_cancel_of_a_spawned_childs_session_stops_it_alone() {
    let (env, server) = setup(spawned_sleeper());
    let seen = sdk_client(
        &env,
        &server,
        &json!({
            "subagents": true,
            "args": ["--permission-mode", "bypassPermissions", "-c", "agents.wait_min_ms=50"],
            "steps": [
                {"op": "new"},
                {"op": "prompt", "text": "ACP SPAWN go", "cancelWhen": {"sessionIncludes": "/main/", "toolTitle": "sleep 40"}},
            ],
        }),
    );
    let tool_calls: Vec<String> = seen
        .updates("tool_call")
        .iter()
        .chain(seen.updates("subagent_update").iter())
        .map(|(session, update)| format!("{session}: {update}"))
        .collect();
    assert_eq!(seen.of("cancel").len(), 1, "{tool_calls:#?}");
    // The child stopped in its command: it never asked the model again,
    // and `wait` reported it cancelled; the parent went on.
    assert_eq!(server.requests_for("SPAWNED KID").len(), 1);
    assert_eq!(waited_status(&server), "cancelled");
    assert_eq!(server.requests_for("ACP SPAWN").len(), 4);
    assert_eq!(seen.exit_code(), Some(0));
}

#[test]
fn session_cancel_of_a_process_runner_childs_session_stops_its_process() {
    let (env, server) = setup(spawned_sleeper());
    let command = format!(
        "'{}' exec --json - --permission-mode bypassPermissions",
        crate::support::alcove().display()
    );
    let seen = sdk_client(
        &env,
        &server,
        &json!({
            "subagents": true,
            "args": [
                "--permission-mode", "bypassPermissions",
                "-c", "agents.wait_min_ms=50",
                "-c", format!("agents.command={}", serde_json::to_string(&command).unwrap()),
            ],
            "steps": [
                {"op": "new"},
                {"op": "prompt", "text": "ACP SPAWN go", "cancelWhen": {"sessionIncludes": "/main/", "toolTitle": "sleep 40"}},
            ],
        }),
    );
    assert_eq!(seen.of("cancel").len(), 1, "{}", seen.stderr);
    assert_eq!(server.requests_for("SPAWNED KID").len(), 1);
    assert_eq!(waited_status(&server), "cancelled");
    assert_eq!(seen.exit_code(), Some(0));
}

/// A batch's tasks are subagent sessions too; their `<batch>/<task>` call
/// ids name no tool call, so no update is sent for one.
#[test]
fn a_batchs_tasks_are_subagent_sessions_and_no_update_names_an_unknown_call() {
    let tasks: Vec<Value> = (1..=2)
        .map(|n| json!({"id": format!("t{n}"), "prompt": format!("[acp-batch-{n}] go")}))
        .collect();
    let (env, server) = setup(
        Script::new()
            .conversation(
                "ACP BATCH",
                vec![
                    crate::support::load_deferred(),
                    Step::tool_call("spawn_batch", json!({"tasks": tasks})),
                    Step::tool_call("wait", json!({"ids": ["batch-1"], "timeout_ms": 60_000})),
                    Step::text("Batch done."),
                ],
            )
            .conversation("[acp-batch-1]", vec![Step::text("one done")])
            .conversation("[acp-batch-2]", vec![Step::text("two done")]),
    );
    let seen = sdk_client(
        &env,
        &server,
        &json!({
            "subagents": true,
            "args": ["--permission-mode", "bypassPermissions"],
            "steps": [{"op": "new"}, {"op": "prompt", "text": "ACP BATCH go"}],
        }),
    );
    let parent = new_session_id(&seen);
    assert_eq!(seen.stop_reasons(), ["end_turn"], "{}", seen.stderr);
    assert_eq!(seen.text_on(&parent), "Batch done.");
    assert_eq!(announced(&seen, &parent).len(), 2, "{:?}", seen.lines);
    seen.assert_every_update_names_an_announced_call();
}
