//! A tool surface that fits the model (issue 45): deferral chosen per
//! model (a server on this machine, or a small window, gets every tool in
//! full and no `ToolSearch`); where deferral is on, a deferred tool the
//! user names is loaded before the model is asked, a call of one not
//! loaded runs with a note (unless a rule forbids it), and `ToolSearch`
//! asked for a file answers with the `Read` to make; a result cut to fit
//! leaves room for the next read; the token estimate is calibrated by the
//! server's own counts. Each test failed on the code before the issue.
//! Round 4 (each failed on 7ee99a5): a call of one tool with another's
//! arguments runs as that tool, and the gate judges every repaired call as
//! the tool that runs; a Read cut to fit shows the file's last lines and
//! the call for the rest; a small model that answers without a call is
//! told once to read the file the message names.

use alcove_testkit::{RecordedRequest, Script, Step, TestEnv};
use serde_json::{Value, json};

use crate::support::{alcove, exec, exec_openai, of_type, setup};
use crate::web::Web;

/// Reads cut to fit, and the reminder to read a named file.
mod reads;
/// Calls repaired to the tool they fit.
mod repaired_calls;

fn names(request: &RecordedRequest) -> Vec<String> {
    request.tool_names()
}

fn has(request: &RecordedRequest, name: &str) -> bool {
    names(request).iter().any(|offered| offered == name)
}

/// The `used` figure of each `context` event, in order.
fn used(events: &[Value]) -> Vec<u64> {
    of_type(events, "context")
        .iter()
        .map(|event| event["used"].as_u64().unwrap())
        .collect()
}

#[test]
fn a_local_server_with_an_8k_window_gets_every_tool_in_full_and_no_tool_search() {
    let (env, server) = setup(
        Script::new()
            .llama_cpp_window(8_192)
            .conversation("local hello", vec![Step::text("hi")]),
    );
    let out = exec_openai(&env, &server, &["--json", "local hello"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let requests = server.requests_for("local hello");
    let offered = names(&requests[0]);
    assert!(!offered.contains(&"ToolSearch".to_owned()), "{offered:?}");
    // The lean set, then the delegation tools the session allows, in full.
    for name in [
        "Read",
        "Glob",
        "Grep",
        "Write",
        "Edit",
        "Bash",
        "Agent",
        "spawn_agent",
        "send_input",
        "resume_agent",
        "wait",
        "close_agent",
    ] {
        assert!(offered.contains(&name.to_owned()), "{name}: {offered:?}");
    }
    for left_out in ["TodoWrite", "WebFetch", "BashOutput", "spawn_batch"] {
        assert!(
            !offered.contains(&left_out.to_owned()),
            "{left_out}: {offered:?}"
        );
    }
    let tools = requests[0].body["tools"].as_array().unwrap();
    let spawn = tools
        .iter()
        .find(|tool| tool["function"]["name"] == "spawn_agent")
        .unwrap();
    assert!(
        spawn["function"]["parameters"]["properties"]["message"].is_object(),
        "{spawn}"
    );
    // What that costs in prefill (bytes / 4, as the bench counts): more than
    // the lean profile's 1,663 tokens, well inside an 8k window.
    let tokens = requests[0].body_len.div_ceil(4);
    eprintln!(
        "local profile: first request {} B, {tokens} tokens",
        requests[0].body_len
    );
    assert!(tokens < 2_500, "{tokens} tokens");

    // `config show` says which profile and why.
    let shown = env
        .command_openai(alcove(), &server)
        .args(["config", "show"])
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(
        shown.contains(
            "# tool profile of openai/fake-model: local (every tool in full, no ToolSearch)  # auto: a server on this machine on the Chat wire"
        ),
        "{shown}"
    );

    // A hosted-looking model with a large window keeps deferral; config
    // can ask for it on a local server too.
    let (env, server) = setup(Script::new().conversation("full hello", vec![Step::text("hi")]));
    let out = exec_openai(&env, &server, &["-c", "tool_profile=full", "full hello"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let first = &server.requests_for("full hello")[0];
    assert!(has(first, "ToolSearch") && !has(first, "spawn_agent"));
}

#[test]
fn tool_search_asked_for_a_file_answers_with_the_read_to_make() {
    let (env, server) = setup(Script::new().conversation(
        "package name",
        vec![
            Step::tool_call("ToolSearch", json!({"query": "select:pyproject.toml"})),
            Step::text("ok"),
        ],
    ));
    env.write_file("pyproject.toml", "[project]\nname = \"tidewater\"\n");
    let out = exec(&env, &server, &["What is the package name in the project?"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let requests = server.requests_for("package name");
    let search = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["name"] == "ToolSearch")
        .cloned()
        .unwrap();
    let description = search["description"].as_str().unwrap();
    assert!(
        description.starts_with("Loads tool definitions"),
        "{description}"
    );
    let (_, answer, _) = requests[1].tool_results().pop().unwrap();
    assert!(
        answer.starts_with(
            "pyproject.toml is a file in the workspace, not a tool: read it with Read {\"file_path\": \"pyproject.toml\"}."
        ),
        "{answer}"
    );

    // The attacker's side: a file a Read deny rule hides is not confirmed
    // to exist.
    let (env, server) = setup(Script::new().conversation(
        "secret name",
        vec![
            Step::tool_call("ToolSearch", json!({"query": "select:secret.env"})),
            Step::text("ok"),
        ],
    ));
    env.write_file("secret.env", "TOKEN=1\n");
    let out = exec(
        &env,
        &server,
        &["--deny", "Read(secret.env)", "secret name"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (_, answer, _) = server.requests_for("secret name")[1]
        .tool_results()
        .pop()
        .unwrap();
    assert!(!answer.contains("is a file in the workspace"), "{answer}");
    assert!(answer.contains("is not in the workspace"), "{answer}");
}

#[test]
fn a_deferred_tool_named_in_the_users_message_is_loaded_before_the_model_is_asked() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "with spawn_agent",
                vec![
                    // Offered from the first request: no ToolSearch step.
                    Step::tool_call("spawn_agent", json!({"message": "HELPER: say hello"})),
                    Step::tool_call("wait", json!({"ids": ["agent-1"], "timeout_ms": 20_000})),
                    Step::text("done"),
                ],
            )
            .conversation("HELPER: say hello", vec![Step::text("hello")]),
    );
    let out = exec(
        &env,
        &server,
        &["Start a helper with spawn_agent, then wait for it."],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let requests = server.requests_for("with spawn_agent");
    let first = names(&requests[0]);
    // The always-on tools and ToolSearch first, the named tool (and its
    // companion `wait`) appended after them.
    assert!(
        first.ends_with(&[
            "ToolSearch".to_owned(),
            "spawn_agent".to_owned(),
            "wait".to_owned()
        ]),
        "{first:?}"
    );
    assert!(!first.contains(&"WebFetch".to_owned()), "{first:?}");
    let (_, waited, is_error) = requests[2].tool_results().pop().unwrap();
    assert!(!is_error && waited.contains("hello"), "{waited}");
    server.assert_script_finished();
}

#[test]
fn a_call_of_a_deferred_tool_not_loaded_runs_with_a_note_unless_a_rule_forbids_it() {
    let web = Web::start();
    let fetch = || {
        Step::tool_call(
            "WebFetch",
            json!({"url": web.url("127.0.0.1", "/page.html"), "prompt": "the welcome"}),
        )
        .unoffered()
    };
    let (env, server) = setup(
        Script::new()
            .conversation("fetch at once", vec![fetch(), Step::text("ok")])
            .conversation("fetch forbidden", vec![fetch(), Step::text("ok")]),
    );
    let out = exec(
        &env,
        &server,
        &["--allow", "WebFetch(domain:127.0.0.1)", "fetch at once"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let requests = server.requests_for("fetch at once");
    let (_, page, is_error) = requests[1].tool_results().pop().unwrap();
    assert!(!is_error, "{page}");
    assert!(
        page.starts_with("[alcove: WebFetch was offered by name only; alcove loaded it for this call, which ran, and it stays in your tools.]\n"),
        "{page}"
    );
    assert!(page.contains("# Welcome"), "{page}");
    assert_eq!(
        names(&requests[1]).last().map(String::as_str),
        Some("WebFetch")
    );

    // The attacker's side: a rule that forbids the call still holds, the
    // call is refused by the gate, and nothing is loaded.
    let fetched = web.hits();
    let out = exec(
        &env,
        &server,
        &["--deny", "WebFetch(domain:127.0.0.1)", "fetch forbidden"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let requests = server.requests_for("fetch forbidden");
    let (_, refusal, is_error) = requests[1].tool_results().pop().unwrap();
    assert!(is_error, "{refusal}");
    assert!(!refusal.contains("loaded it"), "{refusal}");
    assert!(!has(&requests[1], "WebFetch"));
    assert_eq!(web.hits(), fetched, "nothing was fetched");
}

/// Three files of about 20 KB each, `module_a.py` … `module_c.py`, whose
/// functions are named `<module>_fn_<n>`.
fn modules(env: &TestEnv) {
    for module in ["a", "b", "c"] {
        let text: String = (1..=200)
            .map(|n| format!("def {module}_fn_{n}(value):\n    return value * {n} + 1\n\n"))
            .collect::<String>();
        assert!(text.len() > 8_000);
        env.write_file(&format!("module_{module}.py"), &text.repeat(2));
    }
}

#[test]
fn a_cut_result_leaves_half_the_window_left_and_a_later_read_still_fits() {
    let read = |name: &str| Step::tool_call("Read", json!({"file_path": name}));
    let (env, server) = setup(Script::new().llama_cpp_window(8_192).conversation(
        "three modules",
        vec![
            read("module_a.py"),
            read("module_b.py"),
            read("module_c.py"),
            Step::text("c_fn_1"),
        ],
    ));
    modules(&env);
    let out = exec_openai(&env, &server, &["--json", "three modules"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let events = out.events();
    assert!(of_type(&events, "compacted").is_empty(), "no summary");
    let requests = server.requests_for("three modules");
    assert_eq!(requests.len(), 4, "no request overflowed");
    let used = used(&events);
    assert_eq!(used.len(), 4, "{used:?}");
    // Each cut result takes at most half of what was left of the window.
    for turn in 0..3 {
        let left_before = 8_192 - used[turn];
        let left_after = 8_192 - used[turn + 1];
        assert!(
            left_after * 2 >= left_before,
            "turn {turn}: {left_before} tokens left before, {left_after} after ({used:?})"
        );
    }
    let results = requests[3].tool_results();
    let (_, third, is_error) = results.last().unwrap();
    assert!(!is_error, "{third}");
    assert!(third.contains("def c_fn_1(value)"), "{third}");
    assert!(third.contains("To see them call Read {"), "{third}");
}

#[test]
fn after_a_response_counted_above_the_estimate_the_next_estimate_is_corrected() {
    let (env, server) = setup(Script::new().conversation(
        "count me",
        vec![
            Step::tool_call("Read", json!({"file_path": "notes.txt"})).usage(6_000, 20),
            Step::text("read"),
        ],
    ));
    let line = "a line of notes that says nothing much at all, padded out.\n";
    let notes = line.repeat(8_000 / line.len() + 1);
    env.write_file("notes.txt", &notes);
    env.write_file(".alcove/config.toml", "model_context_window = 100000\n");
    let out = exec(&env, &server, &["--json", "count me"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let used = used(&out.events());
    assert_eq!(used.len(), 2, "{used:?}");
    // The first request was estimated at used[0] and counted 6,000: at
    // least twice the estimate, so what the next request adds (the file,
    // about notes.len() / 4 tokens by bytes) is scaled by the bound, 2.
    assert!(used[0] * 2 < 6_000, "{used:?}");
    let added = used[1] - 6_020;
    let by_bytes = notes.len() as u64 / 4;
    assert!(
        added >= by_bytes * 19 / 10,
        "the next estimate adds {added} tokens for a file of {by_bytes} by bytes: not corrected ({used:?})"
    );
}

#[test]
fn the_frontier_first_request_stays_within_five_percent_of_the_benchmark() {
    // BENCHMARKS.md: every tool (WebSearch with a search endpoint), the
    // OpenAI wire, 1,979 tokens as body bytes / 4 (the bench's counting).
    let (env, server) =
        setup(Script::new().conversation("FIRST probe full", vec![Step::text("ok")]));
    let out = exec_openai(
        &env,
        &server,
        &[
            "-c",
            "tool_profile=full",
            "-c",
            "web.search_url=http://127.0.0.1:9/search",
            "FIRST probe full",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let first = &server.requests_for("FIRST probe full")[0];
    let tokens = first.body_len.div_ceil(4);
    eprintln!(
        "full profile: first request {} B, {tokens} tokens",
        first.body_len
    );
    assert!(
        tokens * 100 <= 1_979 * 105,
        "{tokens} tokens, more than 5 % over 1,979"
    );
    assert!(has(first, "ToolSearch"));
}

#[test]
fn a_request_estimated_over_the_window_after_compacting_is_not_sent() {
    let (env, server) = setup(
        Script::new()
            .llama_cpp_window(8_192)
            .conversation("too long", vec![Step::text("never asked")]),
    );
    // One user message larger than the window: nothing can be cleared or
    // summarised. The old code sent it and got the server's 400.
    let prompt = format!("too long: {}", "a word of the prompt ".repeat(2_000));
    let out = exec_openai(&env, &server, &["--json", &prompt]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(
        out.stderr
            .contains("over the model's context window of 8192 tokens")
            && out.stderr.contains("it was not sent"),
        "{}",
        out.stderr
    );
    assert!(server.requests().is_empty(), "a request was sent");
}
