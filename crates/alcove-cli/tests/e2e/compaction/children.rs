//! Compaction below the main agent: a child that outgrows its window
//! compacts and still reports whole, a child on another model compacts
//! against that model's window, and a spawned child's result reaches a
//! parent that compacted while it ran.

use alcove_testkit::{Script, Step};

use super::*;

#[test]
fn a_child_that_outgrows_its_window_compacts_and_reports_whole() {
    let mut child_steps: Vec<Step> = (0..12).map(reading_turn).collect();
    child_steps.push(Step::text("CHILD REPORT: twelve files checked, all fine."));
    let (env, server) = setup(
        Script::new()
            .conversation(
                "delegate the survey",
                vec![
                    Step::tool_call(
                        "Agent",
                        json!({"description": "survey", "prompt": "CHILD-SURVEY: check twelve files"}),
                    ),
                    Step::text("parent done"),
                ],
            )
            .conversation("CHILD-SURVEY", child_steps)
            .context_window(8_000)
            .summarizer(HANDOVER, "FACT-"),
    );
    data_files(&env, 12, 6_000);
    project_config(&env, "model_context_window = 8000\nmax_tokens = 1000\n");
    let out = exec(&env, &server, &["--json", "delegate the survey"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let events = out.events();
    let child_compactions = of_type(&events, "compacted")
        .into_iter()
        .filter(|event| event["agent"] == "main/agent-1")
        .count();
    assert!(child_compactions > 0, "the child compacted");
    // The parent's history never needed it.
    assert!(
        of_type(&events, "compacted")
            .iter()
            .all(|event| event["agent"] != "main")
    );
    // The parent got the child's report whole.
    let parent_request = server.requests_for("delegate the survey").pop().unwrap();
    let (_, report, _) = parent_request.tool_results().pop().unwrap();
    assert!(
        report.contains("CHILD REPORT: twelve files checked, all fine."),
        "{report}"
    );
    server.assert_script_finished();
}

#[test]
fn a_child_on_another_model_compacts_against_that_models_window() {
    let mut child_steps: Vec<Step> = (0..8).map(reading_turn).collect();
    child_steps.push(Step::text("SMALL CHILD REPORT"));
    let (env, server) = setup(
        Script::new()
            .conversation(
                "delegate to the small model",
                vec![
                    Step::tool_call(
                        "Agent",
                        json!({"description": "read", "prompt": "SMALL-CHILD: read eight files", "subagent_type": "small-reader"}),
                    ),
                    Step::text("parent done"),
                ],
            )
            .conversation("SMALL-CHILD", child_steps)
            .count_tokens()
            .summarizer(HANDOVER, "FACT-"),
    );
    data_files(&env, 8, 4_000);
    env.write_file(
        ".alcove/agents/small-reader.md",
        "---\nname: small-reader\ndescription: reads files on a small model\ntools: Read\nmodel: anthropic/small-model\n---\nRead what you are asked to.\n",
    );
    // The session's model has a large window; the child's model a small one.
    project_config(
        &env,
        "model_context_window = 200000\n[context_windows]\n\"anthropic/small-model\" = 9000\n",
    );
    let out = exec(&env, &server, &["--json", "delegate to the small model"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let events = out.events();
    let child_context: Vec<u64> = of_type(&events, "context")
        .iter()
        .filter(|event| event["agent"] == "main/agent-1")
        .map(|event| event["window"].as_u64().unwrap())
        .collect();
    assert!(!child_context.is_empty() && child_context.iter().all(|w| *w == 9000));
    assert!(
        of_type(&events, "compacted")
            .iter()
            .any(|event| event["agent"] == "main/agent-1"),
        "the child compacted against its own window"
    );
    let main_windows: Vec<&Value> = of_type(&events, "context")
        .into_iter()
        .filter(|event| event["agent"] == "main")
        .collect();
    assert!(
        !main_windows.is_empty(),
        "the main agent reported its context"
    );
    assert!(main_windows.iter().all(|event| event["window"] == 200_000));
    let child_requests = server.requests_for("SMALL-CHILD");
    assert!(!child_requests.is_empty(), "the child made requests");
    assert!(
        child_requests
            .iter()
            .all(|request| request.model() == "small-model")
    );
}

/// A spawned child runs while its parent's history compacts (the spawn
/// call and its agent id are summarised away): the child's end still
/// reaches the parent, and `wait` returns its text and the harness's
/// evidence footer. The child waits for a flag the parent writes only
/// after enough reads that its history had to compact, so the order does
/// not depend on timing.
#[test]
fn a_spawned_childs_result_reaches_the_parent_that_compacted_while_it_ran() {
    const WINDOW: u64 = 8_000;
    // A window this small gets the background-agent tools in full, no
    // ToolSearch step (issue 45).
    let mut parent: Vec<Step> = vec![Step::tool_call(
        "spawn_agent",
        json!({"message": "FLAG-WAITER: wait for compacted.flag, then report"}),
    )];
    parent.extend((0..24).map(reading_turn));
    parent.push(Step::tool_call(
        "Bash",
        json!({"command": "touch compacted.flag"}),
    ));
    parent.push(Step::tool_call(
        "wait",
        json!({"ids": ["agent-1"], "timeout_ms": 30_000}),
    ));
    parent.push(Step::text("parent done"));
    let (env, server) = setup(
        Script::new()
            .conversation("survey while a child waits", parent)
            .conversation(
                "FLAG-WAITER",
                vec![
                    Step::tool_call(
                        "Bash",
                        json!({"command": "for i in $(seq 600); do [ -f compacted.flag ] && break; sleep 0.05; done; test -f compacted.flag"}),
                    ),
                    Step::text("CHILD-RESULT: the flag appeared after the parent compacted"),
                ],
            )
            .context_window(WINDOW)
            .summarizer(HANDOVER, "FACT-"),
    );
    data_files(&env, 24, 6_000);
    project_config(
        &env,
        &format!("model_context_window = {WINDOW}\nmax_tokens = 1000\n"),
    );
    let out = exec(
        &env,
        &server,
        &[
            "-c",
            "agents.wait_min_ms=50",
            "--json",
            "--max-turns",
            "40",
            "survey while a child waits",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let events = out.events();
    assert_nothing_lost(&events);
    let position = |wanted: &dyn Fn(&Value) -> bool| events.iter().position(wanted);
    // Summarised, not only cleared: the spawn call is gone from the history.
    let compacted = position(&|event| {
        event["type"] == "compacted" && event["agent"] == "main" && event["summary"].is_string()
    })
    .expect("the parent's history was summarised");
    let child_ended =
        position(&|event| event["type"] == "agent_ended" && event["child"] == "main/agent-1")
            .expect("the child ended");
    assert!(
        compacted < child_ended,
        "the parent compacted while the child ran"
    );
    // `wait`, after the compaction, still has the child's whole record.
    let waited = events
        .iter()
        .find(|event| {
            event["type"] == "tool_call_finished"
                && event["agent"] == "main"
                && event["name"] == "wait"
        })
        .expect("the parent waited");
    assert_eq!(waited["is_error"], false, "{waited}");
    let waited: Value = serde_json::from_str(waited["content"].as_str().unwrap()).unwrap();
    assert_eq!(waited["status"]["agent-1"], "completed", "{waited}");
    let details = &waited["details"]["agent-1"];
    assert_eq!(
        details["last_output"], "CHILD-RESULT: the flag appeared after the parent compacted",
        "{details}"
    );
    let evidence = details["evidence"].as_str().unwrap_or_default();
    assert!(
        evidence.starts_with("[alcove evidence] status: completed | turns: 2 |"),
        "{evidence}"
    );
    assert!(evidence.contains("(exit 0)"), "{evidence}");
    // The parent's last request carries the result, and no longer the
    // spawn call that started the child.
    let last = server.requests().pop().unwrap();
    assert!(
        last.body["messages"]
            .to_string()
            .contains("CHILD-RESULT: the flag appeared"),
        "the parent's last request lost the child's result"
    );
    let spawn_calls = last.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|message| message["content"].as_array().into_iter().flatten())
        .filter(|block| block["type"] == "tool_use" && block["name"] == "spawn_agent")
        .count();
    assert_eq!(spawn_calls, 0, "the spawn call was compacted away");
    server.assert_script_finished();
}
