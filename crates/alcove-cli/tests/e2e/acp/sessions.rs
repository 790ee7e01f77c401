//! Sessions through the SDK client: a prompt's streamed text and tool calls
//! (kinds, locations, diffs, command output), approvals answered
//! allow-always, reject and by disconnecting, cancel mid-turn, modes, and
//! load and list of an earlier session.

use alcove_testkit::{Block, Script, Step};
use serde_json::json;

use super::{new_session_id, sdk_client};
use crate::support::{assert_nothing_lost, process_alive, setup, transcript};

#[test]
fn a_prompt_streams_text_and_tool_calls_with_diffs_and_asks_before_edits() {
    let (env, server) = setup(Script::new().conversation(
        "ACP EDIT",
        vec![
            Step::tool_call(
                "Write",
                json!({"file_path": "notes.txt", "content": "one\n"}),
            ),
            Step::tool_call(
                "Edit",
                json!({"file_path": "notes.txt", "old_string": "one", "new_string": "two"}),
            ),
            Step::tool_call("Write", json!({"file_path": "other.txt", "content": "x\n"})),
            Step::tool_call("Bash", json!({"command": "echo hello-from-bash"})),
            Step::reply(vec![Block::text("All done: notes.txt says two.")]).piece_chars(5),
        ],
    ));
    let seen = sdk_client(
        &env,
        &server,
        &json!({
            "args": ["--allow", "Bash(echo:*)"],
            "permissions": ["allow-always", "reject"],
            "steps": [{"op": "new"}, {"op": "prompt", "text": "ACP EDIT the notes"}],
        }),
    );
    let session = new_session_id(&seen);
    let init = &seen.responses("initialize")[0];
    assert_eq!(init["protocolVersion"], 1, "{init}");
    assert_eq!(init["agentCapabilities"]["loadSession"], true);
    assert_eq!(init["agentCapabilities"]["mcpCapabilities"]["http"], true);
    assert_eq!(init["authMethods"], json!([]));
    assert_eq!(
        seen.responses("prompt"),
        vec![json!({"stopReason": "end_turn"})],
        "{}",
        seen.stderr
    );

    // The text came in pieces, as the model streamed it.
    let chunks = seen.updates("agent_message_chunk");
    assert!(chunks.len() > 1, "{chunks:?}");
    assert_eq!(seen.text_on(&session), "All done: notes.txt says two.");

    // Each call is announced with its kind, location and arguments, then finished.
    let calls = seen.updates("tool_call");
    let kinds: Vec<&str> = calls
        .iter()
        .map(|(_, call)| call["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["edit", "edit", "edit", "execute"]);
    let notes = env.path("notes.txt").display().to_string();
    assert_eq!(calls[0].1["locations"][0]["path"], notes);
    assert_eq!(calls[1].1["locations"][0]["line"], 1);
    assert_eq!(calls[0].1["rawInput"]["content"], "one\n");
    let finished = seen.updates("tool_call_update");
    let of = |id: &str| {
        finished
            .iter()
            .filter(|(_, update)| update["toolCallId"] == id && update["status"].is_string())
            .map(|(_, update)| *update)
            .next_back()
            .unwrap()
    };
    let edit = of(calls[1].1["toolCallId"].as_str().unwrap());
    assert_eq!(edit["status"], "completed");
    assert_eq!(
        edit["content"][0],
        json!({"type": "diff", "path": notes, "oldText": "one\n", "newText": "two\n"})
    );
    let bash = of(calls[3].1["toolCallId"].as_str().unwrap());
    assert!(
        bash["content"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("hello-from-bash"),
        "{bash}"
    );
    let rejected = of(calls[2].1["toolCallId"].as_str().unwrap());
    assert_eq!(rejected["status"], "failed");

    // Two approvals were asked: the first Write (allowed always, with its
    // rule shown), the Write of another file (rejected); the Edit was
    // covered by the rule.
    let asks = seen.of("permission");
    assert_eq!(asks.len(), 2, "{asks:?}");
    let options: Vec<&str> = asks[0]["params"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|option| option["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        options,
        ["Allow once", "Always allow: Edit(notes.txt)", "Reject"]
    );
    assert_eq!(asks[0]["params"]["sessionId"], session);
    assert_eq!(
        asks[0]["params"]["toolCall"]["toolCallId"],
        calls[0].1["toolCallId"]
    );
    assert_eq!(
        asks[1]["params"]["toolCall"]["rawInput"]["file_path"],
        "other.txt"
    );
    assert_eq!(env.read_file("notes.txt"), "two\n");
    assert!(!env.path("other.txt").exists());
    // The model read why the Write was refused.
    let last = server.requests_for("ACP EDIT").pop().unwrap();
    let results = last.tool_results();
    assert!(
        results
            .iter()
            .any(|(_, text, error)| *error && text.contains("rejected in the editor")),
        "{results:?}"
    );
    assert_eq!(seen.exit_code(), Some(0));
    assert_nothing_lost(&transcript(&env));
}
