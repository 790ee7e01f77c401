//! The OpenAI Responses wire end to end (issue 36): the built-in `openai`
//! provider speaking `/v1/responses` to a codex model, with tools, the
//! reasoning items sent back (the fake server refuses a function call
//! without the reasoning item it followed, as OpenAI does), a child on this
//! wire under a parent on Anthropic, and compaction and resume.

use std::process::Stdio;

use alcove_testkit::{Block, FakeServer, RecordedRequest, Script, Step, TestEnv};
use serde_json::{Value, json};

use crate::compaction::data_files;
use crate::support::{Outcome, alcove, assert_nothing_lost, finish, of_type, setup, transcript};

const CODEX: &str = "openai/gpt-5-codex";

/// Runs `alcove exec --json ARGS` on `model`, with both providers pointed
/// at the fake server.
fn exec_on(env: &TestEnv, server: &FakeServer, model: &str, args: &[&str]) -> Outcome {
    let mut command = env.command_openai(alcove(), server);
    command
        .env("ALCOVE_MODEL", model)
        .arg("exec")
        .arg("--json")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    finish(command.spawn().unwrap())
}

/// The input items of `request` of one type.
fn items<'a>(request: &'a RecordedRequest, kind: &str) -> Vec<&'a Value> {
    request.body["input"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["type"] == kind)
        .collect()
}

#[test]
fn a_codex_session_with_tools_speaks_responses_and_sends_its_reasoning_back() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "check the notes",
                vec![
                    Step::tool_call("Read", json!({"file_path": "notes.txt"}))
                        .reasoning("The notes are in notes.txt; read them first."),
                    Step::reply(vec![
                        Block::text("Checking the second file."),
                        Block::tool_call("Read", json!({"file_path": "more.txt"})),
                    ])
                    .reasoning("One more file to read."),
                    Step::text("The notes say KIWI-42."),
                ],
            )
            .count_tokens(),
    );
    env.write_file("notes.txt", "KIWI-42\n");
    env.write_file("more.txt", "nothing else\n");
    let out = exec_on(&env, &server, CODEX, &["check the notes"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let events = out.events();
    assert_nothing_lost(&events);
    assert!(out.stdout.contains("KIWI-42"));
    // The reasoning summaries stream as thinking, like Anthropic's.
    let streamed: String = of_type(&events, "thinking_delta")
        .iter()
        .map(|event| event["text"].as_str().unwrap())
        .collect();
    assert!(
        streamed.contains("read them first") && streamed.contains("One more file"),
        "{streamed}"
    );

    let requests = server.requests_for("check the notes");
    assert_eq!(requests.len(), 3);
    for request in &requests {
        assert_eq!(request.path, "/v1/responses");
        assert_eq!(request.model(), "gpt-5-codex");
        let body = &request.body;
        assert_eq!(body["store"], json!(false));
        assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
        assert_eq!(
            body["reasoning"],
            json!({"effort": "medium", "summary": "auto"})
        );
        assert!(body["prompt_cache_key"].is_string(), "{body}");
        assert!(!request.system_prompt().is_empty());
        assert!(request.tool_names().contains(&"Read".to_owned()));
    }
    // Each call went back with the reasoning item before it, sealed as the
    // server returned it, and each call's output answered it.
    let last = &requests[2];
    let reasoning = items(last, "reasoning");
    assert_eq!(reasoning.len(), 2, "{}", last.body);
    assert!(reasoning.iter().all(|item| {
        item["encrypted_content"]
            .as_str()
            .unwrap()
            .starts_with("gAAAA")
    }));
    let outputs = last.tool_results();
    assert_eq!(outputs.len(), 2);
    assert!(outputs[0].1.contains("KIWI-42"), "{outputs:?}");
    // The summary is thinking: never sent back as text, never the answer.
    let texts: Vec<&Value> = items(last, "message");
    assert!(
        !texts
            .iter()
            .any(|item| item.to_string().contains("read them first")),
        "{}",
        last.body
    );
    // Prefix caching reported apart, as cached input.
    let usages = of_type(&events, "usage");
    assert!(
        usages[1..]
            .iter()
            .all(|usage| usage["usage"]["cache_read_tokens"].as_u64().unwrap_or(0) > 0),
        "{usages:?}"
    );
    server.assert_script_finished();
}

#[test]
fn a_history_without_the_reasoning_item_is_refused_as_openai_refuses_it() {
    // The control: the same reply sent back by a client that drops the
    // reasoning item gets OpenAI's 400. alcove's run beside it passes
    // only because it keeps the item.
    let (env, server) = setup(Script::new().conversation(
        "read once",
        vec![
            Step::tool_call("Read", json!({"file_path": "a.txt"})).reasoning("Read a.txt."),
            Step::text("done"),
        ],
    ));
    env.write_file("a.txt", "alpha\n");
    let out = exec_on(&env, &server, CODEX, &["read once"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let second = server.requests_for("read once").pop().unwrap();
    let mut dropped = second.body.clone();
    dropped["input"]
        .as_array_mut()
        .unwrap()
        .retain(|item| item["type"] != "reasoning");
    let (status, body) = post(&server, &dropped);
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("without its required 'reasoning' item"),
        "{body}"
    );
    let mut orphan = second.body;
    orphan["input"]
        .as_array_mut()
        .unwrap()
        .retain(|item| item["type"] != "function_call");
    let (status, body) = post(&server, &orphan);
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("No tool call found")
    );
}

/// POSTs `body` to the fake server's `/v1/responses` (plain HTTP/1.1).
fn post(server: &FakeServer, body: &Value) -> (u16, Value) {
    use std::io::{Read, Write};
    let address = server.url().trim_start_matches("http://").to_owned();
    let mut stream = std::net::TcpStream::connect(&address).unwrap();
    let text = body.to_string();
    write!(
        stream,
        "POST /v1/responses HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let status = answer[9..12].parse().unwrap();
    let json = answer.split_once("\r\n\r\n").unwrap().1;
    (status, serde_json::from_str(json).unwrap())
}

#[test]
fn a_child_on_the_responses_wire_works_under_a_parent_on_anthropic() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "delegate the reading",
                vec![
                    Step::tool_call(
                        "Agent",
                        json!({"description": "read", "prompt": "CODEX-CHILD: read b.txt", "subagent_type": "codex-reader"}),
                    ),
                    Step::text("parent done"),
                ],
            )
            .conversation(
                "CODEX-CHILD",
                vec![
                    Step::tool_call("Read", json!({"file_path": "b.txt"}))
                        .reasoning("SECRET-THOUGHT: b.txt holds it."),
                    Step::text("CHILD REPORT: b.txt says BANANA-7"),
                ],
            ),
    );
    env.write_file("b.txt", "BANANA-7\n");
    env.write_file(
        ".alcove/agents/codex-reader.md",
        "---\nname: codex-reader\ndescription: reads files on a codex model\ntools: Read\nmodel: openai/gpt-5-codex\n---\nRead what you are asked to.\n",
    );
    let out = exec_on(
        &env,
        &server,
        "anthropic/fake-model",
        &["delegate the reading"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_nothing_lost(&out.events());
    let parent = server.requests_for("delegate the reading");
    assert!(parent.iter().all(|r| r.path == "/v1/messages"));
    let child = server.requests_for("CODEX-CHILD");
    assert_eq!(child.len(), 2);
    assert!(
        child
            .iter()
            .all(|r| r.path == "/v1/responses" && r.model() == "gpt-5-codex")
    );
    assert_eq!(items(&child[1], "reasoning").len(), 1);
    // The parent gets the child's report, not its reasoning.
    let results = parent.last().unwrap().tool_results();
    assert!(results[0].1.contains("BANANA-7"), "{results:?}");
    assert!(
        !parent
            .last()
            .unwrap()
            .body
            .to_string()
            .contains("SECRET-THOUGHT")
    );
    server.assert_script_finished();
}

/// One effort knob: an `Agent` call's `effort` (and a definition's
/// `effort:`) reaches a child on the Responses wire as `reasoning.effort`,
/// over the medium Codex CLI's defaults give a codex model.
#[test]
fn an_agent_calls_effort_reaches_a_child_on_the_responses_wire() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "delegate with effort",
                vec![
                    Step::reply(vec![
                        Block::tool_call(
                            "Agent",
                            json!({"description": "by call", "prompt": "CALL-CHILD: think hard", "subagent_type": "codex-reader", "effort": "high"}),
                        ),
                        Block::tool_call(
                            "Agent",
                            json!({"description": "by type", "prompt": "TYPE-CHILD: think a little", "subagent_type": "codex-quick"}),
                        ),
                    ]),
                    Step::text("parent done"),
                ],
            )
            .conversation("CALL-CHILD", vec![Step::text("call child done")])
            .conversation("TYPE-CHILD", vec![Step::text("type child done")]),
    );
    env.write_file(
        ".alcove/agents/codex-reader.md",
        "---\nname: codex-reader\ndescription: reads on a codex model\nmodel: openai/gpt-5-codex\n---\nRead.\n",
    );
    env.write_file(
        ".alcove/agents/codex-quick.md",
        "---\nname: codex-quick\ndescription: quick on a codex model\nmodel: openai/gpt-5-codex\neffort: low\n---\nBe quick.\n",
    );
    let out = exec_on(
        &env,
        &server,
        "anthropic/fake-model",
        &["delegate with effort"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let effort = |needle: &str| {
        let requests = server.requests_for(needle);
        assert_eq!(requests.len(), 1, "{needle}");
        assert_eq!(requests[0].path, "/v1/responses");
        requests[0].body["reasoning"]["effort"].clone()
    };
    assert_eq!(effort("CALL-CHILD"), "high");
    assert_eq!(effort("TYPE-CHILD"), "low");
    server.assert_script_finished();
}

#[test]
fn a_responses_session_compacts_on_overflow_and_resumes_with_its_reasoning() {
    let mut steps: Vec<Step> = (0..3)
        .map(|n| {
            Step::tool_call("Read", json!({"file_path": format!("data/{n}.txt")}))
                .reasoning(&format!("Turn {n}: keep reading."))
        })
        .collect();
    steps.push(Step::text("Read them all."));
    steps.push(Step::text("second part done"));
    // The server's window is 6000 tokens; alcove is told 100000, so the
    // overflow comes from the server, in OpenAI's words.
    let (env, server) = setup(
        Script::new()
            .conversation("read three files", steps)
            .context_window(6_000),
    );
    data_files(&env, 3, 8_000);
    env.write_file(".alcove/config.toml", "model_context_window = 100000\n");
    let first = exec_on(&env, &server, CODEX, &["read three files"]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    let events = first.events();
    assert_nothing_lost(&events);
    let compactions = of_type(&events, "compacted");
    assert_eq!(compactions.len(), 1, "{}", first.stderr);
    assert_eq!(compactions[0]["trigger"], "overflow");
    // Three reads, the one refused, and its retry.
    assert_eq!(server.request_count(), 5);
    let retried = server.requests().pop().unwrap();
    assert!(
        retried
            .body
            .to_string()
            .contains("re-run the call to see it")
    );
    // The retry still carries every call's reasoning, sealed (the
    // overflow comes once two or three reads are in, as results are sized).
    let calls = items(&retried, "function_call").len();
    assert!(calls >= 2, "{}", retried.body);
    assert_eq!(
        items(&retried, "reasoning").len(),
        calls,
        "{}",
        retried.body
    );
    let id = of_type(&events, "session_started")[0]["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    // The transcript keeps the reasoning with its encrypted content.
    let recorded = transcript(&env)
        .iter()
        .map(Value::to_string)
        .collect::<String>();
    assert!(
        recorded.contains("\"encrypted_content\":\"gAAAA"),
        "{recorded}"
    );

    // Resuming sends the reasoning back from the transcript: without it
    // the strict server would refuse the calls.
    let resumed = exec_on(&env, &server, CODEX, &["--resume", &id, "and now?"]);
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    let request = server.requests().pop().unwrap();
    assert_eq!(request.path, "/v1/responses");
    assert_eq!(request.last_user_text(), "and now?");
    let calls = items(&request, "function_call").len();
    assert!(calls >= 2, "{}", request.body);
    assert_eq!(
        items(&request, "reasoning").len(),
        calls,
        "{}",
        request.body
    );
    server.assert_script_finished();
}

#[test]
fn config_chooses_the_wire_and_the_effort_and_config_show_says_which() {
    let (env, server) = setup(Script::new().conversation("", vec![Step::text("hi"); 2]));
    env.write_file(
        ".alcove/config.toml",
        &format!(
            "[providers.gateway]\nkind = \"openai-responses\"\nbase_url = \"{}\"\n\
             [model_options.\"openai/gpt-5\"]\nwire = \"chat\"\nreasoning_effort = \"high\"\n",
            server.openai_url()
        ),
    );
    // A provider of kind openai-responses, on a model that does not reason.
    let out = exec_on(&env, &server, "gateway/fake-model", &["hello"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let sent = server.requests().pop().unwrap();
    assert_eq!(sent.path, "/v1/responses");
    assert!(sent.body.get("reasoning").is_none(), "{}", sent.body);
    assert!(sent.body.get("include").is_none(), "{}", sent.body);
    // gpt-5 moved to Chat Completions, with its effort as that wire names it.
    let out = exec_on(&env, &server, "openai/gpt-5", &["hello"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let sent = server.requests().pop().unwrap();
    assert_eq!(sent.path, "/v1/chat/completions");
    assert_eq!(sent.body["reasoning_effort"], "high");
    assert!(sent.body.get("reasoning").is_none(), "{}", sent.body);

    let show = |model: &str| {
        let output = env
            .command_openai(alcove(), &server)
            .env("ALCOVE_MODEL", model)
            .args(["config", "show"])
            .output()
            .unwrap();
        assert!(output.status.success());
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    assert!(
        show(CODEX).contains(
            "# wire of openai/gpt-5-codex: OpenAI Responses (reasoning effort medium, summary auto)"
        ),
        "{}",
        show(CODEX)
    );
    assert!(
        show("openai/gpt-5")
            .contains("# wire of openai/gpt-5: OpenAI Chat Completions (reasoning effort high)")
    );
}
