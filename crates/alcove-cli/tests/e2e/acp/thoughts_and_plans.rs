//! What the model thinks and plans, as the editor sees it: thinking
//! deltas as `agent_thought_chunk`, `TodoWrite` plans as `plan` updates,
//! each on the session of the agent that thought or planned (a child's
//! under its own subagent session).

use alcove_testkit::{Script, Step};
use serde_json::{Value, json};

use super::{Seen, new_session_id, sdk_client};
use crate::agents::agent;
use crate::support::setup;

fn todos(steps: &[(&str, &str)]) -> Value {
    json!({"todos": steps.iter().map(|(content, status)| json!({
        "content": content, "status": status, "activeForm": format!("Doing: {content}"),
    })).collect::<Vec<_>>()})
}

/// The thinking streamed on `session`.
fn thoughts_on(seen: &Seen, session: &str) -> String {
    seen.updates("agent_thought_chunk")
        .into_iter()
        .filter(|(id, _)| *id == session)
        .map(|(_, update)| {
            assert_eq!(update["content"]["type"], "text", "{update}");
            update["content"]["text"].as_str().unwrap().to_owned()
        })
        .collect()
}

/// The plans sent on `session`, each as (content, status) pairs.
fn plans_on(seen: &Seen, session: &str) -> Vec<Vec<(String, String)>> {
    seen.updates("plan")
        .into_iter()
        .filter(|(id, _)| *id == session)
        .map(|(_, update)| {
            update["entries"]
                .as_array()
                .unwrap()
                .iter()
                .map(|entry| {
                    assert_eq!(entry["priority"], "medium", "{entry}");
                    (
                        entry["content"].as_str().unwrap().to_owned(),
                        entry["status"].as_str().unwrap().to_owned(),
                    )
                })
                .collect()
        })
        .collect()
}

fn pairs(steps: &[(&str, &str)]) -> Vec<(String, String)> {
    steps
        .iter()
        .map(|(content, status)| (content.to_string(), status.to_string()))
        .collect()
}

#[test]
fn thinking_streams_as_thought_chunks_and_plans_as_plan_updates_on_each_agents_session() {
    let main_plan = [("Read the notes", "in_progress"), ("Delegate", "pending")];
    let main_done = [("Read the notes", "completed"), ("Delegate", "completed")];
    let child_plan = [("Look around", "in_progress")];
    let (env, server) = setup(
        Script::new()
            .conversation(
                "ACP THINK",
                vec![
                    Step::tool_call("TodoWrite", todos(&main_plan)),
                    Step::tool_call("Agent", agent("helper", "KID PLANS: look around")),
                    Step::tool_call("TodoWrite", todos(&main_done)),
                    Step::text("Planned and done."),
                ],
            )
            .conversation(
                "KID PLANS",
                vec![
                    Step::tool_call("TodoWrite", todos(&child_plan)),
                    Step::text("looked around"),
                ],
            ),
    );
    std::fs::write(
        env.home().join("config.toml"),
        format!(
            "[model_options.anthropic]\nthinking = \"adaptive\"\n{}",
            std::fs::read_to_string(env.home().join("config.toml")).unwrap()
        ),
    )
    .unwrap();
    let seen = sdk_client(
        &env,
        &server,
        &json!({
            "subagents": true,
            "args": ["--model", "anthropic/claude-opus-4-6", "--permission-mode", "bypassPermissions"],
            "steps": [{"op": "new"}, {"op": "prompt", "text": "ACP THINK it over"}],
        }),
    );
    let parent = new_session_id(&seen);
    assert_eq!(seen.stop_reasons(), ["end_turn"], "{}", seen.stderr);
    let child = seen
        .updates("subagent_update")
        .into_iter()
        .find(|(_, update)| update["title"] == "helper")
        .map(|(_, update)| update["sessionId"].as_str().unwrap().to_owned())
        .unwrap();

    // Every reply opened with thinking: four on the main session, two on
    // the child's, none of it in the answer text.
    let main_thoughts = thoughts_on(&seen, &parent);
    assert_eq!(
        main_thoughts.matches("Let me think about reply").count(),
        4,
        "{main_thoughts}"
    );
    assert!(
        seen.updates("agent_thought_chunk")
            .iter()
            .filter(|(id, _)| *id == parent)
            .count()
            > 4,
        "the thinking came in pieces, as it streamed"
    );
    let child_thoughts = thoughts_on(&seen, &child);
    assert_eq!(
        child_thoughts.matches("Let me think about reply").count(),
        2,
        "{child_thoughts}"
    );
    assert_eq!(seen.text_on(&parent), "Planned and done.");
    assert_eq!(seen.text_on(&child), "looked around");

    // Each TodoWrite is the whole plan, on the session of the agent that wrote it.
    assert_eq!(
        plans_on(&seen, &parent),
        vec![pairs(&main_plan), pairs(&main_done)]
    );
    assert_eq!(plans_on(&seen, &child), vec![pairs(&child_plan)]);
    server.assert_script_finished();
}

#[test]
fn a_loaded_session_replays_its_thinking_and_its_plans() {
    let plan = [("Look", "in_progress")];
    let (env, server) = setup(Script::new().conversation(
        "ACP REPLAY THINK",
        vec![
            Step::tool_call("TodoWrite", todos(&plan)),
            Step::text("planned"),
        ],
    ));
    std::fs::write(
        env.home().join("config.toml"),
        format!(
            "[model_options.anthropic]\nthinking = \"adaptive\"\n{}",
            std::fs::read_to_string(env.home().join("config.toml")).unwrap()
        ),
    )
    .unwrap();
    let args = json!(["--model", "anthropic/claude-opus-4-6"]);
    let first = sdk_client(
        &env,
        &server,
        &json!({"args": args, "steps": [{"op": "new"}, {"op": "prompt", "text": "ACP REPLAY THINK now"}]}),
    );
    let id = new_session_id(&first);
    assert_eq!(first.stop_reasons(), ["end_turn"], "{}", first.stderr);
    let live_thoughts = thoughts_on(&first, &id);

    let second = sdk_client(
        &env,
        &server,
        &json!({"args": args, "steps": [{"op": "load", "id": id}]}),
    );
    assert!(
        second.responses("load")[0].get("error").is_none(),
        "{:?}",
        second.lines
    );
    // The whole thinking of both replies, as it streamed live, and the
    // plan as it stands (once: resuming restores it).
    assert_eq!(thoughts_on(&second, &id), live_thoughts);
    assert_eq!(live_thoughts.matches("Let me think").count(), 2);
    assert_eq!(plans_on(&second, &id), vec![pairs(&plan)]);
}
