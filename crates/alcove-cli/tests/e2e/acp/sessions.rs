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
    env.write_file(
        ".alcove/commands/review.md",
        "---\ndescription: Review the change\nargument-hint: <file>\n---\nReview $ARGUMENTS\n",
    );
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
    assert_eq!(seen.stop_reasons(), ["end_turn"], "{}", seen.stderr);

    // The commands a user may run, /init and the custom one.
    let commands = seen.updates("available_commands_update");
    let names: Vec<&str> = commands[0].1["availableCommands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|command| command["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["init", "review"]);
    assert_eq!(
        commands[0].1["availableCommands"][1]["description"],
        "Review the change"
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

#[test]
fn cancel_mid_turn_answers_every_call_and_leaves_no_process() {
    let (env, server) = setup(Script::new().conversation(
        "ACP CANCEL",
        vec![
            Step::tool_call("Bash", json!({"command": "echo $$ > pid.txt; sleep 30"})),
            Step::text("never reached"),
        ],
    ));
    let seen = sdk_client(
        &env,
        &server,
        &json!({
            "args": ["--permission-mode", "bypassPermissions"],
            "steps": [
                {"op": "new"},
                {"op": "prompt", "text": "ACP CANCEL the sleep", "cancelWhen": {"toolTitle": "sleep 30"}},
            ],
        }),
    );
    assert_eq!(seen.of("cancel").len(), 1, "{:?}", seen.lines);
    assert_eq!(seen.stop_reasons(), ["cancelled"], "{}", seen.stderr);
    let call = &seen.updates("tool_call")[0].1;
    let last = seen
        .updates("tool_call_update")
        .into_iter()
        .rfind(|(_, update)| update["toolCallId"] == call["toolCallId"])
        .unwrap()
        .1;
    assert_eq!(last["status"], "failed", "{last}");
    let pid: u32 = env.read_file("pid.txt").trim().parse().unwrap();
    assert!(
        !process_alive(pid),
        "the command's shell {pid} is still running"
    );
    assert_eq!(seen.exit_code(), Some(0));
    assert_nothing_lost(&transcript(&env));
}

#[test]
fn an_approval_left_unanswered_by_a_client_that_disconnects_denies() {
    let (env, server) = setup(Script::new().conversation(
        "ACP GONE",
        vec![
            Step::tool_call("Write", json!({"file_path": "gone.txt", "content": "x\n"})),
            Step::text("The write was refused."),
        ],
    ));
    let seen = sdk_client(
        &env,
        &server,
        &json!({
            "permissions": ["disconnect"],
            "steps": [{"op": "new"}, {"op": "prompt", "text": "ACP GONE write it"}],
        }),
    );
    assert_eq!(seen.of("disconnect").len(), 1, "{:?}", seen.lines);
    assert_eq!(seen.exit_code(), Some(0), "{}", seen.stderr);
    assert!(!env.path("gone.txt").exists());
    let events = transcript(&env);
    assert_nothing_lost(&events);
    let denied = events
        .iter()
        .filter(|event| event["type"] == "tool_call_finished" && event["name"] == "Write")
        .map(|event| event["content"].as_str().unwrap().to_owned())
        .next()
        .unwrap();
    assert!(denied.contains("disconnected"), "{denied}");
}

#[test]
fn a_mode_switch_is_announced_and_binds_the_next_turn() {
    let (env, server) = setup(Script::new().conversation(
        "ACP PLAN",
        vec![
            Step::tool_call("Write", json!({"file_path": "plan.txt", "content": "x\n"})),
            Step::text("Planned only."),
        ],
    ));
    let seen = sdk_client(
        &env,
        &server,
        &json!({
            "steps": [{"op": "new"}, {"op": "mode", "mode": "plan"}, {"op": "prompt", "text": "ACP PLAN it"}],
        }),
    );
    let modes = &seen.responses("new")[0]["modes"];
    assert_eq!(modes["currentModeId"], "default", "{modes}");
    let ids: Vec<&str> = modes["availableModes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|mode| mode["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "default",
            "acceptEdits",
            "plan",
            "bypassPermissions",
            "dontAsk"
        ]
    );
    let announced = seen.updates("current_mode_update");
    assert_eq!(announced.len(), 1);
    assert_eq!(announced[0].1["currentModeId"], "plan");
    // A client that reads config options hears of it too.
    let options = seen.updates("config_option_update");
    assert_eq!(options.len(), 1);
    let mode = options[0].1["configOptions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|option| option["id"] == "mode")
        .unwrap();
    assert_eq!(mode["currentValue"], "plan");
    assert!(seen.of("permission").is_empty(), "plan mode asks nothing");
    assert!(!env.path("plan.txt").exists());
    assert_eq!(seen.stop_reasons(), ["end_turn"]);
}

#[test]
fn an_earlier_session_is_listed_and_loaded_with_its_history_replayed() {
    let (env, server) = setup(Script::new().conversation(
        "ACP LOAD first",
        vec![
            Step::tool_call("Read", json!({"file_path": "color.txt"})),
            Step::text("Remembered: blue."),
            Step::text("Still blue."),
        ],
    ));
    env.write_file("color.txt", "blue\n");
    let first = sdk_client(
        &env,
        &server,
        &json!({"steps": [{"op": "new"}, {"op": "prompt", "text": "ACP LOAD first: the color"}]}),
    );
    let id = new_session_id(&first);
    let second = sdk_client(
        &env,
        &server,
        &json!({"steps": [{"op": "list"}, {"op": "load", "id": id}, {"op": "prompt", "text": "and now?"}]}),
    );
    let listed = &second.responses("list")[0]["sessions"];
    assert_eq!(listed[0]["sessionId"], id.as_str(), "{listed}");
    assert_eq!(
        listed[0]["cwd"],
        env.workspace()
            .canonicalize()
            .unwrap()
            .display()
            .to_string()
    );
    assert!(
        listed[0]["title"]
            .as_str()
            .unwrap()
            .contains("ACP LOAD first")
    );
    assert!(
        second.responses("load")[0].get("error").is_none(),
        "{:?}",
        second.lines
    );
    // The history came back as updates before the load's answer.
    let users = second.updates("user_message_chunk");
    assert_eq!(users[0].0, id);
    assert_eq!(users[0].1["content"]["text"], "ACP LOAD first: the color");
    let replayed_call = &second.updates("tool_call")[0].1;
    assert_eq!(replayed_call["kind"], "read");
    let load_at = second
        .lines
        .iter()
        .position(|line| line["step"] == "load")
        .unwrap();
    let first_update = second
        .lines
        .iter()
        .position(|line| line["seen"] == "update")
        .unwrap();
    assert!(first_update < load_at);
    assert_eq!(second.text_on(&id), "Remembered: blue.Still blue.");
    // The continued turn carried the loaded conversation.
    let last = server.requests_for("ACP LOAD first").pop().unwrap();
    assert_eq!(last.last_user_text(), "and now?");
    assert_eq!(second.stop_reasons(), ["end_turn"]);
}

#[test]
fn acpx_runs_a_session_with_a_tool_call_to_its_end() {
    let (env, server) = setup(Script::new().conversation(
        "ACPX hello",
        vec![
            Step::tool_call("Read", json!({"file_path": "hello.txt"})),
            Step::text("acpx got: hi there"),
        ],
    ));
    env.write_file("hello.txt", "hi there\n");
    let acpx = super::installed(super::clients_dir().join("node_modules/acpx/dist/cli.js"));
    let agent = format!("{} acp", crate::support::alcove().display());
    let mut command = env.command(std::path::Path::new("node"), &server);
    command
        .env("HOME", env.home())
        .arg(acpx)
        .args([
            "--agent",
            &agent,
            "--approve-all",
            "--format",
            "json",
            "--timeout",
            "60",
        ])
        .args([
            "--cwd",
            &env.workspace().display().to_string(),
            "exec",
            "ACPX hello, read it",
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let out = crate::support::finish(command.spawn().unwrap());
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    // acpx prints the wire, a JSON-RPC message per line.
    let messages: Vec<serde_json::Value> = out
        .stdout
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    let updates: Vec<&serde_json::Value> = messages
        .iter()
        .filter(|message| message["method"] == "session/update")
        .map(|message| &message["params"]["update"])
        .collect();
    let text: String = updates
        .iter()
        .filter(|update| update["sessionUpdate"] == "agent_message_chunk")
        .map(|update| update["content"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(text, "acpx got: hi there");
    assert!(
        updates
            .iter()
            .any(|update| update["sessionUpdate"] == "tool_call"
                && update["title"] == "Read hello.txt"),
        "{}",
        out.stdout
    );
    assert!(
        messages
            .iter()
            .any(|message| message["result"]["stopReason"] == "end_turn"),
        "{}",
        out.stdout
    );
    server.assert_script_finished();
}
