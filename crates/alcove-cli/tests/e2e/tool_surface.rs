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

use std::process::Stdio;

use alcove_testkit::{FakeServer, RecordedRequest, Script, Step, TestEnv};
use serde_json::{Value, json};

use crate::support::{Outcome, alcove, exec, finish, of_type, setup};
use crate::web::Web;

/// `alcove exec ARGS` on the OpenAI Chat wire, the built-in `openai`
/// provider with `OPENAI_BASE_URL` on 127.0.0.1 (a local server).
fn exec_openai(env: &TestEnv, server: &FakeServer, args: &[&str]) -> Outcome {
    let mut command = env.command_openai(alcove(), server);
    command
        .arg("exec")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    finish(command.spawn().unwrap())
}

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

#[test]
fn a_call_naming_a_file_runs_as_the_read_only_tool_it_fits_but_never_as_a_writer() {
    let read = r#"{"name": "notes.txt", "arguments": {"file_path": "notes.txt"}}"#;
    let write =
        r#"{"name": "new.txt", "arguments": {"file_path": "new.txt", "content": "planted"}}"#;
    let (env, server) = setup(
        Script::new()
            .conversation(
                "what do the notes say",
                vec![Step::text(read), Step::text("ok")],
            )
            .conversation("write it", vec![Step::text(write), Step::text("ok")]),
    );
    env.write_file("notes.txt", "the notes say 42\n");
    let out = exec_openai(&env, &server, &["what do the notes say"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    // (The Chat wire carries no error flag: the text says it all.)
    let (_, result, _) = server.requests_for("what do the notes say")[1]
        .tool_results()
        .pop()
        .unwrap();
    assert!(
        result.starts_with("[alcove: no tool is named notes.txt; your arguments fit Read only")
            && result.contains("the notes say 42"),
        "{result}"
    );

    // Arguments that fit a tool that writes are never run as it.
    let out = exec_openai(
        &env,
        &server,
        &["--permission-mode", "acceptEdits", "write it"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (_, result, _) = server.requests_for("write it")[1]
        .tool_results()
        .pop()
        .unwrap();
    assert!(result.contains("Unknown tool `new.txt`"), "{result}");
    assert!(!env.workspace().join("new.txt").exists());
}

#[test]
fn a_call_of_one_tool_with_anothers_arguments_runs_as_that_tool_through_its_gate() {
    // Seen with the real small model (issue 45, round 3): `Grep` called
    // with `Bash`'s arguments, refused as "missing field `pattern`", and
    // then an answer made up.
    let grep_as_bash = || {
        Step::tool_call(
            "Grep",
            json!({"command": "cat notes.txt", "description": "Show the notes", "timeout": 5_000}),
        )
    };
    let (env, server) = setup(
        Script::new()
            .conversation("grep as bash", vec![grep_as_bash(), Step::text("ok")])
            .conversation(
                "grep as denied bash",
                vec![grep_as_bash(), Step::text("ok")],
            )
            .conversation(
                "read with a stray field",
                vec![
                    Step::tool_call("Read", json!({"file_path": "notes.txt", "command": "ls"})),
                    Step::text("ok"),
                ],
            ),
    );
    env.write_file("notes.txt", "the notes say 42\n");
    let out = exec_openai(
        &env,
        &server,
        &["--allow", "Bash(cat:*)", "--json", "grep as bash"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (_, result, _) = server.requests_for("grep as bash")[1]
        .tool_results()
        .pop()
        .unwrap();
    assert!(
        result.starts_with(
            "[alcove: Grep takes none of these arguments; they fit Bash only, so the call ran as Bash."
        ) && result.contains("the notes say 42"),
        "{result}"
    );

    // The attacker's side: the call is judged as the Bash command it runs,
    // so a Bash deny rule holds however the call is named.
    let out = exec_openai(
        &env,
        &server,
        &[
            "--permission-mode",
            "bypassPermissions",
            "--deny",
            "Bash(cat:*)",
            "grep as denied bash",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (_, result, _) = server.requests_for("grep as denied bash")[1]
        .tool_results()
        .pop()
        .unwrap();
    assert!(
        result.contains("Permission denied: Bash (")
            && result.contains("denied by rule Bash(cat:*)"),
        "{result}"
    );
    assert!(!result.contains("the notes say 42"), "{result}");

    // A call of the right tool with a stray field is that tool's error,
    // never another tool's run.
    let out = exec_openai(&env, &server, &["read with a stray field"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (_, result, _) = server.requests_for("read with a stray field")[1]
        .tool_results()
        .pop()
        .unwrap();
    assert!(!result.contains("the call ran as"), "{result}");
}

#[test]
fn a_call_named_like_a_file_is_judged_by_the_rules_of_the_tool_it_runs_as() {
    // The attacker's side of the file-named repair: a Read deny rule
    // holds for a call that names the file where `Read` belongs.
    let call = r#"{"name": "secret.env", "arguments": {"file_path": "secret.env"}}"#;
    let (env, server) = setup(
        Script::new().conversation("read the secret", vec![Step::text(call), Step::text("ok")]),
    );
    env.write_file("secret.env", "TOKEN=hunter2\n");
    let out = exec_openai(
        &env,
        &server,
        &["--deny", "Read(secret.env)", "read the secret"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (_, result, _) = server.requests_for("read the secret")[1]
        .tool_results()
        .pop()
        .unwrap();
    assert!(!result.contains("hunter2"), "{result}");
    assert!(
        result.contains("denied by rule Read(secret.env)"),
        "{result}"
    );
}

/// The line numbers a Read result shows, in order.
fn line_numbers(result: &str) -> Vec<usize> {
    result
        .lines()
        .filter_map(|line| line.trim_start().split_once('\t'))
        .filter_map(|(number, _)| number.parse().ok())
        .collect()
}

#[test]
fn a_file_cut_to_fit_shows_its_last_lines_and_the_read_call_for_the_lines_between() {
    // Seen with the real small model (issue 45, round 3): asked for the
    // last function of a file cut to fit, it named the last one it was
    // shown and never read on.
    let (env, server) = setup(Script::new().llama_cpp_window(8_192).conversation(
        "last function",
        vec![
            Step::tool_call("Read", json!({"file_path": "module_c.py"})),
            Step::text("c_fn_200"),
        ],
    ));
    modules(&env);
    let out = exec_openai(&env, &server, &["last function"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (_, result, _) = server.requests_for("last function")[1]
        .tool_results()
        .pop()
        .unwrap();
    let numbers = line_numbers(&result);
    let gap = numbers
        .windows(2)
        .position(|pair| pair[1] != pair[0] + 1)
        .expect("a gap between the head and the last lines");
    let (head_last, tail_first) = (numbers[gap], numbers[gap + 1]);
    assert_eq!(numbers[0], 1, "{result}");
    assert_eq!(
        numbers.last(),
        Some(&1_200),
        "the file's last line is shown"
    );
    assert!(
        result.ends_with(
            "  1198\tdef c_fn_200(value):\n  1199\t    return value * 200 + 1\n  1200\t"
        ),
        "{}",
        &result[result.len() - 200..]
    );
    assert!(result.contains("def c_fn_200(value)"), "{result}");
    assert!(
        result.contains(&format!(
            "(lines {}-{} of 1200 are not shown: they do not fit in what is left of the context window. To see them call Read {{\"file_path\": \"module_c.py\", \"offset\": {}, \"limit\": {head_last}}}, or Grep for what you need. The last lines of the window follow.)",
            head_last + 1,
            tail_first - 1,
            head_last + 1
        )),
        "{result}"
    );
}

#[test]
fn a_small_model_that_answers_without_a_call_is_told_once_to_read_the_file_named() {
    // Seen with the real small model (issue 45, rounds 3 and 4): asked
    // about pyproject.toml, it answered "your_package_name" without a
    // call, or described the call it would make.
    let reminded = |key: &str| {
        Script::new().llama_cpp_window(8_192).conversation(
            key,
            vec![
                Step::text("```json\n{\"name\": \"your_package_name\"}\n```"),
                Step::tool_call("Read", json!({"file_path": "pyproject.toml"})),
                Step::text("tidewater"),
            ],
        )
    };
    let (env, server) = setup(reminded("package name in pyproject.toml"));
    env.write_file("pyproject.toml", "[project]\nname = \"tidewater\"\n");
    let out = exec_openai(
        &env,
        &server,
        &["What is the package name in pyproject.toml?"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout.trim(), "tidewater");
    let requests = server.requests_for("package name in pyproject.toml");
    assert_eq!(
        requests[1].last_user_text(),
        "[alcove: you answered without calling a tool, and the message names pyproject.toml, in the workspace, which you have not read. Do not describe a call or guess what a file holds: call Read {\"file_path\": \"pyproject.toml\"} now, then answer from what it shows.]"
    );
    server.assert_script_finished();

    // Once per message: the reply after the reminder is the answer.
    let (env, server) = setup(Script::new().llama_cpp_window(8_192).conversation(
        "twice in pyproject.toml",
        vec![Step::text("guess one"), Step::text("guess two")],
    ));
    env.write_file("pyproject.toml", "[project]\nname = \"tidewater\"\n");
    let out = exec_openai(&env, &server, &["twice in pyproject.toml"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout.trim(), "guess two");
    server.assert_script_finished();

    // The attacker's side: a file a Read deny rule hides is never named;
    // and a frontier model (deferring profile) is not reminded at all.
    let (env, server) = setup(
        Script::new()
            .llama_cpp_window(8_192)
            .conversation("in secret.env", vec![Step::text("no idea")])
            .conversation("frontier pyproject.toml", vec![Step::text("no idea")]),
    );
    env.write_file("secret.env", "TOKEN=hunter2\n");
    env.write_file("pyproject.toml", "[project]\nname = \"tidewater\"\n");
    let out = exec_openai(
        &env,
        &server,
        &["--deny", "Read(secret.env)", "what is in secret.env"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(server.requests_for("in secret.env").len(), 1);
    let out = exec_openai(
        &env,
        &server,
        &["-c", "tool_profile=full", "frontier pyproject.toml"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(server.requests_for("frontier pyproject.toml").len(), 1);
}
