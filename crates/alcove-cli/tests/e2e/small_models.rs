//! What a real small model behind a local server still did to a session
//! (issue 39), against the strict fake server: a window asked of the
//! server whatever the provider is called, truncated arguments repaired
//! when the repair is unambiguous, a text call naming no tool corrected
//! once, Edit refused before a Read, and results sized to the context left.

use std::process::Stdio;

use alcove_testkit::{FakeServer, Script, Step, TestEnv};
use serde_json::json;

use crate::support::{Outcome, alcove, finish, of_type, setup};

/// `alcove exec ARGS` on the OpenAI wire: the built-in `openai` provider
/// with `OPENAI_BASE_URL` on 127.0.0.1, as `docs/local-models.md` says.
fn run_openai(env: &TestEnv, server: &FakeServer, args: &[&str]) -> Outcome {
    let mut command = env.command_openai(alcove(), server);
    command
        .arg("exec")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    finish(command.spawn().unwrap())
}

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
