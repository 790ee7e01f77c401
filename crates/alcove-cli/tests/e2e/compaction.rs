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
/// Compaction in children.
mod children;

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
