//! `TodoWrite` (issue 37): the plan is an event, is carried verbatim
//! through a summary, is announced again by `resume`, and a child's plan
//! stays out of its parent's history but shows in its evidence footer.

use alcove_testkit::{Script, Step};
use serde_json::{Value, json};

use crate::compaction::{HANDOVER, data_files, reading_turn};
use crate::support::{exec, of_type, setup};

fn plan() -> Value {
    json!({"todos": [
        {"content": "Survey the data files", "status": "completed", "activeForm": "Surveying the data files"},
        {"content": "Check every checksum", "status": "in_progress", "activeForm": "Checking every checksum"},
        {"content": "Write the report", "status": "pending", "activeForm": "Writing the report"},
    ]})
}

fn session_id(events: &[Value]) -> String {
    of_type(events, "session_started")[0]["session_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn the_plan_is_an_event_is_kept_verbatim_through_a_summary_and_resume_restores_it() {
    let mut steps = vec![Step::tool_call("TodoWrite", plan())];
    steps.extend((0..6).map(reading_turn));
    steps.push(Step::text("checked"));
    steps.push(Step::text("carrying on"));
    let (env, server) = setup(
        Script::new()
            .conversation("survey the data", steps)
            .count_tokens()
            .summarizer(HANDOVER, "FACT-"),
    );
    data_files(&env, 6, 6_000);
    env.write_file(".alcove/config.toml", "model_context_window = 100000\n");
    let first = exec(&env, &server, &["--json", "survey the data"]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    let events = first.events();
    let updates = of_type(&events, "plan_updated");
    assert_eq!(updates.len(), 1, "{events:?}");
    assert_eq!(updates[0]["agent"], "main");
    assert_eq!(updates[0]["todos"], plan()["todos"]);
    let id = session_id(&events);

    // A summary replaces the message that holds the plan; the note (the
    // fake summariser keeps only FACT lines) says nothing of it.
    let compacted = exec(&env, &server, &["--json", "--resume", &id, "--compact"]);
    assert_eq!(compacted.code, 0, "{}", compacted.stderr);
    let compacted = compacted.events();
    let done = of_type(&compacted, "compacted");
    assert_eq!(done.len(), 1);
    assert!(done[0]["replaced"].as_u64().unwrap() >= 2, "{:?}", done[0]);
    assert!(!done[0]["summary"].as_str().unwrap().contains("Check every"));

    // The resumed session announces the plan again, and the model is sent
    // it verbatim in the rebuilt first message.
    let before = server.request_count();
    let resumed = exec(&env, &server, &["--json", "--resume", &id, "and now?"]);
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    let resumed_events = resumed.events();
    let restored = of_type(&resumed_events, "plan_updated");
    assert_eq!(restored.len(), 1);
    assert_eq!(restored[0]["todos"], plan()["todos"]);
    let first_message = server.requests()[before].first_user_message_text();
    assert!(
        first_message.contains("your plan (TodoWrite)"),
        "{first_message}"
    );
    let carried = first_message
        .split("keep it current with TodoWrite]\n")
        .nth(1)
        .unwrap();
    let carried: Value = serde_json::from_str(carried.lines().next().unwrap()).unwrap();
    assert_eq!(carried, plan());
    server.assert_script_finished();
}

#[test]
fn a_childs_plan_stays_out_of_its_parents_history_and_its_footer_counts_it() {
    let child_plan = json!({"todos": [
        {"content": "Look around", "status": "completed", "activeForm": "Looking around"},
        {"content": "SECRET-STEP tidy up", "status": "pending", "activeForm": "Tidying up"},
    ]});
    let (env, server) = setup(
        Script::new()
            .conversation(
                "parent task",
                vec![
                    Step::tool_call(
                        "Agent",
                        json!({"description": "look", "prompt": "CHILD: look around"}),
                    ),
                    Step::text("done"),
                ],
            )
            .conversation(
                "CHILD: look around",
                vec![
                    Step::tool_call("TodoWrite", child_plan.clone()),
                    Step::text("Looked around."),
                ],
            ),
    );
    let out = exec(&env, &server, &["--json", "parent task"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let events = out.events();
    let updates = of_type(&events, "plan_updated");
    assert_eq!(updates.len(), 1);
    assert_eq!(updates[0]["agent"], "main/agent-1");
    assert_eq!(updates[0]["todos"], child_plan["todos"]);
    let parent = server.requests_for("parent task");
    let (_, report, is_error) = parent[1].tool_results().into_iter().next().unwrap();
    assert!(!is_error, "{report}");
    assert!(report.contains("| plan: 1/2 done"), "{report}");
    let sent = serde_json::to_string(&parent[1].body).unwrap();
    assert!(
        !sent.contains("SECRET-STEP"),
        "the child's plan reached its parent"
    );
}
