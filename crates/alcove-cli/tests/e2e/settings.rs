//! Settings as a Claude Code or Codex user meets them on the first day
//! (issue 46): typos named with the nearest key, `.claude/settings.json`
//! permissions honoured, Claude Code's and Codex's flags, mistyped
//! subcommands kept from the model, one precedence (env below `-c`), and
//! errors that say what to do.

use std::process::{Command, Stdio};

use alcove_testkit::{FakeServer, Script, Step, TestEnv};
use serde_json::{Value, json};

use crate::support::{Outcome, alcove, exec, finish, setup};

/// `alcove ARGS` (no `exec`) against the fake server, stdin closed.
fn run(env: &TestEnv, server: &FakeServer, args: &[&str]) -> Outcome {
    let mut command = env.command(alcove(), server);
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    finish(command.spawn().unwrap())
}

/// Writes `text` at the top of the file (above the test setup's `[retry]`).
fn prepend(path: &std::path::Path, text: &str) {
    let rest = std::fs::read_to_string(path).unwrap_or_default();
    std::fs::write(path, format!("{text}{rest}")).unwrap();
}

#[test]
fn typos_in_config_files_flags_and_front_matter_are_named_with_the_nearest_key() {
    let (env, server) = setup(Script::new().conversation("hello", vec![Step::text("hi")]));
    let config = env.home().join("config.toml");
    prepend(&config, "model = \"anthropic/fake-model\"\nmax_turn = 20\n");
    env.write_file(
        ".alcove/agents/helper.md",
        "---\nname: helper\ndescription: Helps.\nmax_turn: 3\n---\nHelp.\n",
    );
    env.write_file(
        ".claude/skills/notes/SKILL.md",
        "---\nname: notes\ndescription: Writes notes.\nallowed-tool: Read\n---\nWrite notes.\n",
    );
    let out = exec(
        &env,
        &server,
        &["-c", "permision_mode=plan", "-c", "thinking=4000", "hello"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines = config.display().to_string();
    for expected in [
        format!("{lines}:2: unknown key `max_turn` is ignored; did you mean `max_turns`?"),
        "-c permision_mode=plan: unknown key `permision_mode` is ignored; did you mean `permission_mode`?".to_owned(),
        "-c thinking=4000: unknown key `thinking` is ignored; did you mean `model_options.<provider>.thinking`?".to_owned(),
        "helper.md: line 4: unknown front matter key `max_turn`, ignored; did you mean `max_turns`?".to_owned(),
        "SKILL.md: line 4: unknown front matter key `allowed-tool`, ignored; did you mean `allowed-tools`?".to_owned(),
    ] {
        assert!(out.stderr.contains(&expected), "no {expected:?} in\n{}", out.stderr);
    }

    // `config check` lists them all and fails; `config show` lists no
    // unknown key as a setting.
    let check = run(&env, &server, &["config", "check", "-c", "max_turn=3"]);
    assert_eq!(check.code, 1, "{}\n{}", check.stdout, check.stderr);
    for expected in [
        "config.toml:2: warning: unknown key `max_turn`",
        "-c max_turn=3: warning: unknown key `max_turn`",
        "helper.md: line 4: unknown front matter key `max_turn`",
        "SKILL.md: line 4: unknown front matter key `allowed-tool`",
    ] {
        assert!(
            check.stdout.contains(expected),
            "no {expected:?} in\n{}",
            check.stdout
        );
    }
    let show = run(&env, &server, &["config", "show"]);
    assert_eq!(show.code, 0, "{}", show.stderr);
    assert!(
        !show
            .stdout
            .lines()
            .any(|line| line.starts_with("max_turn ")),
        "{}",
        show.stdout
    );
    assert!(
        show.stdout.contains("# ignored (unknown key): max_turn"),
        "{}",
        show.stdout
    );

    // A wrong type is an error with its file and line.
    env.write_file(
        ".alcove/config.toml",
        "tool_profile = \"full\"\n\nmax_turns = \"many\"\n",
    );
    let check = run(&env, &server, &["config", "check"]);
    assert_eq!(check.code, 1);
    assert!(
        check.stdout.contains(".alcove/config.toml:3: error:"),
        "{}",
        check.stdout
    );
}

#[test]
fn a_claude_settings_deny_rule_stops_a_read_and_config_show_lists_it() {
    let (env, server) = setup(Script::new().conversation(
        "read the key",
        vec![
            Step::tool_call("Read", json!({"file_path": "secrets/key.txt"})),
            Step::text("done"),
        ],
    ));
    env.write_file("secrets/key.txt", "TOPSECRET-42");
    env.write_file(
        ".claude/settings.json",
        r#"{"permissions": {"deny": ["Read(./secrets/**)"]}}"#,
    );
    let out = exec(
        &env,
        &server,
        &["--permission-mode", "bypassPermissions", "read the key"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let results = server.requests_for("read the key")[1].tool_results();
    assert!(results[0].2, "the read was refused: {results:?}");
    assert!(!results[0].1.contains("TOPSECRET"), "{results:?}");
    assert!(
        results[0].1.contains(".claude/settings.json"),
        "{results:?}"
    );

    let show = run(&env, &server, &["config", "show"]);
    let line = show
        .stdout
        .lines()
        .find(|line| line.contains("\"Read(./secrets/**)\","))
        .unwrap_or_else(|| panic!("no rule in\n{}", show.stdout));
    assert!(
        line.contains("# project ") && line.ends_with(".claude/settings.json"),
        "{line}"
    );
}

/// Claude Code's allow rules let a command run that `default` would refuse
/// headless: the user's `~/.claude/settings.json` and the project's
/// `.claude/settings.local.json`. (Project allow rules are subject to the
/// folder's trust once that lands: this test then needs the folder trusted.)
#[test]
fn claude_settings_allow_rules_from_the_user_and_the_project_are_honoured() {
    let (env, server) = setup(Script::new().conversation(
        "make files",
        vec![
            Step::tool_call("Bash", json!({"command": "touch from-user.txt"})),
            Step::tool_call("Bash", json!({"command": "touch from-project.txt"})),
            Step::tool_call("Bash", json!({"command": "touch not-allowed.txt"})),
            Step::text("done"),
        ],
    ));
    std::fs::create_dir_all(env.home().join(".claude")).unwrap();
    std::fs::write(
        env.home().join(".claude/settings.json"),
        r#"{"permissions": {"allow": ["Bash(touch from-user.txt)"]}}"#,
    )
    .unwrap();
    env.write_file(
        ".claude/settings.local.json",
        r#"{"permissions": {"allow": ["Bash(touch from-project.txt)"]}}"#,
    );
    let out = exec(
        &env,
        &server,
        &["-c", "sandbox.auto_allow=false", "make files"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(env.path("from-user.txt").exists(), "{}", out.stderr);
    assert!(env.path("from-project.txt").exists(), "{}", out.stderr);
    assert!(!env.path("not-allowed.txt").exists());
}

#[test]
fn a_mistyped_subcommand_never_reaches_the_model() {
    let (env, server) = setup(Script::new());
    for (word, expected) in [
        ("reprot", "did you mean `alcove report`?"),
        ("worktree", "did you mean `alcove worktrees`?"),
        ("login", "ANTHROPIC_API_KEY"),
    ] {
        let out = run(&env, &server, &[word]);
        assert_eq!(out.code, 2, "{word}: {}", out.stderr);
        assert!(out.stderr.contains(expected), "{word}: {}", out.stderr);
    }
    assert_eq!(server.request_count(), 0);
}

#[test]
fn print_with_stream_json_prints_the_event_lines() {
    let (env, server) = setup(Script::new().conversation("say hi", vec![Step::text("hi there")]));
    let out = run(
        &env,
        &server,
        &["-p", "say hi", "--output-format", "stream-json"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let events = out.events();
    assert_eq!(events[0]["type"], "session_started", "{}", out.stdout);
    assert_eq!(events.last().unwrap()["type"], "session_ended");
    assert!(
        !out.stdout.lines().any(|line| line == "hi there"),
        "{}",
        out.stdout
    );
}

#[test]
fn print_continue_with_json_continues_the_last_session_and_prints_one_result() {
    let (env, server) = setup(Script::new().conversation(
        "first prompt",
        vec![
            Step::text("first answer"),
            Step::text("second answer"),
            Step::text("third answer"),
        ],
    ));
    let first = exec(&env, &server, &["--json", "first prompt"]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    let id = first.events()[0]["session_id"].as_str().unwrap().to_owned();

    let out = run(
        &env,
        &server,
        &[
            "-p",
            "--continue",
            "second prompt",
            "--output-format",
            "json",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let result: Value = serde_json::from_str(out.stdout.trim())
        .unwrap_or_else(|err| panic!("not one JSON object ({err}):\n{}", out.stdout));
    assert_eq!(result["type"], "result");
    assert_eq!(result["subtype"], "success");
    assert_eq!(result["is_error"], false);
    assert_eq!(result["result"], "second answer");
    assert_eq!(result["session_id"], id.as_str());
    assert_eq!(result["num_turns"], 1);
    let requests = server.requests_for("first prompt");
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].last_user_text(), "second prompt");

    // `--resume` takes a prefix of the id, as `alcove resume` does.
    let prefix = &id[..8];
    let again = run(
        &env,
        &server,
        &["-p", "--resume", prefix, "third", "--output-format", "json"],
    );
    assert_eq!(again.code, 0, "{}", again.stderr);
    let result: Value = serde_json::from_str(again.stdout.trim()).unwrap();
    assert_eq!(result["session_id"], id.as_str());
    assert_eq!(result["result"], "third answer");
}

#[test]
fn dangerously_skip_permissions_and_allowed_tools_let_a_refused_command_run() {
    let script = || {
        Script::new().conversation(
            "make it",
            vec![
                Step::tool_call("Bash", json!({"command": "touch made.txt"})),
                Step::text("done"),
            ],
        )
    };
    // Without either flag, `default` refuses the command headless.
    let (env, server) = setup(script());
    let out = run(
        &env,
        &server,
        &["-p", "-c", "sandbox.auto_allow=false", "make it"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!env.path("made.txt").exists());

    for flags in [
        &["--dangerously-skip-permissions"][..],
        &["--allowedTools", "Read, Bash(touch:*)"],
    ] {
        let (env, server) = setup(script());
        let mut args = vec!["-p", "-c", "sandbox.auto_allow=false"];
        args.extend(flags);
        args.push("make it");
        let out = run(&env, &server, &args);
        assert_eq!(out.code, 0, "{flags:?}: {}", out.stderr);
        assert!(env.path("made.txt").exists(), "{flags:?}: {}", out.stderr);
    }

    // `--disallowedTools` hides a tool, as `--deny` does.
    let (env, server) = setup(Script::new().conversation("tools?", vec![Step::text("ok")]));
    let out = run(
        &env,
        &server,
        &["-p", "--disallowedTools", "Grep", "tools?"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let tools = server.requests_for("tools?")[0].tool_names();
    assert!(!tools.contains(&"Grep".to_owned()) && tools.contains(&"Read".to_owned()));
}

#[test]
fn top_level_max_turns_and_append_system_prompt_apply() {
    let (env, server) = setup(Script::new().conversation(
        "keep going",
        vec![
            Step::tool_call("Glob", json!({"pattern": "*"})),
            Step::text("never"),
        ],
    ));
    let out = run(
        &env,
        &server,
        &[
            "--max-turns",
            "1",
            "--append-system-prompt",
            "Answer in haiku.",
            "-p",
            "keep going",
        ],
    );
    assert_eq!(out.code, 3, "{}", out.stderr);
    assert!(
        out.stderr.contains("stopped after 1 model turns"),
        "{}",
        out.stderr
    );
    let requests = server.requests_for("keep going");
    assert_eq!(requests.len(), 1);
    assert!(
        requests[0]
            .system_prompt()
            .contains("\n\nAnswer in haiku.\n"),
        "{}",
        requests[0].system_prompt()
    );
}

#[test]
fn the_environment_no_longer_beats_dash_c() {
    // The test environment sets ALCOVE_MODEL=anthropic/fake-model.
    let (env, server) = setup(Script::new().conversation("which model", vec![Step::text("ok")]));
    let out = exec(
        &env,
        &server,
        &["-c", "model=anthropic/chosen-by-c", "which model"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(server.requests_for("which model")[0].model(), "chosen-by-c");
    // … and a flag beats both.
    let (env, server) = setup(Script::new().conversation("which model", vec![Step::text("ok")]));
    let out = exec(
        &env,
        &server,
        &[
            "-c",
            "model=anthropic/chosen-by-c",
            "--model",
            "anthropic/chosen-by-flag",
            "which model",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        server.requests_for("which model")[0].model(),
        "chosen-by-flag"
    );
}

#[test]
fn a_refused_key_names_openai_api_key_and_keeps_the_providers_message() {
    let (env, server) = setup(Script::new().conversation(
        "hello",
        vec![Step::http_error(
            401,
            r#"{"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}"#,
        )],
    ));
    let mut command = env.command_openai(alcove(), &server);
    command
        .args(["exec", "hello"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let out = finish(command.spawn().unwrap());
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("openai refused the API key read from OPENAI_API_KEY."),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("export OPENAI_API_KEY="),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("Incorrect API key provided"),
        "{}",
        out.stderr
    );
}

#[test]
fn session_flags_are_listed_only_where_they_act() {
    let help = |args: &[&str]| {
        let out = Command::new(alcove()).args(args).output().unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    for command in ["report", "merge", "worktrees"] {
        let text = help(&[command, "--help"]);
        for flag in ["--sandbox", "--permission-mode", "--allow", "--deny"] {
            assert!(
                !text.contains(flag),
                "`{command} --help` lists {flag}:\n{text}"
            );
        }
    }
    let text = help(&["exec", "--help"]);
    for flag in [
        "--sandbox",
        "--permission-mode",
        "--allow",
        "--deny",
        "--output-format",
    ] {
        assert!(text.contains(flag), "`exec --help` lacks {flag}:\n{text}");
    }
}

#[test]
fn worktrees_clean_names_the_branches_it_kept() {
    let (env, server) = setup(Script::new());
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .current_dir(env.workspace())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    env.write_file("a.txt", "a\n");
    git(&["init", "-q"]);
    git(&["add", "."]);
    git(&["commit", "-qm", "a"]);
    git(&["branch", "alcove/s1/agent-1"]);
    let out = run(&env, &server, &["worktrees", "--clean"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("kept alcove/s1/agent-1"),
        "{}",
        out.stdout
    );
    assert!(
        out.stderr.contains("kept 1 branch(es)") && out.stderr.contains("alcove/s1/agent-1"),
        "{}",
        out.stderr
    );
}

/// The same refused key, as `session_ended` records it (what every front
/// end ends with, the UI's included): cause and remedy first, the
/// provider's message after, not the raw JSON alone.
#[test]
fn a_refused_key_in_session_ended_says_what_to_do() {
    let (env, server) = setup(Script::new().conversation(
        "hello",
        vec![Step::http_error(
            401,
            r#"{"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}"#,
        )],
    ));
    let mut command = env.command_openai(alcove(), &server);
    command
        .args(["exec", "--json", "hello"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let out = finish(command.spawn().unwrap());
    assert_eq!(out.code, 1, "{}", out.stderr);
    let ended = out
        .events()
        .into_iter()
        .find(|event| event["type"] == "session_ended")
        .expect("a session_ended line");
    let error = ended["error"].as_str().unwrap_or_default();
    let lines: Vec<&str> = error.lines().collect();
    assert!(
        lines.len() == 3
            && lines[0] == "openai refused the API key read from OPENAI_API_KEY."
            && lines[1].starts_with("Remedy: set a valid key (`export OPENAI_API_KEY=…`)")
            && lines[2].starts_with("The provider said: ")
            && lines[2].contains("Incorrect API key provided"),
        "{error}"
    );
}

/// `alcove exec` with no prompt on a terminal says it is reading one from
/// stdin (rather than waiting silently), then runs what was typed.
#[test]
fn exec_without_a_prompt_on_a_terminal_says_it_reads_stdin() {
    let (env, server) =
        setup(Script::new().conversation("typed prompt", vec![Step::text("the typed answer")]));
    let pane = crate::tui::Pane::start(&env, &server, &["exec"]);
    pane.wait_for("alcove: reading the prompt from stdin; end it with Ctrl-D");
    pane.type_text("typed prompt");
    pane.key("Enter");
    pane.key("C-d");
    pane.wait_for("the typed answer");
    assert_eq!(pane.wait_exit(), 0, "{}", pane.capture());
}

/// `alcove config show | head -1`: a reader that has gone is no panic.
#[test]
fn config_show_into_a_closed_pipe_ends_cleanly() {
    let (env, server) = setup(Script::new());
    for args in [
        &["config", "show"][..],
        &["config", "check"],
        &["agents"],
        &["agents", "--json"],
    ] {
        let (reader, writer) = std::io::pipe().unwrap();
        // Nobody will read: the first write finds the pipe closed.
        drop(reader);
        let mut command = env.command(alcove(), &server);
        command
            .args(args)
            .stdin(Stdio::null())
            .stdout(writer)
            .stderr(Stdio::piped());
        let child = command.spawn().unwrap();
        drop(command);
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
            "{args:?}: {stderr}"
        );
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
    }
}

/// In the interactive UI a refused key is a notice that says what to do,
/// not the provider's JSON alone.
#[test]
fn a_refused_key_in_the_ui_says_what_to_do() {
    let (env, server) = setup(Script::new().conversation(
        "hello",
        vec![Step::http_error(
            401,
            r#"{"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}"#,
        )],
    ));
    let pane = crate::tui::Pane::start(&env, &server, &[]);
    pane.wait_for_screen("Ask anything");
    pane.prompt("hello");
    let screen = pane.wait_for("Remedy: set a valid key");
    assert!(
        screen.contains("ANTHROPIC_API_KEY") && screen.contains("invalid x-api-key"),
        "{screen}"
    );
}
