//! The model's `Workflow` tool: the parent model writes a script, the run
//! goes on in the background with the parent as every agent's parent, and
//! `wait` on the run id brings the script's value back; the permission
//! gate decides the call like a command, with the plan in the request.

use alcove_testkit::{Script, Step, from_last_result};
use serde_json::{Value, json};

use crate::support::{exec, load, parent_results, setup};

const PAIR: &str = "export const meta = { name: 'pair', description: 'two agents side by side', phases: [{ title: 'Ask' }] }\n\
phase('Ask')\n\
const [a, b] = await parallel([() => agent('[kid-a] say a', { label: 'a' }), () => agent('[kid-b] say b', { label: 'b' })])\n\
return { a, b }\n";

#[test]
fn the_models_workflow_call_brings_the_scripts_value_back_to_it() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "[parent] run the pair",
                vec![
                    load("Workflow,wait"),
                    Step::tool_call("Workflow", json!({"script": PAIR, "args": {"k": 1}})),
                    Step::tool_call(
                        "wait",
                        json!({"ids": [from_last_result("run_id")], "timeout_ms": 60_000}),
                    ),
                    Step::text("the pair answered"),
                ],
            )
            .conversation("[kid-a]", vec![Step::text("alpha")])
            .conversation("[kid-b]", vec![Step::text("beta")]),
    );
    let out = exec(
        &env,
        &server,
        &["--allow", "Workflow", "--json", "[parent] run the pair"],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    server.assert_script_finished();
    let results = parent_results(&server, "[parent] run the pair");
    let (started, text, is_error) = &results[0];
    assert!(!is_error, "{text}");
    assert_eq!(started["status"], "running", "{text}");
    let run_id = started["run_id"].as_str().unwrap();
    assert!(run_id.starts_with("wf_"), "{text}");
    let (waited, text, is_error) = &results[1];
    assert!(!is_error, "{text}");
    assert_eq!(waited["timed_out"], false, "{text}");
    assert_eq!(waited["status"][run_id], "completed", "{text}");
    assert_eq!(
        waited["runs"][run_id]["result"],
        json!({"a": "alpha", "b": "beta"}),
        "{text}"
    );
    // Each agent() was a child of the calling agent, with the framing and
    // without the Workflow tool.
    let kid = &server.requests_for("[kid-a]")[0];
    assert!(
        kid.first_user_message_text()
            .contains("one agent of a workflow")
    );
    assert!(!kid.tool_names().contains(&"Workflow".to_owned()));
    let events = out.events();
    let children = events
        .iter()
        .filter(|event| event["type"] == "agent_started" && event["agent"] == "main")
        .count();
    assert_eq!(children, 2, "{}", out.stdout);
    // The run's folder keeps its args and end, as a resume needs them.
    let dir = started["dir"].as_str().unwrap();
    let run: Value =
        serde_json::from_str(&std::fs::read_to_string(format!("{dir}/run.json")).unwrap()).unwrap();
    assert_eq!(run["status"], "completed");
    assert_eq!(run["args"], json!({"k": 1}));
}

#[test]
fn a_workflow_in_the_default_mode_is_refused_with_its_plan_and_nothing_runs() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "[parent] try the pair",
                vec![
                    load("Workflow"),
                    Step::tool_call("Workflow", json!({"script": PAIR})),
                    Step::text("it was refused"),
                ],
            )
            .conversation("[kid-", vec![Step::text("never")]),
    );
    let out = exec(&env, &server, &["--json", "[parent] try the pair"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let results = parent_results(&server, "[parent] try the pair");
    let (_, text, is_error) = &results[0];
    assert!(is_error, "{text}");
    assert!(text.starts_with("Permission denied"), "{text}");
    assert!(text.contains("--allow 'Workflow'"), "{text}");
    // The plan the approval was asked with: name, phases, call sites, caps.
    assert!(
        text.contains("workflow pair — two agents side by side"),
        "{text}"
    );
    assert!(text.contains("phases: Ask"), "{text}");
    assert!(text.contains("agent() call sites: 1"), "{text}");
    assert!(
        text.contains("line 3: const [a, b] = await parallel("),
        "{text}"
    );
    assert!(text.contains("agents at once"), "{text}");
    assert!(server.requests_for("[kid-").is_empty(), "an agent started");
}

#[test]
fn exec_waits_for_a_run_the_main_agent_left_going_and_gives_it_the_result() {
    let script = PAIR.replace("[kid-", "[late-");
    let (env, server) = setup(
        Script::new()
            .conversation(
                "[parent] start the pair and go",
                vec![
                    load("Workflow"),
                    Step::tool_call("Workflow", json!({"script": script})),
                    Step::text("started it"),
                    Step::text("the pair said alpha and beta"),
                ],
            )
            .conversation("[late-a]", vec![Step::text("alpha").delay(300)])
            .conversation("[late-b]", vec![Step::text("beta").delay(300)]),
    );
    let out = exec(
        &env,
        &server,
        &["--allow", "Workflow", "[parent] start the pair and go"],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    server.assert_script_finished();
    assert_eq!(out.stdout.trim(), "the pair said alpha and beta");
    let requests = server.requests_for("[parent] start the pair and go");
    let last = requests.last().unwrap().last_user_text();
    assert!(last.contains("workflow_runs"), "{last}");
    assert!(last.contains("\"alpha\""), "{last}");
}

/// Resuming a run that is still going is refused: it would start a second
/// run on the same folder and journal. The first run goes on and ends.
#[test]
fn resuming_a_run_that_is_still_running_is_refused() {
    let script = PAIR.replace("[kid-", "[busy-");
    let (env, server) = setup(
        Script::new()
            .conversation(
                "[parent] start and resume",
                vec![
                    load("Workflow"),
                    Step::tool_call("Workflow", json!({"script": script})),
                    Step::tool_call(
                        "Workflow",
                        json!({"resumeFromRunId": from_last_result("run_id")}),
                    ),
                    Step::text("left it running"),
                    Step::text("the pair said alpha and beta"),
                ],
            )
            .conversation("[busy-a]", vec![Step::text("alpha").delay(1_500)])
            .conversation("[busy-b]", vec![Step::text("beta").delay(1_500)]),
    );
    let out = exec(
        &env,
        &server,
        &["--allow", "Workflow", "[parent] start and resume"],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    server.assert_script_finished();
    let results = parent_results(&server, "[parent] start and resume");
    let (started, text, is_error) = &results[0];
    assert!(!is_error, "{text}");
    let run_id = started["run_id"].as_str().unwrap();
    let (_, text, is_error) = &results[1];
    assert!(is_error, "{text}");
    assert!(
        text.contains(&format!("run {run_id} is still running")),
        "{text}"
    );
    // Only the first run's two agents ran.
    assert_eq!(server.requests_for("[busy-a]").len(), 1);
    assert_eq!(server.requests_for("[busy-b]").len(), 1);
}

/// `[batch] runner = "inprocess"` said in so many words keeps the model's
/// workflow agents in this process even with `agents.command` set: every
/// batch of children follows one rule (the model's tools fell back to the
/// command before).
#[test]
fn batch_runner_inprocess_keeps_the_models_workflow_agents_here() {
    use super::runners::{pids, write_remote};
    let script = PAIR.replace("[kid-", "[here-");
    let (env, server) = setup(
        Script::new()
            .conversation(
                "[parent] run it here",
                vec![
                    load("Workflow,wait"),
                    Step::tool_call("Workflow", json!({"script": script})),
                    Step::tool_call(
                        "wait",
                        json!({"ids": [from_last_result("run_id")], "timeout_ms": 60_000}),
                    ),
                    Step::text("done"),
                ],
            )
            .conversation("[here-a]", vec![Step::text("alpha")])
            .conversation("[here-b]", vec![Step::text("beta")]),
    );
    let remote = write_remote(&env);
    let out = crate::support::finish(
        crate::support::exec_command(
            &env,
            &server,
            &[
                "-c",
                "batch.runner=inprocess",
                "--allow",
                "Workflow",
                "[parent] run it here",
            ],
        )
        .env("ALCOVE_SUBAGENT_COMMAND", &remote)
        .spawn()
        .unwrap(),
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    server.assert_script_finished();
    let results = parent_results(&server, "[parent] run it here");
    let (waited, text, _) = &results[1];
    let run_id = results[0].0["run_id"].as_str().unwrap();
    assert_eq!(waited["status"][run_id], "completed", "{text}");
    assert!(pids(&env).is_empty(), "an agent ran through agents.command");
}
