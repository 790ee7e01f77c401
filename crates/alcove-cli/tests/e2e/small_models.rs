//! What a real small model behind a local server still did to a session
//! (issue 39), against the strict fake server: a window asked of the
//! server whatever the provider is called, truncated arguments repaired
//! when the repair is unambiguous, a text call naming no tool corrected
//! once, Edit refused before a Read, and results sized to the context left.

use alcove_testkit::{Block, Script, Step};
use serde_json::json;

use crate::support::{
    ReadCut, Wire, alcove, exec_on as run, exec_openai as run_openai, of_type, read_cut, setup,
    transcript,
};

/// Point 2: `/props` is asked behind the built-in `openai` provider when
/// its base URL is a loopback address; the old code asked only other
/// provider ids and assumed the table's window.
#[test]
fn the_window_of_a_loopback_server_is_asked_behind_the_openai_provider() {
    let (env, server) = setup(
        Script::new()
            .llama_cpp_window(8_192)
            .conversation("window?", vec![Step::text("fine")]),
    );
    let mut command = env.command_openai(alcove(), &server);
    let shown = command.args(["config", "show"]).output().unwrap();
    assert!(
        shown.status.success(),
        "{}",
        String::from_utf8_lossy(&shown.stderr)
    );
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(
        shown.contains("8192 tokens  # server (llama.cpp /props)"),
        "{shown}"
    );
    let out = run_openai(&env, &server, &["--json", "window?"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let events = out.events();
    let context = of_type(&events, "context");
    assert_eq!(context[0]["window"], json!(8_192), "{context:?}");
}

/// Point 5: arguments missing only their closing brace (or quote and
/// brace) are completed and run, the result saying what was added and the
/// transcript keeping what the model wrote; arguments broken beyond that,
/// or completed into something the tool's schema refuses, stay an error.
/// The old code answered every one of them with "not valid JSON".
#[test]
fn arguments_missing_their_closers_run_repaired_and_others_stay_errors() {
    let cut_short = r#"{"file_path": "notes.txt", "limit": 2000, "offset": 1"#;
    let quote_too = r#"{"file_path": "notes.txt"#;
    let missing_value = r#"{"file_path": "notes.txt", "limit":"#;
    let wrong_field = r#"{"path": "notes.txt""#;
    for wire in [Wire::Anthropic, Wire::OpenAi] {
        let (env, server) = setup(Script::new().conversation(
            "cut short",
            vec![
                Step::reply(vec![
                    Block::raw_tool_call("Read", cut_short),
                    Block::raw_tool_call("Read", quote_too),
                    Block::raw_tool_call("Read", missing_value),
                    Block::raw_tool_call("Read", wrong_field),
                ]),
                Step::text("alpha it is"),
            ],
        ));
        env.write_file("notes.txt", "alpha\nbeta\n");
        let out = run(wire, &env, &server, &["--json", "cut short"]);
        assert_eq!(out.code, 0, "{wire:?}: {}", out.stderr);
        let results = server.requests()[1].tool_results();
        assert_eq!(results.len(), 4, "{wire:?}");
        // (The OpenAI wire has no error flag on a tool result.)
        let flagged = matches!(wire, Wire::Anthropic);
        for (result, appended) in results[..2].iter().zip(["`}`", "`\"}`"]) {
            assert!(!result.2, "{wire:?}: {}", result.1);
            assert!(
                result.1.contains("ended early")
                    && result.1.contains(appended)
                    && result.1.contains("alpha")
                    && result.1.contains("beta"),
                "{wire:?}: {}",
                result.1
            );
        }
        for result in &results[2..] {
            assert_eq!(result.2, flagged, "{wire:?}: {}", result.1);
            assert!(
                result.1.contains("not valid JSON"),
                "{wire:?}: {}",
                result.1
            );
        }
        // The transcript keeps the text the model wrote.
        let lines = transcript(&env);
        let written: Vec<&serde_json::Value> = of_type(&lines, "message")
            .iter()
            .flat_map(|line| line["message"]["content"].as_array().into_iter().flatten())
            .filter_map(|block| block.get("input"))
            .collect();
        assert!(
            written.contains(&&json!(cut_short)),
            "{wire:?}: {written:?}"
        );
        assert!(
            written.contains(&&json!(quote_too)),
            "{wire:?}: {written:?}"
        );
        server.assert_script_finished();
    }
}

/// Point 3: a reply that is nothing but a call in the text-call shape
/// naming no offered tool (the file's name where `Read` belongs) gets one
/// correction naming the tool its arguments fit, and another turn; the old
/// code ended the session with that text as its answer. A second such
/// reply after the correction is the answer.
#[test]
fn a_text_call_naming_no_tool_gets_one_correction() {
    let wrong = r#"{"name": "pyproject.toml", "arguments": {"file_path": "pyproject.toml"}}"#;
    let (env, server) = setup(
        Script::new()
            .conversation(
                "what is the project called",
                vec![
                    Step::text(wrong),
                    Step::text_call("", "Read", json!({"file_path": "pyproject.toml"})),
                    Step::text("It is called demo."),
                ],
            )
            .conversation("stubborn", vec![Step::text(wrong), Step::text(wrong)]),
    );
    env.write_file("pyproject.toml", "[project]\nname = \"demo\"\n");
    let out = run_openai(&env, &server, &["what is the project called"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "It is called demo.\n");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let correction = requests[1].tool_results();
    assert_eq!(correction.len(), 1);
    // Issue 45: arguments that fit one read-only tool only run as it.
    let (_, text, is_error) = &correction[0];
    assert!(!is_error, "{text}");
    assert!(
        text.starts_with("[alcove: no tool is named pyproject.toml; your arguments fit Read only, so the call ran as Read.")
            && text.contains("name = \"demo\""),
        "{text}"
    );
    assert!(
        requests[2]
            .tool_results()
            .last()
            .unwrap()
            .1
            .contains("demo")
    );

    let out = run_openai(&env, &server, &["stubborn"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout.trim_end(), wrong);
    assert_eq!(server.requests().len(), 5, "one correction, not a loop");
    server.assert_script_finished();
}

/// Point 4: an Edit of a file the agent has not read, or that changed on
/// disk since it read it, is refused with an error saying to Read it first
/// (the old code answered the first with "old_string is empty" and ran the
/// second); after a Read, and after the agent's own edit, edits go on. A
/// file asked for at the wrong path is answered with the nearest matches.
#[test]
fn an_edit_needs_a_read_of_the_file_as_it_is_and_missing_files_name_the_nearest() {
    let edit = |old: &str, new: &str| {
        Step::tool_call(
            "Edit",
            json!({"file_path": "calc.py", "old_string": old, "new_string": new}),
        )
    };
    let read = || Step::tool_call("Read", json!({"file_path": "calc.py"}));
    let (env, server) = setup(Script::new().conversation(
        "fix the bug in calc.py",
        vec![
            edit("", "def add(a, b):\n    return a + b\n"),
            read(),
            Step::tool_call(
                "Bash",
                json!({"command": "printf 'def add(a, b):\\n    return a - b  # bug\\n' > calc.py"}),
            ),
            edit("a - b", "a + b"),
            read(),
            edit("a - b", "a + b"),
            edit("  # bug", ""),
            Step::tool_call("Read", json!({"file_path": "src/config.py"})),
            Step::text("fixed"),
        ],
    ));
    env.write_file("calc.py", "def add(a, b):\n    return a - b\n");
    env.write_file("config.py", "PORT = 8123\n");
    let out = crate::support::exec(
        &env,
        &server,
        &[
            "--permission-mode",
            "bypassPermissions",
            "fix the bug in calc.py",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let requests = server.requests();
    assert_eq!(requests.len(), 9);
    let result = |turn: usize| requests[turn].tool_results().pop().unwrap();
    let (_, unread, is_error) = result(1);
    assert!(is_error, "{unread}");
    assert!(
        unread.contains("calc.py has not been read yet") && unread.contains("Read it first"),
        "{unread}"
    );
    let (_, changed, is_error) = result(4);
    assert!(is_error, "{changed}");
    assert!(
        changed.contains("calc.py has changed on disk since you last read it")
            && changed.contains("Read it again"),
        "{changed}"
    );
    for turn in [6, 7] {
        let (_, edited, is_error) = result(turn);
        assert!(!is_error, "turn {turn}: {edited}");
    }
    assert_eq!(
        env.read_file("calc.py"),
        "def add(a, b):\n    return a + b\n"
    );
    let (_, missing, is_error) = result(8);
    assert!(is_error, "{missing}");
    assert!(
        missing.contains("File does not exist: src/config.py")
            && missing.contains("Did you mean config.py?"),
        "{missing}"
    );
}

/// Point 1: a 40 KB file read with a 4k window (llama.cpp's, asked at
/// `/props`) is cut to what fits the context left, from its head, with
/// the lines shown and the `offset`/`limit` that read on; the request fits,
/// nothing is compacted, and the model answers from the text. The old code
/// sent the file whole, overflowed, and cleared the only result to a stub.
#[test]
fn a_file_larger_than_the_window_is_cut_to_what_fits_not_read_then_erased() {
    let (env, server) = setup(Script::new().llama_cpp_window(4_096).conversation(
        "what is in big.log",
        vec![
            Step::tool_call("Read", json!({"file_path": "big.log"})),
            Step::text("It starts with entry 1."),
        ],
    ));
    let log: String = (1..=800)
        .map(|n| format!("entry {n}: the service answered request {n} in 12 ms\n"))
        .collect();
    assert!(log.len() > 40_000, "{}", log.len());
    env.write_file("big.log", &log);
    let out = run_openai(&env, &server, &["--json", "what is in big.log"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let requests = server.requests();
    assert_eq!(
        requests.len(),
        2,
        "no request overflowed and was sent again"
    );
    let events = out.events();
    assert!(
        of_type(&events, "compacted").is_empty(),
        "nothing was cleared"
    );
    let (_, result, _) = requests[1].tool_results().pop().unwrap();
    assert!(result.starts_with("     1\tentry 1: "), "{}", &result[..80]);
    assert!(result.len() < 16_000, "{} bytes", result.len());
    // Its head and its last lines, and the call that shows the lines
    // between.
    let ReadCut {
        head_last: last,
        tail_first,
        ..
    } = read_cut(&result);
    assert!(
        result.contains(&format!(
            "(lines {}-{} of 800 are not shown: they do not fit in what is left of the context window. To see them call Read {{\"file_path\": \"big.log\", \"offset\": {}, \"limit\": {last}}}, or Grep for what you need. The last lines of the window follow.)",
            last + 1,
            tail_first - 1,
            last + 1
        )),
        "{}",
        &result[result.len().saturating_sub(300)..]
    );
    assert!(
        result.ends_with("   800\tentry 800: the service answered request 800 in 12 ms"),
        "{}",
        &result[result.len().saturating_sub(300)..]
    );
    assert_eq!(out.stdout.lines().count(), events.len());
}
