//! `Workflow` over `alcove mcp serve` (issue 48): a client starts a run
//! and `wait`s on its id as alcove's own model does, and each `agent()` is
//! one of the server's children.

use alcove_testkit::{FakeServer, Script, Step};
use serde_json::json;

use super::serve::client;
use super::test_env;

const PAIR: &str = "export const meta = { name: 'pair', description: 'two agents side by side' }\n\
const [a, b] = await parallel([() => agent('[kid-a] say a'), () => agent('[kid-b] say b')])\n\
return { a, b }\n";

#[test]
fn a_clients_workflow_runs_and_wait_brings_its_value_back() {
    let env = test_env();
    let server = FakeServer::start(
        Script::new()
            .conversation("[kid-a]", vec![Step::text("alpha")])
            .conversation("[kid-b]", vec![Step::text("beta")]),
    );
    let out = client(
        &env,
        &server,
        &["workflow", &json!({"script": PAIR}).to_string()],
        &[
            "--permission-mode",
            "bypassPermissions",
            "-c",
            "tool_profile=full",
        ],
    );
    let started = &out["started"];
    assert_eq!(started["is_error"], false, "{out}");
    let text: serde_json::Value = serde_json::from_str(started["text"].as_str().unwrap()).unwrap();
    assert_eq!(text["status"], "running", "{out}");
    let run = text["run_id"].as_str().unwrap();
    assert!(run.starts_with("wf_"), "{out}");
    let waited = &out["waited"];
    assert_eq!(waited["is_error"], false, "{out}");
    let waited: serde_json::Value = serde_json::from_str(waited["text"].as_str().unwrap()).unwrap();
    assert_eq!(waited["status"][run], "completed", "{waited}");
    assert_eq!(
        waited["runs"][run]["result"],
        json!({"a": "alpha", "b": "beta"}),
        "{waited}"
    );
    // `list_agents` names each agent's run as what started it.
    let listed = &out["listed"]["structured"]["agents"];
    let agents = listed.as_array().unwrap();
    assert_eq!(agents.len(), 2, "{listed}");
    assert!(
        agents.iter().all(|agent| agent["started_by"] == "Workflow"),
        "{listed}"
    );
    server.assert_script_finished();
}
