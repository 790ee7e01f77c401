//! Long sessions (issue 11): compaction at every depth, recovery from a
//! context overflow, resuming a compacted session, the PreCompact hook, and
//! Anthropic prompt caching with usage kept apart.
//!
//! The fake server models the window (it rejects a request over N tokens
//! with the provider's real error), Anthropic's cache, and a summariser that
//! answers alcove's handover request with every `FACT` line it was sent.

use alcove_testkit::{Block, RecordedRequest, Script, Step, TestEnv};
use serde_json::{Value, json};

use crate::support::{assert_nothing_lost, exec, of_type, setup, transcript};

mod caching;

/// alcove's handover request starts with this.
pub(crate) const HANDOVER: &str = "[alcove: context compaction]";

fn project_config(env: &TestEnv, toml: &str) {
    env.write_file(".alcove/config.toml", toml);
}

/// `count` files of about `bytes` bytes each, `data/N.txt`.
pub(crate) fn data_files(env: &TestEnv, count: usize, bytes: usize) {
    for n in 0..count {
        let line = format!("record {n} of the data set, nothing worth remembering here\n");
        env.write_file(
            &format!("data/{n}.txt"),
            &line.repeat(bytes / line.len() + 1),
        );
    }
}

/// One scripted turn: a note with a fact, and a read of `data/N.txt`.
pub(crate) fn reading_turn(n: usize) -> Step {
    Step::reply(vec![
        Block::text(&format!(
            "FACT-{n}: the checksum of data/{n}.txt is c{:04}. {}",
            n * 7,
            "Moving on to the next file after noting this. ".repeat(8)
        )),
        Block::tool_call("Read", json!({"file_path": format!("data/{n}.txt")})),
    ])
}

/// Every request carries whole tool_use/tool_result pairs (Anthropic shape).
fn assert_pairs_whole(requests: &[RecordedRequest]) {
    for request in requests {
        let messages = request.body["messages"].as_array().unwrap();
        for (index, message) in messages.iter().enumerate() {
            if message["role"] != "assistant" {
                continue;
            }
            let uses: Vec<&str> = message["content"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|block| block["type"] == "tool_use")
                .map(|block| block["id"].as_str().unwrap())
                .collect();
            if uses.is_empty() {
                continue;
            }
            let next = messages
                .get(index + 1)
                .unwrap_or_else(|| panic!("tool_use {uses:?} without a following message"));
            let results: Vec<&str> = next["content"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|block| block["type"] == "tool_result")
                .map(|block| block["tool_use_id"].as_str().unwrap())
                .collect();
            assert_eq!(uses, results, "a tool_use lost its result");
        }
        // And no result without its call.
        let all_uses: Vec<&str> = messages
            .iter()
            .flat_map(|m| m["content"].as_array().into_iter().flatten())
            .filter(|block| block["type"] == "tool_use")
            .map(|block| block["id"].as_str().unwrap())
            .collect();
        for message in messages {
            for block in message["content"].as_array().into_iter().flatten() {
                if block["type"] == "tool_result" {
                    assert!(all_uses.contains(&block["tool_use_id"].as_str().unwrap()));
                }
            }
        }
    }
}

#[test]
fn a_sixty_turn_session_ten_windows_long_completes_with_early_facts_in_the_summary() {
    const WINDOW: u64 = 16_000;
    let mut steps: Vec<Step> = (0..60).map(reading_turn).collect();
    steps.push(Step::text("All sixty files are checked."));
    let (env, server) = setup(
        Script::new()
            .conversation("check every data file", steps)
            .context_window(WINDOW)
            .summarizer(HANDOVER, "FACT-"),
    );
    data_files(&env, 60, 11_000);
    project_config(
        &env,
        &format!("model_context_window = {WINDOW}\nmax_tokens = 2000\n"),
    );
    let out = exec(
        &env,
        &server,
        &["--json", "--max-turns", "80", "check every data file"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let events = out.events();
    assert_nothing_lost(&events);
    let requests = server.requests();
    assert_pairs_whole(&requests);
    let results: usize = of_type(&events, "tool_call_finished")
        .iter()
        .map(|event| event["content"].as_str().unwrap().len())
        .sum();
    // The files add up to ten windows; each result is sized to the room
    // left in the context (issue 39), at most half of it (issue 45), so
    // what the model saw is less.
    assert!(
        results as u64 > 4 * WINDOW * 4,
        "the reads add up to four windows: {results} bytes"
    );
    let compactions = of_type(&events, "compacted");
    assert!(!compactions.is_empty());
    let summaries: Vec<&str> = compactions
        .iter()
        .filter_map(|event| event["summary"].as_str())
        .collect();
    assert!(!summaries.is_empty(), "clearing alone never sufficed here");
    // The last summary still holds the facts of the first turns, carried
    // forward from summary to summary.
    let last = summaries.last().unwrap();
    for n in 0..5 {
        assert!(
            last.contains(&format!(
                "FACT-{n}: the checksum of data/{n}.txt is c{:04}",
                n * 7
            )),
            "FACT-{n} missing from the last summary:\n{last}"
        );
    }
    // The summary requests were answered by the summariser, never by a
    // scripted step, and never were over the window.
    server.assert_script_finished();
    assert!(
        compactions.iter().all(|event| event["trigger"] == "auto"),
        "no request had to be rejected first"
    );
    let context = of_type(&events, "context");
    assert!(!context.is_empty(), "the session reported its context");
    assert!(context.iter().all(|event| event["window"] == WINDOW));
    assert!(
        context
            .iter()
            .all(|event| event["used"].as_u64().unwrap() <= WINDOW),
        "a request went out over the window"
    );
    // The transcript keeps every original message.
    let recorded = transcript(&env);
    let reads = of_type(&recorded, "message")
        .iter()
        .flat_map(|event| event["message"]["content"].as_array().unwrap().clone())
        .filter(|block| block["type"] == "tool_result")
        .filter(|block| {
            block["content"]
                .as_str()
                .unwrap()
                .contains("record 0 of the data")
        })
        .count();
    assert_eq!(reads, 1, "the first read is in the transcript, whole");
}

#[test]
fn an_overflow_compacts_and_retries_once_for_each_providers_error() {
    for openai in [false, true] {
        let script = Script::new().conversation(
            "read three files",
            vec![
                Step::tool_call("Read", json!({"file_path": "data/0.txt"})),
                Step::tool_call("Read", json!({"file_path": "data/1.txt"})),
                Step::tool_call("Read", json!({"file_path": "data/2.txt"})),
                Step::text("Read them all."),
            ],
        );
        // The server's window is 6000 tokens; alcove is told 100000.
        let script = if openai {
            script.llama_cpp_window(6_000)
        } else {
            script.context_window(6_000)
        };
        let (env, server) = setup(script);
        data_files(&env, 3, 8_000);
        project_config(&env, "model_context_window = 100000\n");
        let mut command = if openai {
            env.command_openai(crate::support::alcove(), &server)
        } else {
            env.command(crate::support::alcove(), &server)
        };
        command
            .args(["exec", "--json", "read three files"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let out = crate::support::finish(command.spawn().unwrap());
        assert_eq!(out.code, 0, "openai={openai}: {}", out.stderr);
        let events = out.events();
        assert_nothing_lost(&events);
        let compactions = of_type(&events, "compacted");
        assert_eq!(compactions.len(), 1, "openai={openai}");
        assert_eq!(compactions[0]["trigger"], "overflow");
        assert!(!compactions[0]["cleared"].as_array().unwrap().is_empty());
        // Five requests: three reads, the one rejected, and its retry.
        let requests = server.requests();
        assert_eq!(requests.len(), 5, "openai={openai}");
        let retried = requests.last().unwrap().body.to_string();
        assert!(
            retried.contains("re-run the call to see it"),
            "openai={openai}"
        );
        server.assert_script_finished();
    }
}

#[test]
fn a_request_that_cannot_fit_ends_with_a_clear_error_and_resumes_without_a_false_note() {
    let (env, server) = setup(
        Script::new()
            .conversation("HUGE TASK", vec![Step::text("never sent")])
            .conversation("", vec![Step::text("fine now")])
            .context_window(500),
    );
    let prompt = format!("HUGE TASK {}", "words ".repeat(600));
    let out = exec(&env, &server, &["--json", &prompt]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr
            .contains("does not fit the model's context window")
            && out.stderr.contains("500 tokens")
            && out.stderr.contains("model_context_window"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("HTTP 400"), "{}", out.stderr);
    // Resuming: the history ends with the prompt, yet no "interrupted"
    // note is invented (the server still rejects it: the prompt alone is
    // too long, and says so again).
    let id = of_type(&out.events(), "session_started")[0]["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let again = exec(
        &env,
        &server,
        &["--json", "--resume", &id, "shorter please"],
    );
    assert_eq!(again.code, 1);
    let recorded = transcript(&env)
        .iter()
        .map(Value::to_string)
        .collect::<String>();
    assert!(
        !recorded.contains("interrupted before it finished"),
        "{recorded}"
    );
}

#[test]
fn resume_continues_from_the_compacted_history_and_exec_compact_runs_pre_compact_hooks() {
    let mut steps: Vec<Step> = (0..6).map(reading_turn).collect();
    steps.push(Step::text("first part done"));
    steps.push(Step::text("second part done"));
    let (env, server) = setup(
        Script::new()
            .conversation("survey the data", steps)
            .count_tokens()
            .summarizer(HANDOVER, "FACT-"),
    );
    data_files(&env, 6, 6_000);
    project_config(
        &env,
        "model_context_window = 100000\n\
         [[hooks.PreCompact]]\nmatcher = \"manual\"\ncommand = \"cat >> precompact.jsonl; echo >> precompact.jsonl\"\n",
    );
    let first = exec(&env, &server, &["--json", "survey the data"]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    let id = of_type(&first.events(), "session_started")[0]["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(of_type(&first.events(), "compacted").is_empty());

    // Headless manual compaction, with a focus, and no prompt.
    let compacted = exec(
        &env,
        &server,
        &["--json", "--resume", &id, "--compact=the checksums"],
    );
    assert_eq!(compacted.code, 0, "{}", compacted.stderr);
    let events = compacted.events();
    let done = of_type(&events, "compacted");
    assert_eq!(done.len(), 1);
    assert_eq!(done[0]["trigger"], "manual");
    let summary = done[0]["summary"].as_str().unwrap();
    assert!(
        summary.contains("FACT-0: the checksum of data/0.txt"),
        "{summary}"
    );
    let messages_after = done[0]["messages_after"].as_u64().unwrap() as usize;
    assert!(messages_after < done[0]["messages_before"].as_u64().unwrap() as usize);
    // The summary request carried the focus.
    let handover = server
        .requests()
        .into_iter()
        .find(|request| request.last_user_text().contains(HANDOVER))
        .unwrap();
    assert!(
        handover
            .last_user_text()
            .contains("focus on: the checksums")
    );
    // The PreCompact hook ran, told it was manual.
    let payload: Value =
        serde_json::from_str(env.read_file("precompact.jsonl").lines().next().unwrap()).unwrap();
    assert_eq!(payload["hook_event_name"], "PreCompact");
    assert_eq!(payload["trigger"], "manual");
    assert_eq!(payload["custom_instructions"], "the checksums");

    // Resuming continues from the compacted history, not the whole one.
    let before = server.request_count();
    let resumed = exec(&env, &server, &["--json", "--resume", &id, "and now?"]);
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    let request = &server.requests()[before];
    assert_eq!(request.message_count(), messages_after + 1);
    assert!(
        request
            .first_user_message_text()
            .contains("FACT-0: the checksum of data/0.txt")
    );
    server.assert_script_finished();
}

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
fn a_resumed_session_over_its_window_compacts_before_its_first_request() {
    let mut steps: Vec<Step> = (0..8).map(reading_turn).collect();
    steps.push(Step::text("first run done"));
    steps.push(Step::text("second run done"));
    let (env, server) = setup(
        Script::new()
            .conversation("read eight files", steps)
            .count_tokens(),
    );
    data_files(&env, 8, 3_000);
    let first = exec(&env, &server, &["--json", "read eight files"]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    let id = of_type(&first.events(), "session_started")[0]["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    // The same session under a window it no longer fits.
    let before = server.request_count();
    let resumed = exec(
        &env,
        &server,
        &[
            "--json",
            "-c",
            "model_context_window=10000",
            "--resume",
            &id,
            "go on",
        ],
    );
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    let events = resumed.events();
    let compacted = of_type(&events, "compacted");
    assert_eq!(compacted.len(), 1);
    assert_eq!(compacted[0]["trigger"], "auto");
    assert!(compacted[0].get("summary").is_none(), "clearing was enough");
    // The compaction came before the first request of the resumed run.
    let first_request = events
        .iter()
        .position(|event| event["type"] == "model_request")
        .unwrap();
    let compaction = events
        .iter()
        .position(|event| event["type"] == "compacted")
        .unwrap();
    assert!(compaction < first_request);
    let request = server.requests()[before].body.to_string();
    assert!(request.contains("re-run the call to see it"));
    assert!(!request.contains("interrupted before it finished"));
}

#[test]
fn the_plain_front_end_compacts_on_request_too() {
    use std::io::Write;
    let mut steps: Vec<Step> = (0..4).map(reading_turn).collect();
    steps.push(Step::text("FOUR-READ"));
    steps.push(Step::text("AFTER-COMPACT"));
    let (env, server) = setup(
        Script::new()
            .conversation("read four files", steps)
            .count_tokens()
            .summarizer(HANDOVER, "FACT-"),
    );
    data_files(&env, 4, 4_000);
    let mut child = env
        .command(crate::support::alcove(), &server)
        .args(["--permission-mode", "bypassPermissions", "read four files"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"/compact\ngo on\n")
        .unwrap();
    let out = crate::support::finish(child);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("[context compacted (manual)"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("AFTER-COMPACT"), "{}", out.stdout);
    let last = server.requests().pop().unwrap();
    assert!(
        last.first_user_message_text()
            .contains("FACT-0: the checksum")
    );
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
