//! A workflow run over ACP (issue 47): the model's `Workflow` call starts a
//! run that the client sees as one tool call of the session (its id the
//! run id) with a progress line per phase and per agent, closed with the
//! run's end; each agent is a subagent session linked from that call when
//! the client takes subagents.

use std::collections::HashSet;

use alcove_testkit::{FakeServer, Script, Step, TestEnv, from_last_result};
use serde_json::{Value, json};

use super::{Seen, new_session_id, sdk_client};
use crate::support::{load, setup};

/// Two agents side by side in `Ask`, then one in `Sum`.
const SCRIPT: &str = "export const meta = { name: 'ask-and-sum', description: 'two agents, then one', phases: [{ title: 'Ask' }, { title: 'Sum' }] }\n\
phase('Ask')\n\
const [a, b] = await parallel([() => agent('[acp-kid-a] say a', { label: 'ask a' }), () => agent('[acp-kid-b] say b', { label: 'ask b' })])\n\
phase('Sum')\n\
const sum = await agent('[acp-kid-c] join the answers', { label: 'join' })\n\
return { a, b, sum }\n";

/// A parent whose model runs [`SCRIPT`] with `Workflow` and waits for it.
fn a_workflow_session() -> (TestEnv, FakeServer) {
    setup(
        Script::new()
            .conversation(
                "[acp-parent] run it",
                vec![
                    load("Workflow,wait"),
                    Step::tool_call("Workflow", json!({"script": SCRIPT})),
                    Step::tool_call(
                        "wait",
                        json!({"ids": [from_last_result("run_id")], "timeout_ms": 60_000}),
                    ),
                    Step::text("the run answered"),
                ],
            )
            .conversation("[acp-kid-a]", vec![Step::text("alpha")])
            .conversation("[acp-kid-b]", vec![Step::text("beta")])
            .conversation("[acp-kid-c]", vec![Step::text("alpha beta")]),
    )
}

fn run_it(env: &TestEnv, server: &FakeServer, subagents: bool) -> Seen {
    sdk_client(
        env,
        server,
        &json!({
            "subagents": subagents,
            "args": ["--allow", "Workflow"],
            "steps": [{"op": "new"}, {"op": "prompt", "text": "[acp-parent] run it"}],
        }),
    )
}

/// The run's tool call on `session`: the one titled `Workflow ask-and-sum`.
fn run_call<'a>(seen: &'a Seen, session: &str) -> &'a Value {
    let calls: Vec<&Value> = seen
        .updates("tool_call")
        .into_iter()
        .filter(|(id, call)| *id == session && call["title"] == "Workflow ask-and-sum")
        .map(|(_, call)| call)
        .collect();
    assert_eq!(calls.len(), 1, "{:?}\n{}", seen.lines, seen.stderr);
    calls[0]
}

/// The text of each update of call `id` on `session`, with its status.
fn progress(seen: &Seen, session: &str, id: &str) -> Vec<(String, Value)> {
    seen.updates("tool_call_update")
        .into_iter()
        .filter(|(on, update)| *on == session && update["toolCallId"] == id)
        .map(|(_, update)| {
            let text = update["content"][0]["content"]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            (text, update["status"].clone())
        })
        .collect()
}

#[test]
fn a_workflow_run_is_one_tool_call_with_its_phases_progress_and_end() {
    let (env, server) = a_workflow_session();
    let seen = run_it(&env, &server, false);
    let session = new_session_id(&seen);
    assert_eq!(seen.stop_reasons(), ["end_turn"], "{}", seen.stderr);
    server.assert_script_finished();
    assert_eq!(seen.text_on(&session), "the run answered");

    let call = run_call(&seen, &session);
    let run_id = call["toolCallId"].as_str().unwrap();
    assert!(run_id.starts_with("wf_"), "{call}");
    assert_eq!(call["kind"], "think");
    assert_eq!(call["status"], "in_progress");
    assert_eq!(call["rawInput"]["phases"], json!(["Ask", "Sum"]));

    let updates = progress(&seen, &session, run_id);
    let texts: Vec<&str> = updates.iter().map(|(text, _)| text.as_str()).collect();
    // A line per phase and per agent, naming the phase it is in.
    assert!(
        texts.contains(&"phase Ask · 0 agents started, 0 ended · 0 tokens"),
        "{texts:#?}"
    );
    assert!(
        texts
            .iter()
            .any(|text| text.starts_with("phase Ask · 2 agents started, 2 ended · ")),
        "{texts:#?}"
    );
    assert!(
        texts
            .iter()
            .any(|text| text.starts_with("phase Sum · 3 agents started, 3 ended · ")),
        "{texts:#?}"
    );
    // Then one final update: completed, with the run's summary.
    let (last, status) = updates.last().unwrap();
    assert_eq!(status, "completed", "{texts:#?}");
    assert!(
        last.starts_with("completed: 3 agents started, 3 answered"),
        "{last}"
    );
    assert_eq!(
        updates
            .iter()
            .filter(|(_, status)| !status.is_null())
            .count(),
        1,
        "{texts:#?}"
    );
    // Without subagents the agents' own work is not shown, and no update
    // names a call the client was never told of.
    assert!(seen.updates("subagent_update").is_empty());
    seen.assert_every_update_names_an_announced_call();
}

#[test]
fn with_subagents_each_agent_is_a_session_linked_from_the_runs_call() {
    let (env, server) = a_workflow_session();
    let seen = run_it(&env, &server, true);
    let session = new_session_id(&seen);
    assert_eq!(seen.stop_reasons(), ["end_turn"], "{}", seen.stderr);
    let run_id = run_call(&seen, &session)["toolCallId"]
        .as_str()
        .unwrap()
        .to_owned();
    // Each agent is a subagent session announced on the parent's session.
    let agents: Vec<(String, String)> = seen
        .updates("subagent_update")
        .into_iter()
        .filter(|(on, update)| *on == session && update["title"].is_string())
        .map(|(_, update)| {
            (
                update["title"].as_str().unwrap().to_owned(),
                update["sessionId"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let titles: HashSet<&str> = agents.iter().map(|(title, _)| title.as_str()).collect();
    assert_eq!(
        titles,
        HashSet::from(["ask a", "ask b", "join"]),
        "{agents:?}"
    );
    let (_, join) = agents.iter().find(|(title, _)| title == "join").unwrap();
    assert_eq!(seen.text_on(join), "alpha beta");
    // The run's call links each of them while it runs (on the wire: the
    // SDK drops `session` content, which its schema does not know yet).
    let linked: HashSet<String> = seen
        .of("wire")
        .into_iter()
        .map(|line| &line["message"]["params"]["update"])
        .filter(|update| update["toolCallId"] == run_id.as_str())
        .flat_map(|update| update["content"].as_array().cloned().unwrap_or_default())
        .filter(|content| content["type"] == "session")
        .map(|content| content["sessionId"].as_str().unwrap().to_owned())
        .collect();
    for (title, agent) in &agents {
        assert!(linked.contains(agent), "{title} not linked: {linked:?}");
    }
    let updates = progress(&seen, &session, &run_id);
    assert_eq!(updates.last().unwrap().1, "completed", "{updates:?}");
    seen.assert_every_update_names_an_announced_call();
}
