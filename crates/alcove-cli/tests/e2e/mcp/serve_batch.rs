//! `spawn_batch` over `alcove mcp serve` (issue 48): the same results as
//! when alcove's own model calls it, checked by running one batch both ways.

use alcove_testkit::{FakeServer, Script, Step};
use serde_json::{Value, json};

use super::serve::client;
use super::{BYPASS, test_env};
use crate::support::{exec, load_deferred, parent_results};

/// Two tasks: one runs a command and reports, one fails its command and reports.
fn tasks() -> Value {
    json!({"tasks": [
        {"id": "b-1", "description": "count files", "prompt": "[b-1] count the files"},
        {"id": "b-2", "description": "read a note", "prompt": "[b-2] read the note"}
    ]})
}

fn with_workers(script: Script) -> Script {
    script
        .conversation(
            "[b-1]",
            vec![
                Step::tool_call("Bash", json!({"command": "ls | wc -l"})),
                Step::text("b-1: counted"),
            ],
        )
        .conversation(
            "[b-2]",
            vec![
                Step::tool_call("Bash", json!({"command": "cat missing-note.txt"})),
                Step::text("b-2: no note"),
            ],
        )
}

/// What a batch's results say, less what differs between two sessions
/// (the results file's path).
fn comparable(mut value: Value) -> Value {
    if let Some(object) = value.as_object_mut() {
        object.remove("results");
        for (_, inner) in object.iter_mut() {
            *inner = comparable(inner.take());
        }
    }
    value
}

#[test]
fn spawn_batch_and_wait_over_mcp_return_what_alcoves_own_model_gets() {
    // Over MCP.
    let env = test_env();
    let server = FakeServer::start(with_workers(Script::new()));
    let out = client(&env, &server, &["batch", &tasks().to_string()], &BYPASS);
    let spawned = &out["spawned"];
    assert_eq!(spawned["is_error"], false, "{out}");
    let waited = &out["waited"]["structured"];
    assert_eq!(waited["status"]["batch-1"], "completed", "{out}");
    let view = &waited["batches"]["batch-1"];
    assert_eq!(view["counts"]["completed"], 2, "{out}");
    let table = view["table"].as_str().unwrap();
    assert!(
        table.contains("b-1") && table.contains("b-1: counted"),
        "{table}"
    );
    assert!(table.contains("b-2: no note"), "{table}");
    let results = std::path::Path::new(view["results"].as_str().unwrap());
    assert!(results.exists(), "{}", results.display());
    // Each task is one of the server's children in list_agents.
    let rows = out["listed"]["structured"]["agents"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{out}");
    for row in rows {
        assert_eq!(row["started_by"], "spawn_batch", "{row}");
        assert_eq!(row["turns"], 2, "{row}");
    }

    // The same batch from alcove's own model.
    let own = test_env();
    let parent = "PARENT-BATCH run the batch";
    let own_server = FakeServer::start(with_workers(Script::new().conversation(
        "PARENT-BATCH",
        vec![
            load_deferred(),
            Step::tool_call("spawn_batch", tasks()),
            Step::tool_call("wait", json!({"ids": ["batch-1"], "timeout_ms": 60000})),
            Step::text("batch done"),
        ],
    )));
    let ran = exec(&own, &own_server, &[BYPASS[0], BYPASS[1], parent]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let parsed: Vec<Value> = parent_results(&own_server, "PARENT-BATCH")
        .into_iter()
        .map(|(json, text, _)| {
            assert!(!json.is_null(), "a result that is not JSON: {text}");
            json
        })
        .collect();
    assert_eq!(
        comparable(parsed[0].clone()),
        comparable(out["spawned"]["structured"].clone()),
        "spawn_batch's result"
    );
    assert_eq!(
        comparable(parsed[1].clone()),
        comparable(waited.clone()),
        "wait's result"
    );
}
