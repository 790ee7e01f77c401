//! `alcove exec`: output, exit codes, `--json`, TRACE, transcripts, project
//! instructions, provider selection.

use alcove_testkit::{Script, Step, TestEnv};
use serde_json::json;

use crate::support::{
    alcove, assert_nothing_lost, exec, exec_command, finish, of_type, setup, transcript,
};

#[test]
fn prints_the_final_answer_and_exits_zero() {
    let (env, server) =
        setup(Script::new().conversation("say hello", vec![Step::text("Hello there.")]));
    let out = exec(&env, &server, &["say hello"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "Hello there.\n");
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.path, "/v1/messages");
    assert_eq!(request.header("x-api-key").as_deref(), Some("test-key"));
    assert_eq!(request.model(), "fake-model");
    assert_eq!(request.first_user_text(), "say hello");
    assert_eq!(
        request.tool_names(),
        [
            "Read",
            "Glob",
            "Grep",
            "Write",
            "Edit",
            "Bash",
            "TodoWrite",
            "Agent",
            "ToolSearch"
        ]
    );
    // The deferred tools are named in ToolSearch's description instead.
    let search = request.body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["name"] == "ToolSearch")
        .unwrap()["description"]
        .to_string();
    assert!(
        search.contains("BashOutput") && search.contains("KillShell"),
        "{search}"
    );
    assert!(
        request.system_prompt().contains(
            &env.workspace()
                .canonicalize()
                .unwrap()
                .display()
                .to_string()
        )
    );
}

#[test]
fn reads_the_prompt_from_stdin() {
    let (env, server) = setup(Script::new().conversation("from stdin", vec![Step::text("got it")]));
    let mut command = env.command(alcove(), &server);
    let output = command
        .args(["exec", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child
                .stdin
                .take()
                .unwrap()
                .write_all(b"a prompt from stdin\n")?;
            child.wait_with_output()
        })
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&output.stdout), "got it\n");
}

#[test]
fn an_empty_prompt_is_a_usage_error() {
    let (env, server) = setup(Script::new());
    let out = exec(&env, &server, &["   "]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("prompt is empty"), "{}", out.stderr);
    assert!(server.requests().is_empty());
}

#[test]
fn json_prints_every_event_tagged_with_the_agent_path() {
    let (env, server) = setup(Script::new().conversation(
        "list files",
        vec![
            Step::tool_call("Glob", json!({"pattern": "*.txt"})),
            Step::text("One file."),
        ],
    ));
    env.write_file("a.txt", "x");
    let out = exec(&env, &server, &["--json", "list files"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let events = out.events();
    assert_eq!(events.first().unwrap()["type"], "session_started");
    let last = events.last().unwrap();
    assert_eq!(last["type"], "session_ended");
    assert_eq!(last["status"], "completed");
    assert_eq!(last["turns"], 2);
    assert!(events.iter().all(|event| event["agent"] == "main"));
    let started = of_type(&events, "tool_call_started");
    assert_eq!(started.len(), 1);
    assert_eq!(started[0]["input"], json!({"pattern": "*.txt"}));
    let finished = of_type(&events, "tool_call_finished");
    assert!(finished[0]["content"].as_str().unwrap().contains("a.txt"));
    assert!(!of_type(&events, "text_delta").is_empty());
    assert_eq!(
        of_type(&events, "assistant_text").last().unwrap()["text"],
        "One file."
    );
    assert_eq!(of_type(&events, "usage").len(), 2);
    assert_nothing_lost(&events);
}

#[test]
fn the_transcript_holds_the_whole_conversation_and_matches_the_json_stream() {
    let (env, server) = setup(Script::new().conversation(
        "read it",
        vec![
            Step::tool_call("Read", json!({"file_path": "notes.md"})),
            Step::text("Done."),
        ],
    ));
    env.write_file("notes.md", "remember the milk\n");
    let out = exec(&env, &server, &["--json", "read it"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines = transcript(&env);
    assert!(lines.iter().all(|line| line["ts"].is_u64()));
    let strip = |mut value: serde_json::Value| {
        value.as_object_mut().unwrap().remove("ts");
        value
    };
    let replayed: Vec<_> = lines.into_iter().map(strip).collect();
    // The transcript holds every event but the streamed text pieces, whose
    // text `assistant_text` and `message` carry whole.
    let streamed: Vec<_> = out
        .events()
        .into_iter()
        .filter(|event| event["type"] != "text_delta")
        .collect();
    assert_eq!(replayed, streamed);
    let messages = of_type(&replayed, "message");
    assert_eq!(
        messages.len(),
        4,
        "user, assistant(tool_use), user(tool_result), assistant"
    );
    assert!(
        messages[2]["message"]["content"][0]["content"]
            .as_str()
            .unwrap()
            .contains("remember the milk")
    );
}

#[test]
fn trace_prints_stage_lines_on_stderr() {
    let (env, server) = setup(Script::new().conversation(
        "trace me",
        vec![
            Step::tool_call("Glob", json!({"pattern": "*"})),
            Step::text("ok"),
        ],
    ));
    let out = finish(
        exec_command(&env, &server, &["trace me"])
            .env("TRACE", "1")
            .spawn()
            .unwrap(),
    );
    assert_eq!(out.code, 0);
    for expected in [
        "[trace] query.turn_start turn=1 agent=main",
        "[trace] model.request turn=1",
        "[trace] tool.start name=Glob id=",
        "[trace] tool.end name=Glob id=",
        "[trace] query.turn_end reason=tool_use turn=1 agent=main",
        "[trace] query.turn_end reason=completed turn=2 agent=main",
        "[trace] session.end status=completed turns=2",
    ] {
        assert!(
            out.stderr.contains(expected),
            "missing {expected:?} in:\n{}",
            out.stderr
        );
    }
    assert_eq!(out.stdout, "ok\n", "trace lines never go to stdout");
}

#[test]
fn agents_md_from_the_git_root_down_is_in_the_system_prompt() {
    let (env, server) = setup(Script::new().conversation("context", vec![Step::text("ok")]));
    std::fs::create_dir_all(env.path(".git")).unwrap();
    env.write_file("AGENTS.md", "Always run cargo fmt.");
    env.write_file("sub/CLAUDE.md", "Sub-folder rule.");
    let out = finish(
        exec_command(
            &env,
            &server,
            &["--cd", env.path("sub").to_str().unwrap(), "context"],
        )
        .spawn()
        .unwrap(),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let system = server.requests()[0].system_prompt();
    let root_rule = system
        .find("Always run cargo fmt.")
        .expect("root AGENTS.md");
    let sub_rule = system.find("Sub-folder rule.").expect("sub CLAUDE.md");
    assert!(root_rule < sub_rule);
}

#[test]
fn max_turns_stops_the_run_with_its_own_exit_status() {
    let (env, server) = setup(Script::new().conversation(
        "loop forever",
        vec![
            Step::tool_call("Glob", json!({"pattern": "*"})),
            Step::tool_call("Glob", json!({"pattern": "*"})),
            Step::tool_call("Glob", json!({"pattern": "*"})),
        ],
    ));
    let out = exec(
        &env,
        &server,
        &["--json", "--max-turns", "2", "loop forever"],
    );
    assert_eq!(out.code, 3, "{}", out.stderr);
    assert!(out.stderr.contains("--max-turns 2"), "{}", out.stderr);
    assert_eq!(server.requests().len(), 2);
    let events = out.events();
    assert_eq!(events.last().unwrap()["status"], "max_turns");
    assert_nothing_lost(&events);
}

#[test]
fn openai_protocol_works_end_to_end() {
    let (env, server) = setup(Script::new().conversation(
        "via openai",
        vec![
            Step::tool_call("Read", json!({"file_path": "a.txt"})),
            Step::text("It says hi."),
        ],
    ));
    env.write_file("a.txt", "hi\n");
    let mut command = env.command_openai(alcove(), &server);
    let output = command.args(["exec", "via openai"]).output().unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&output.stdout), "It says hi.\n");
    let requests = server.requests();
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert_eq!(
        requests[0].header("authorization").as_deref(),
        Some("Bearer test-key")
    );
    let results = requests[1].tool_results();
    assert_eq!(results.len(), 1);
    assert!(results[0].1.contains("hi"));
}

#[test]
fn a_provider_from_config_is_selected_by_its_id() {
    let (env, server) =
        setup(Script::new().conversation("custom provider", vec![Step::text("ok")]));
    std::fs::write(
        env.home().join("config.toml"),
        format!(
            "model = \"lab/my-model\"\n[providers.lab]\nkind = \"openai\"\nbase_url = \"{}\"\napi_key_env = \"LAB_KEY\"\n",
            server.openai_url()
        ),
    )
    .unwrap();
    let out = finish(
        exec_command(&env, &server, &["custom provider"])
            .env_remove("ALCOVE_MODEL")
            .env("LAB_KEY", "k2")
            .spawn()
            .unwrap(),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    // (Before it, alcove asked the server for its context window.)
    let requests = server.requests();
    let request = requests
        .iter()
        .find(|request| request.path == "/v1/chat/completions")
        .unwrap();
    assert_eq!(request.model(), "my-model");
    assert_eq!(
        request.header("authorization").as_deref(),
        Some("Bearer k2")
    );
}

#[test]
fn without_any_provider_it_exits_2_and_says_how_to_configure_one() {
    let env = TestEnv::new();
    let output = std::process::Command::new(alcove())
        .args(["exec", "hello"])
        .current_dir(env.workspace())
        .env("ALCOVE_HOME", env.home())
        .env_remove("ALCOVE_MODEL")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .output()
        .unwrap();
    // A developer machine may run Ollama; then discovery legitimately succeeds.
    if output.status.code() == Some(2) {
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("ANTHROPIC_API_KEY") && stderr.contains("OPENAI_API_KEY"),
            "{stderr}"
        );
        assert!(stderr.contains("Ollama"), "{stderr}");
    } else {
        assert!(
            std::net::TcpStream::connect("127.0.0.1:11434").is_ok()
                || std::net::TcpStream::connect("127.0.0.1:8080").is_ok()
        );
    }
}

#[test]
fn bad_flags_and_config_are_usage_errors() {
    let (env, server) = setup(Script::new());
    let out = exec(&env, &server, &["--permission-mode", "yolo", "x"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("unknown permission mode `yolo`"),
        "{}",
        out.stderr
    );
    let out = exec(&env, &server, &["--model", "nosuch/model", "x"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("unknown provider `nosuch`"),
        "{}",
        out.stderr
    );
    std::fs::write(env.home().join("config.toml"), "max_turns = [\n").unwrap();
    let out = exec(&env, &server, &["x"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("config.toml"), "{}", out.stderr);
    assert!(server.requests().is_empty());
}

#[test]
fn resume_continues_a_session_from_its_transcript() {
    let (env, server) = setup(Script::new().conversation(
        "first question",
        vec![Step::text("first answer"), Step::text("second answer")],
    ));
    let first = exec(&env, &server, &["--json", "first question"]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    let session_id = first.events()[0]["session_id"].as_str().unwrap().to_owned();
    let second = exec(&env, &server, &["--resume", &session_id, "follow-up"]);
    assert_eq!(second.code, 0, "{}", second.stderr);
    assert_eq!(second.stdout, "second answer\n");
    let request = &server.requests()[1];
    assert_eq!(request.message_count(), 3, "question, answer, follow-up");
    assert_eq!(request.last_user_text(), "follow-up");
    let lines = transcript(&env);
    assert_eq!(
        of_type(&lines, "session_started").len(),
        2,
        "the resumed run appends to the same transcript"
    );

    let missing = exec(&env, &server, &["--resume", "no-such-session", "x"]);
    assert_eq!(missing.code, 2);
    assert!(
        missing.stderr.contains("no session `no-such-session`"),
        "{}",
        missing.stderr
    );
}
