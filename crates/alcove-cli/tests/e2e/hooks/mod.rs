//! Command hooks and agent definitions through the real binary, with real
//! hook scripts (shell and Python) and definition files in the formats
//! Claude Code users already have. Hooks are configured in alcove's TOML,
//! `.alcove/settings.json` and `.claude/settings.json`; children are told
//! apart from their parent by their prompt.
//!
//! - `definitions`: agent definition files and `alcove agents`.

use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use alcove_testkit::{Script, Step, TestEnv};
use serde_json::{Value, json};

use crate::support::{exec, exec_command, finish, of_type, setup, wait_gone};

mod definitions;

/// Writes an executable script into the workspace.
fn script(env: &TestEnv, rel: &str, text: &str) {
    env.write_file(rel, text);
    std::fs::set_permissions(env.path(rel), std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn project_config(env: &TestEnv, toml: &str) {
    env.write_file(".alcove/config.toml", toml);
}

fn jsonl(env: &TestEnv, rel: &str) -> Vec<Value> {
    let path = env.path(rel);
    if !path.exists() {
        return Vec::new();
    }
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap_or_else(|err| panic!("{line}: {err}")))
        .collect()
}

fn delegate(prompt: &str) -> Step {
    Step::tool_call(
        "Agent",
        json!({"description": "delegated", "prompt": prompt}),
    )
}

const BYPASS: [&str; 2] = ["--permission-mode", "bypassPermissions"];

#[test]
fn pre_tool_use_exit_2_blocks_a_childs_bash_call_and_its_stderr_reaches_the_child() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "delegate the build",
                vec![delegate("CHILD-BUILD: run it"), Step::text("parent done")],
            )
            .conversation(
                "CHILD-BUILD",
                vec![
                    Step::tool_call("Bash", json!({"command": "echo ran > ran.txt"})),
                    Step::text("the hook stopped me"),
                ],
            ),
    );
    script(
        &env,
        "hooks/no-bash.sh",
        "#!/bin/sh\ncat > /dev/null\necho \"Bash is blocked by policy P-7\" >&2\nexit 2\n",
    );
    project_config(
        &env,
        "[[hooks.PreToolUse]]\nmatcher = \"Bash\"\ncommand = \"./hooks/no-bash.sh\"\n",
    );
    let out = exec(&env, &server, &[BYPASS[0], BYPASS[1], "delegate the build"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let child = server.requests_for("CHILD-BUILD");
    let (_, content, is_error) = child[1].tool_results().remove(0);
    assert!(is_error);
    assert_eq!(
        content,
        "Blocked by PreToolUse hook: Bash is blocked by policy P-7"
    );
    assert!(!env.path("ran.txt").exists(), "the blocked command ran");
}

#[test]
fn a_python_hook_denies_with_its_reason_and_allows_the_rest() {
    let (env, server) = setup(Script::new().conversation(
        "clean up",
        vec![
            Step::tool_call("Bash", json!({"command": "rm -f keep.txt"})),
            Step::tool_call("Bash", json!({"command": "echo still-here"})),
            Step::text("done"),
        ],
    ));
    env.write_file("keep.txt", "precious\n");
    env.write_file(
        "hooks/guard.py",
        "import json, sys\n\
         payload = json.load(sys.stdin)\n\
         command = payload['tool_input'].get('command', '')\n\
         if command.startswith('rm '):\n\
         \x20   decision = {'permissionDecision': 'deny',\n\
         \x20               'permissionDecisionReason': 'deletions need review: ' + command}\n\
         else:\n\
         \x20   decision = {'permissionDecision': 'allow'}\n\
         decision['hookEventName'] = 'PreToolUse'\n\
         print(json.dumps({'hookSpecificOutput': decision}))\n",
    );
    env.write_file(
        ".alcove/settings.json",
        r#"{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "python3 hooks/guard.py", "timeout": 30}]}]}}"#,
    );
    // Default mode: without the hook's allow, Bash would be asked about and
    // refused (no terminal).
    let out = exec(&env, &server, &["clean up"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let requests = server.requests_for("clean up");
    let (_, denied, is_error) = requests[1].tool_results().remove(0);
    assert!(is_error);
    assert_eq!(
        denied,
        "Blocked by PreToolUse hook: deletions need review: rm -f keep.txt"
    );
    let (_, allowed, is_error) = requests[2].tool_results().remove(1);
    assert!(!is_error, "{allowed}");
    assert!(allowed.contains("still-here"), "{allowed}");
    assert_eq!(env.read_file("keep.txt"), "precious\n");
}

#[test]
fn a_hooks_allow_never_overrides_a_deny_rule() {
    let (env, server) = setup(Script::new().conversation(
        "make a file",
        vec![
            Step::tool_call("Bash", json!({"command": "touch made.txt"})),
            Step::text("done"),
        ],
    ));
    project_config(
        &env,
        "[[hooks.PreToolUse]]\ncommand = \"cat > asked.json; echo '{\\\"hookSpecificOutput\\\": {\\\"permissionDecision\\\": \\\"allow\\\"}}'\"\n",
    );
    let out = exec(
        &env,
        &server,
        &[
            BYPASS[0],
            BYPASS[1],
            "--deny",
            "Bash(touch:*)",
            "make a file",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (_, content, is_error) = server.requests_for("make a file")[1]
        .tool_results()
        .remove(0);
    assert!(is_error, "{content}");
    assert!(!env.path("made.txt").exists());
    assert!(
        !env.path("asked.json").exists(),
        "a denied call never reaches the hooks"
    );
}

#[test]
fn post_tool_use_additional_context_reaches_the_model() {
    let (env, server) = setup(Script::new().conversation(
        "read the notes",
        vec![
            Step::tool_call("Read", json!({"file_path": "notes.txt"})),
            Step::text("read"),
        ],
    ));
    env.write_file("notes.txt", "alpha\n");
    script(
        &env,
        ".claude/hooks/lint.sh",
        "#!/bin/sh\ncat > /dev/null\n\
         echo '{\"hookSpecificOutput\": {\"hookEventName\": \"PostToolUse\", \"additionalContext\": \"lint: 0 problems\"}}'\n",
    );
    env.write_file(
        ".claude/settings.json",
        r#"{"permissions": {"allow": []}, "hooks": {"PostToolUse": [{"matcher": "Read|Write", "hooks": [{"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/lint.sh"}]}]}}"#,
    );
    let out = exec(&env, &server, &["read the notes"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (_, content, is_error) = server.requests_for("read the notes")[1]
        .tool_results()
        .remove(0);
    assert!(!is_error);
    assert!(content.contains("alpha"), "{content}");
    assert!(
        content.ends_with("[PostToolUse hook]\nlint: 0 problems"),
        "{content}"
    );
}

#[test]
fn hooks_receive_the_documented_payload_without_secrets() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "payload parent",
                vec![delegate("PAYLOAD-CHILD: say hi"), Step::text("parent done")],
            )
            .conversation(
                "PAYLOAD-CHILD",
                vec![
                    Step::tool_call("Bash", json!({"command": "echo hi"})),
                    Step::text("child done"),
                ],
            ),
    );
    let dump = "cat >> payloads.jsonl; echo >> payloads.jsonl";
    let mut config = String::new();
    for event in [
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "SubagentStart",
        "SubagentStop",
        "Stop",
        "SessionEnd",
    ] {
        config.push_str(&format!("[[hooks.{event}]]\ncommand = \"{dump}\"\n"));
    }
    config.push_str("[[hooks.SessionStart]]\ncommand = \"env > hook-env.txt\"\n");
    project_config(&env, &config);
    let out = finish(
        exec_command(
            &env,
            &server,
            &[BYPASS[0], BYPASS[1], "--json", "payload parent"],
        )
        .env("MY_SERVICE_TOKEN", "tok-123")
        .env("DEPLOY_PASSWORD", "pw-456")
        .spawn()
        .unwrap(),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let events = out.events();
    let started = of_type(&events, "session_started")[0];
    let payloads = jsonl(&env, "payloads.jsonl");
    let workspace = std::fs::canonicalize(env.workspace()).unwrap();
    for payload in &payloads {
        assert_eq!(payload["session_id"], started["session_id"], "{payload}");
        assert_eq!(
            payload["transcript_path"], started["transcript"],
            "{payload}"
        );
        assert_eq!(payload["cwd"], workspace.display().to_string(), "{payload}");
        assert_eq!(payload["permission_mode"], "bypassPermissions", "{payload}");
    }
    let named = |name: &str| -> Vec<&Value> {
        payloads
            .iter()
            .filter(|payload| payload["hook_event_name"] == name)
            .collect()
    };
    let order: Vec<&str> = payloads
        .iter()
        .map(|payload| payload["hook_event_name"].as_str().unwrap())
        .collect();
    assert_eq!(
        order,
        [
            "SessionStart",
            "UserPromptSubmit",
            "PreToolUse",
            "SubagentStart",
            "PreToolUse",
            "PostToolUse",
            "SubagentStop",
            "PostToolUse",
            "Stop",
            "SessionEnd"
        ]
    );
    assert_eq!(named("SessionStart")[0]["source"], "startup");
    assert_eq!(named("UserPromptSubmit")[0]["prompt"], "payload parent");
    let (main_pre, child_pre) = (named("PreToolUse")[0], named("PreToolUse")[1]);
    assert_eq!(main_pre["tool_name"], "Agent");
    assert!(main_pre.get("agent_id").is_none(), "{main_pre}");
    assert_eq!(child_pre["tool_name"], "Bash");
    assert_eq!(child_pre["tool_input"], json!({"command": "echo hi"}));
    assert!(
        child_pre["tool_use_id"]
            .as_str()
            .is_some_and(|id| !id.is_empty())
    );
    assert_eq!(child_pre["agent_id"], "main/agent-1");
    assert_eq!(child_pre["agent_type"], "general-purpose");
    let child_post = named("PostToolUse")[0];
    assert_eq!(child_post["tool_use_id"], child_pre["tool_use_id"]);
    assert_eq!(child_post["tool_response"]["is_error"], false);
    assert!(
        child_post["tool_response"]["content"]
            .as_str()
            .unwrap()
            .contains("hi")
    );
    assert_eq!(child_post["agent_id"], "main/agent-1");
    for event in ["SubagentStart", "SubagentStop"] {
        assert_eq!(named(event)[0]["agent_id"], "main/agent-1", "{event}");
        assert_eq!(named(event)[0]["agent_type"], "general-purpose", "{event}");
    }
    assert_eq!(named("SubagentStop")[0]["stop_hook_active"], false);
    assert_eq!(
        named("SubagentStop")[0]["last_assistant_message"],
        "child done"
    );
    let stop = named("Stop")[0];
    assert_eq!(stop["stop_hook_active"], false);
    assert!(stop.get("agent_id").is_none());
    assert_eq!(named("SessionEnd")[0]["reason"], "other");

    let hook_env = env.read_file("hook-env.txt");
    for secret in [
        "ANTHROPIC_API_KEY",
        "MY_SERVICE_TOKEN",
        "tok-123",
        "DEPLOY_PASSWORD",
        "pw-456",
    ] {
        assert!(!hook_env.contains(secret), "{secret} leaked into a hook");
    }
    assert!(hook_env.contains(&format!("CLAUDE_PROJECT_DIR={}", workspace.display())));
}

#[test]
fn user_prompt_submit_adds_context_or_refuses_the_prompt() {
    let (env, server) = setup(Script::new().conversation("what day", vec![Step::text("test day")]));
    project_config(
        &env,
        "[[hooks.UserPromptSubmit]]\ncommand = \"if grep -q forbidden; then echo 'no secrets talk' >&2; exit 2; fi; echo 'Today is test day.'\"\n",
    );
    let out = exec(&env, &server, &["what day"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let first = server.requests_for("what day")[0].first_user_message_text();
    assert!(
        first.ends_with("[hook context]\nToday is test day."),
        "{first}"
    );

    let out = exec(&env, &server, &["--json", "say the forbidden word"]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr
            .contains("blocked by a UserPromptSubmit hook: no secrets talk"),
        "{}",
        out.stderr
    );
    assert!(server.requests_for("forbidden").is_empty());
    assert_eq!(out.events().last().unwrap()["type"], "session_ended");
}

#[test]
fn subagent_stop_block_sends_the_child_back_once() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "review it",
                vec![delegate("CHILD-REVIEW: review"), Step::text("parent done")],
            )
            .conversation(
                "CHILD-REVIEW",
                vec![
                    Step::text("first answer"),
                    Step::text("second answer: tests checked"),
                ],
            ),
    );
    project_config(
        &env,
        "[[hooks.SubagentStop]]\nmatcher = \"general-purpose\"\ncommand = \"if grep -q '\\\"stop_hook_active\\\":false'; then echo '{\\\"decision\\\": \\\"block\\\", \\\"reason\\\": \\\"Also check the tests.\\\"}'; fi\"\n",
    );
    let out = exec(&env, &server, &["review it"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let child = server.requests_for("CHILD-REVIEW");
    assert_eq!(child.len(), 2, "sent back exactly once");
    assert_eq!(
        child[1].last_user_text(),
        "Stop hook feedback:\nAlso check the tests."
    );
    let (_, report, _) = server.requests_for("review it")[1].tool_results().remove(0);
    assert!(report.contains("second answer: tests checked"), "{report}");
    assert!(!report.contains("first answer"), "{report}");
}

#[test]
fn stop_hooks_are_bounded_by_max_stop_continuations() {
    let (env, server) = setup(Script::new().conversation(
        "never good enough",
        vec![Step::text("one"), Step::text("two"), Step::text("three")],
    ));
    project_config(
        &env,
        "[hooks]\nmax_stop_continuations = 2\n[[hooks.Stop]]\ncommand = \"echo 'keep going' >&2; exit 2\"\n",
    );
    let out = exec(&env, &server, &["never good enough"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout.trim(), "three");
    assert_eq!(server.requests_for("never good enough").len(), 3);
}

#[test]
fn stop_runs_at_depth_0_only_and_subagent_stop_below() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "stop parent",
                vec![
                    delegate("STOP-CHILD: work"),
                    Step::text("first final"),
                    Step::text("second final"),
                ],
            )
            .conversation("STOP-CHILD", vec![Step::text("child done")]),
    );
    script(
        &env,
        "hooks/stop.sh",
        "#!/bin/sh\ncat >> stop.jsonl; echo >> stop.jsonl\n\
         if [ ! -e .stopped-once ]; then touch .stopped-once; echo 'run the tests first' >&2; exit 2; fi\n",
    );
    project_config(
        &env,
        "[[hooks.Stop]]\ncommand = \"./hooks/stop.sh\"\n\
         [[hooks.SubagentStop]]\ncommand = \"cat >> substop.jsonl; echo >> substop.jsonl\"\n",
    );
    let out = exec(&env, &server, &["stop parent"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout.trim(), "second final");
    let parent = server.requests_for("stop parent");
    assert_eq!(
        parent[2].last_user_text(),
        "Stop hook feedback:\nrun the tests first"
    );
    let stops = jsonl(&env, "stop.jsonl");
    assert_eq!(stops.len(), 2, "{stops:?}");
    assert!(
        stops
            .iter()
            .all(|stop| stop.get("agent_id").is_none() && stop["hook_event_name"] == "Stop")
    );
    assert_eq!(stops[1]["stop_hook_active"], true);
    let substops = jsonl(&env, "substop.jsonl");
    assert_eq!(substops.len(), 1, "{substops:?}");
    assert_eq!(substops[0]["hook_event_name"], "SubagentStop");
    assert_eq!(substops[0]["agent_id"], "main/agent-1");
}

#[test]
fn a_hook_that_times_out_is_killed_with_its_process_group() {
    let (env, server) = setup(Script::new().conversation(
        "slow hook",
        vec![
            Step::tool_call("Bash", json!({"command": "echo ran > ran.txt"})),
            Step::text("done"),
        ],
    ));
    project_config(
        &env,
        "[[hooks.PreToolUse]]\nmatcher = \"Bash\"\ntimeout = 1\n\
         command = \"echo $$ > hook.pid; sleep 300 & echo $! > bg.pid; sleep 300\"\n",
    );
    let started = Instant::now();
    let out = exec(
        &env,
        &server,
        &[BYPASS[0], BYPASS[1], "--json", "slow hook"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(started.elapsed() < Duration::from_secs(30));
    let warnings = of_type(&out.events(), "warning")
        .iter()
        .map(|event| event["message"].as_str().unwrap().to_owned())
        .collect::<Vec<_>>();
    assert!(
        warnings
            .iter()
            .any(|warning| warning.contains("timed out after 1s")),
        "{warnings:?}"
    );
    assert_eq!(
        env.read_file("ran.txt"),
        "ran\n",
        "a timeout warns and does not block"
    );
    for file in ["hook.pid", "bg.pid"] {
        let pid: u32 = env.read_file(file).trim().parse().unwrap();
        wait_gone(
            pid,
            Duration::from_secs(5),
            &format!("{file}: the process survived the timeout"),
        );
    }
}
