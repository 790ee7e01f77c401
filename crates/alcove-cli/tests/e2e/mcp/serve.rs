//! `alcove mcp serve` driven by a real MCP client (issue 48): PyPI's `mcp`,
//! the official Python SDK, in `tests/mcp/serve_client.py`, starts the
//! server over stdio against the fake model server and calls `delegate`.

use std::ffi::OsString;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use alcove_testkit::{FakeServer, Script, Step, TestEnv};
use serde_json::{Value, json};

use super::{BYPASS, servers_dir, test_env, venv_python};
use crate::support::{alcove, finish, read_jsonl, transcript, wait_gone};

/// Runs the client's `scenario` against `alcove mcp serve SERVE_ARGS` in
/// the test's workspace and returns what it printed.
pub(super) fn client(
    env: &TestEnv,
    server: &FakeServer,
    scenario: &[&str],
    serve_args: &[&str],
) -> Value {
    let mut target: Vec<OsString> = vec![alcove().into(), "mcp".into(), "serve".into()];
    target.extend(serve_args.iter().map(OsString::from));
    run_client(env, server, scenario, &target)
}

/// Runs the client's `scenario` against `target` (the server command over
/// stdio, or `--http URL TOKEN`) and returns the JSON it printed last.
pub(super) fn run_client(
    env: &TestEnv,
    server: &FakeServer,
    scenario: &[&str],
    target: &[OsString],
) -> Value {
    let mut command = env.command(Path::new(&venv_python()), server);
    command
        .arg(servers_dir().join("serve_client.py"))
        .args(scenario)
        .arg("--")
        .args(target)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let out = finish(command.spawn().unwrap());
    assert_eq!(
        out.code, 0,
        "client failed:\n{}\n{}",
        out.stdout, out.stderr
    );
    let line = out.stdout.lines().last().unwrap_or_default();
    serde_json::from_str(line).unwrap_or_else(|err| panic!("{err}: {}", out.stdout))
}

fn delegate(prompt: &str) -> String {
    json!({"prompt": prompt, "description": "a test task"}).to_string()
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .unwrap_or(&Vec::new())
        .iter()
        .filter_map(|item| item.as_str().map(str::to_owned))
        .collect()
}

#[test]
fn tools_list_offers_delegate_with_its_schemas() {
    let env = test_env();
    let server = FakeServer::start(Script::new());
    let out = client(&env, &server, &["list"], &[]);
    assert_eq!(out["server"], "alcove");
    assert_eq!(out["set_level"], true, "logging/setLevel is answered");
    let tools = out["tools"].as_array().unwrap();
    let delegate = tools
        .iter()
        .find(|tool| tool["name"] == "delegate")
        .unwrap();
    assert!(
        delegate["description"]
            .as_str()
            .unwrap()
            .contains("evidence footer"),
        "{delegate}"
    );
    assert_eq!(delegate["inputSchema"]["required"], json!(["prompt"]));
    for field in ["agent_type", "isolation", "max_turns", "timeout_secs"] {
        assert!(
            delegate["inputSchema"]["properties"][field].is_object(),
            "{field}"
        );
    }
    assert!(delegate["outputSchema"]["properties"]["status"].is_object());
    // The asynchronous face: alcove's own tools, with their own schemas.
    let names: Vec<&str> = tools
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "delegate",
            "spawn_agent",
            "send_input",
            "wait",
            "close_agent",
            "spawn_batch",
            "retry_batch",
            "Workflow",
            "list_agents"
        ]
    );
    let list_agents = tools
        .iter()
        .find(|tool| tool["name"] == "list_agents")
        .unwrap();
    let row = &list_agents["outputSchema"]["properties"]["agents"]["items"]["properties"];
    for field in ["id", "description", "status", "turns", "tokens"] {
        assert!(row[field].is_object(), "{field}: {list_agents}");
    }
    for tool in &tools[1..] {
        let properties = tool["inputSchema"]["properties"].as_object();
        assert!(
            tool["name"] == "list_agents" || properties.is_some_and(|map| !map.is_empty()),
            "an input schema with its arguments: {tool}"
        );
        assert!(
            !tool["description"].as_str().unwrap_or_default().is_empty(),
            "{tool}"
        );
    }
    let wait = tools.iter().find(|tool| tool["name"] == "wait").unwrap();
    assert!(
        wait["inputSchema"]["properties"]["ids"].is_object(),
        "{wait}"
    );
    assert_eq!(server.request_count(), 0, "listing asks no model");
}

#[test]
fn delegate_returns_the_report_the_footer_and_the_end_record() {
    let env = test_env();
    env.write_file("notes.txt", "the notes\n");
    let notes = env.workspace().canonicalize().unwrap().join("notes.txt");
    let server = FakeServer::start(Script::new().conversation(
        "TASK-REPORT",
        vec![
            Step::tool_call("Bash", json!({"command": "printf hi > out.txt"})),
            Step::tool_call("Read", json!({"file_path": notes})),
            Step::text("REPORT: wrote out.txt and read the notes"),
        ],
    ));
    let out = client(
        &env,
        &server,
        &["delegate", &delegate("TASK-REPORT do the work")],
        &BYPASS,
    );
    let result = &out["result"];
    assert_eq!(result["is_error"], false, "{out}");
    let text = result["text"].as_str().unwrap();
    assert!(text.contains("REPORT: wrote out.txt"), "{text}");
    assert!(text.contains("[alcove evidence]"), "the footer: {text}");
    assert!(text.contains("printf hi > out.txt"), "{text}");
    // The end record, checked by the client against the output schema too.
    let record = &result["structured"];
    assert_eq!(record["status"], "completed", "{record}");
    assert_eq!(record["turns"], 3);
    assert_eq!(record["tool_calls"], 2);
    assert_eq!(
        record["commands"],
        json!([{"command": "printf hi > out.txt", "result": "exit 0"}])
    );
    assert_eq!(strings(&record["files_read"]), ["notes.txt"], "{record}");
    assert!(record["usage"]["budget_tokens"].as_u64().unwrap() > 0);
    // The report is in the record too: Claude Code gives its model the
    // structured content, not the text.
    assert_eq!(record["report"].as_str(), Some(text), "{record}");
    let child_transcript = record["transcript"].as_str().unwrap();
    assert!(Path::new(child_transcript).exists(), "{child_transcript}");
    assert_eq!(std::fs::read_to_string(env.path("out.txt")).unwrap(), "hi");
    // Progress while it worked, and the client's log saying how it ended.
    let progress = strings(&out["progress"]);
    assert!(
        progress.iter().any(|line| line.contains("Bash")),
        "{progress:?}"
    );
    assert!(
        progress.iter().any(|line| line.contains("turn 2")),
        "{progress:?}"
    );
    let logs = strings(&out["logs"]);
    assert!(
        logs.iter().any(|line| line.contains("ended: completed")),
        "{logs:?}"
    );
    // The server's session is one tree: its transcript starts and ends the child.
    let events = transcript(&env);
    let started = events
        .iter()
        .find(|event| event["type"] == "agent_started")
        .unwrap();
    assert_eq!(started["call_id"], "mcp-1");
    assert_eq!(started["transcript"], record["transcript"]);
    assert!(events.iter().any(|event| event["type"] == "agent_ended"));
    assert!(events.iter().any(|event| event["type"] == "session_ended"));
}

#[test]
fn a_deny_rule_of_the_server_binds_the_child() {
    let env = test_env();
    env.write_file("victim.txt", "keep me\n");
    let server = FakeServer::start(Script::new().conversation(
        "TASK-DENY",
        vec![
            Step::tool_call("Bash", json!({"command": "rm victim.txt"})),
            Step::text("could not remove it"),
        ],
    ));
    let out = client(
        &env,
        &server,
        &["delegate", &delegate("TASK-DENY remove victim.txt")],
        &[BYPASS[0], BYPASS[1], "--deny", "Bash(rm:*)"],
    );
    assert!(env.path("victim.txt").exists(), "the rule bound the child");
    let record = &out["result"]["structured"];
    assert_eq!(
        record["commands"],
        json!([{"command": "rm victim.txt", "result": "not run"}]),
        "{out}"
    );
    let requests = server.requests_for("TASK-DENY");
    let (_, result, _) = &requests[1].tool_results()[0];
    assert!(result.contains("Bash(rm:*)"), "{result}");
}

#[test]
fn a_bad_argument_is_a_tool_error_and_the_server_goes_on() {
    let env = test_env();
    let server = FakeServer::start(Script::new());
    for (args, named) in [
        (json!({"description": "no prompt"}), "prompt"),
        (json!({"prompt": "p", "max_turns": "many"}), "invalid type"),
        (
            json!({"prompt": "p", "agent_type": "no-such-type"}),
            "no-such-type",
        ),
        (
            json!({"prompt": "p", "isolation": "container"}),
            "container",
        ),
        (json!({"prompt": "p", "effort": "extreme"}), "extreme"),
    ] {
        let out = client(&env, &server, &["delegate", &args.to_string()], &[]);
        let result = &out["result"];
        assert_eq!(result["is_error"], true, "{args}: {out}");
        assert!(
            result["text"].as_str().unwrap().contains(named),
            "{args}: {out}"
        );
    }
    assert_eq!(server.request_count(), 0, "no child started");
}

#[test]
fn notifications_cancelled_stops_the_running_child() {
    let env = test_env();
    let server = FakeServer::start(Script::new().conversation(
        "TASK-SLEEP",
        vec![
            Step::tool_call(
                "Bash",
                json!({"command": "echo $$ > sleeper.pid; exec sleep 30"}),
            ),
            Step::text("slept"),
        ],
    ));
    let out = client(
        &env,
        &server,
        &["cancel", &delegate("TASK-SLEEP sleep a while"), "Bash"],
        &BYPASS,
    );
    assert_eq!(out["cancelled"], true, "{out}");
    // Measured, not asserted: from the client's cancel to the server's log line.
    eprintln!("cancel to the child's end: {} ms", out["cancel_to_end_ms"]);
    assert!(out.get("finished_before_cancel").is_none(), "{out}");
    let logs = strings(&out["logs"]);
    assert!(
        logs.iter().any(|line| line.contains("ended: cancelled")),
        "the child ended cancelled while the server ran: {logs:?}"
    );
    let ended = transcript(&env)
        .into_iter()
        .find(|event| event["type"] == "agent_ended")
        .unwrap();
    assert_eq!(ended["status"], "aborted", "{ended}");
    assert_eq!(
        server.requests_for("TASK-SLEEP").len(),
        1,
        "no turn after the cancel"
    );
    // The shell may have been stopped before it wrote its pid.
    let pid = std::fs::read_to_string(env.path("sleeper.pid")).unwrap_or_default();
    if let Ok(pid) = pid.trim().parse::<u32>() {
        wait_gone(pid, Duration::from_secs(10), "the sleep outlived its child");
    }
}

/// A `Write` in the default mode asks; the client's user answers.
fn elicited(answer: &str) -> (TestEnv, FakeServer, Value) {
    let env = test_env();
    let target = env.workspace().canonicalize().unwrap().join("asked.txt");
    let server = FakeServer::start(Script::new().conversation(
        "TASK-ASK",
        vec![
            Step::tool_call("Write", json!({"file_path": target, "content": "yes\n"})),
            Step::text("asked"),
        ],
    ));
    let out = client(
        &env,
        &server,
        &["elicit", &delegate("TASK-ASK write the file"), answer],
        &[],
    );
    let asked = strings(&out["elicitations"]);
    assert_eq!(asked.len(), 1, "{out}");
    assert!(asked[0].contains("Write"), "{asked:?}");
    (env, server, out)
}

#[test]
fn an_approval_goes_to_the_client_as_an_elicitation_and_a_yes_runs_the_call() {
    let (env, _server, out) = elicited("allow");
    assert_eq!(
        std::fs::read_to_string(env.path("asked.txt")).unwrap(),
        "yes\n",
        "{out}"
    );
    let written = strings(&out["result"]["structured"]["files_written"]);
    assert_eq!(written.len(), 1, "{out}");
}

#[test]
fn a_no_to_an_elicitation_is_a_refusal_the_child_reads() {
    let (env, server, out) = elicited("deny");
    assert!(!env.path("asked.txt").exists(), "{out}");
    let requests = server.requests_for("TASK-ASK");
    let (_, result, _) = &requests[1].tool_results()[0];
    assert!(result.contains("refused"), "{result}");
    assert_eq!(out["result"]["structured"]["status"], "completed");
}

#[test]
fn two_delegate_calls_run_at_once_in_the_servers_tree() {
    let env = test_env();
    // Each child marks its start and waits for the other's mark: two
    // calls run one after the other would never meet.
    let meet = |mine: &str, theirs: &str| {
        format!(
            "touch {mine}; for i in $(seq 300); do [ -f {theirs} ] && exit 0; sleep 0.1; done; exit 1"
        )
    };
    let server = FakeServer::start(
        Script::new()
            .conversation(
                "TASK-LEFT",
                vec![
                    Step::tool_call("Bash", json!({"command": meet("left.flag", "right.flag")})),
                    Step::text("left done"),
                ],
            )
            .conversation(
                "TASK-RIGHT",
                vec![
                    Step::tool_call("Bash", json!({"command": meet("right.flag", "left.flag")})),
                    Step::text("right done"),
                ],
            ),
    );
    let out = client(
        &env,
        &server,
        &[
            "concurrent",
            &delegate("TASK-LEFT meet the other"),
            &delegate("TASK-RIGHT meet the other"),
        ],
        &BYPASS,
    );
    for result in out["results"].as_array().unwrap() {
        let record = &result["structured"];
        assert_eq!(record["status"], "completed", "{out}");
        assert_eq!(record["commands"][0]["result"], "exit 0", "{out}");
    }
    // The request log: each child's first request came before the other's second.
    let order: Vec<String> = server
        .requests()
        .iter()
        .map(|request| request.first_user_message_text())
        .collect();
    let position = |task: &str, nth: usize| {
        order
            .iter()
            .enumerate()
            .filter(|(_, text)| text.contains(task))
            .nth(nth)
            .map(|(index, _)| index)
            .unwrap()
    };
    assert!(
        position("TASK-LEFT", 0) < position("TASK-RIGHT", 1),
        "{order:?}"
    );
    assert!(
        position("TASK-RIGHT", 0) < position("TASK-LEFT", 1),
        "{order:?}"
    );
    // Both in the server's one session, under one transcript folder.
    let events = transcript(&env);
    let children: Vec<&Value> = events
        .iter()
        .filter(|event| event["type"] == "agent_started")
        .collect();
    assert_eq!(children.len(), 2);
    let folders: Vec<_> = children
        .iter()
        .map(|event| {
            Path::new(event["transcript"].as_str().unwrap())
                .parent()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(folders[0], folders[1]);
    for event in children {
        let lines = read_jsonl(Path::new(event["transcript"].as_str().unwrap()));
        assert!(!lines.is_empty());
    }
    // `alcove report` shows the server's session as one tree with both.
    let page = env.home().join("report.html");
    let report = env
        .command(alcove(), &server)
        .args(["report", "--last", "--out"])
        .arg(&page)
        .output()
        .unwrap();
    assert!(report.status.success(), "{report:?}");
    let page = std::fs::read_to_string(page).unwrap();
    for shown in ["main/agent-1", "main/agent-2", "left done", "right done"] {
        assert!(page.contains(shown), "{shown} is not on the page");
    }
}

#[test]
fn spawn_agent_and_wait_are_alcoves_own_tools() {
    let env = test_env();
    let server = FakeServer::start(Script::new().conversation(
        "TASK-ASYNC",
        vec![
            Step::tool_call("Bash", json!({"command": "echo async"})),
            Step::text("ASYNC REPORT"),
        ],
    ));
    let out = client(
        &env,
        &server,
        &["async", "TASK-ASYNC run in the background"],
        &BYPASS,
    );
    let spawned = &out["spawned"]["structured"];
    assert_eq!(spawned["status"], "running", "{out}");
    let agent = spawned["agent_id"].as_str().unwrap();
    let waited = &out["waited"];
    assert_eq!(waited["is_error"], false, "{out}");
    let text = waited["text"].as_str().unwrap();
    assert!(text.contains("ASYNC REPORT"), "{text}");
    assert!(text.contains(agent), "{text}");
    assert!(text.contains("echo async"), "the evidence: {text}");
    assert_eq!(out["closed"]["structured"]["status"], "closed", "{out}");
    // Called as the server's top agent, on the one dispatch path.
    let events = transcript(&env);
    assert!(
        events
            .iter()
            .any(|event| event["type"] == "tool_call_started" && event["name"] == "spawn_agent"),
        "the session transcript records the call"
    );
}

#[test]
fn list_agents_lists_every_calls_children_with_status_turns_and_tokens() {
    let env = test_env();
    let server = FakeServer::start(
        Script::new()
            .conversation(
                "TASK-DONE",
                vec![
                    Step::tool_call("Bash", json!({"command": "echo done"})),
                    Step::text("DONE REPORT"),
                ],
            )
            .conversation(
                "TASK-HELD",
                vec![
                    Step::tool_call(
                        "Bash",
                        json!({"command": "for i in $(seq 600); do [ -f go.flag ] && exit 0; sleep 0.1; done; exit 1"}),
                    ),
                    Step::text("HELD REPORT"),
                ],
            ),
    );
    let out = client(
        &env,
        &server,
        &[
            "roster",
            &delegate("TASK-DONE finish at once"),
            "TASK-HELD wait for the flag",
        ],
        &BYPASS,
    );
    assert_eq!(
        out["delegated"]["structured"]["status"], "completed",
        "{out}"
    );
    let rows = |key: &str| out[key]["structured"]["agents"].as_array().unwrap().clone();
    let running = rows("while_running");
    assert_eq!(running.len(), 2, "{out}");
    let (done, held) = (&running[0], &running[1]);
    assert_eq!(done["id"], "agent-1", "{done}");
    assert_eq!(done["agent"], "main/agent-1");
    assert_eq!(done["description"], "a test task");
    assert_eq!(done["started_by"], "delegate");
    assert_eq!(done["status"], "completed");
    assert_eq!(done["turns"], 2);
    assert_eq!(
        done["tokens"], out["delegated"]["structured"]["usage"]["budget_tokens"],
        "the same tokens as the end record: {out}"
    );
    assert_eq!(
        done["transcript"],
        out["delegated"]["structured"]["transcript"]
    );
    assert_eq!(held["id"], "agent-2", "the id wait takes: {held}");
    assert_eq!(
        out["waited"]["structured"]["status"]["agent-2"],
        "completed"
    );
    assert_eq!(held["started_by"], "spawn_agent", "{held}");
    assert_eq!(held["status"], "running", "{held}");
    assert!(
        held["description"].as_str().unwrap().contains("TASK-HELD"),
        "{held}"
    );
    let after = rows("after");
    assert_eq!(after.len(), 2, "{out}");
    assert_eq!(after[0], running[0], "an ended child does not change");
    assert_eq!(after[1]["status"], "completed", "{out}");
    assert_eq!(after[1]["turns"], 2, "{out}");
    assert!(after[1]["tokens"].as_u64().unwrap() > 0, "{out}");
    // The text is the same JSON; a bad argument is a tool error.
    let text: Value = serde_json::from_str(out["after"]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text, out["after"]["structured"]);
    assert_eq!(out["bad"]["is_error"], true, "{out}");
    assert!(
        out["bad"]["text"].as_str().unwrap().contains("status"),
        "{out}"
    );
}
