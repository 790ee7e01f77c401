//! Hook scripts that misbehave: exit 1, 3 or 255, die by a signal, time
//! out, or print garbage (bytes that are not UTF-8, broken JSON, JSON of the
//! wrong shape, megabytes). Each is a warning naming the hook and never a
//! block: the call runs, the session completes. `hooks` in the parent suite
//! has the documented protocol and the process-group kill on timeout.

use alcove_testkit::{Script, Step};
use serde_json::json;

use super::{BYPASS, Case, end_status, warnings};

/// `[[hooks.EVENT]]` entries, one per command. A command that sleeps gets
/// a 0.1 s timeout (it always runs out); the others 30 s, so a slow machine
/// never turns their exit into a timeout.
fn hooks_toml(event: &str, commands: &[&str]) -> String {
    commands
        .iter()
        .map(|command| {
            let timeout = if command.starts_with("sleep") {
                0.1
            } else {
                30.0
            };
            format!(
                "[[hooks.{event}]]\ncommand = {}\ntimeout = {timeout:?}\n",
                toml_string(command)
            )
        })
        .collect()
}

fn toml_string(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

#[test]
fn pre_tool_use_hooks_that_fail_oddly_warn_and_never_block() {
    let case = Case::new(Script::new().conversation(
        "odd hooks",
        vec![
            Step::tool_call("Bash", json!({"command": "echo ran > ran.txt"})),
            Step::text("done"),
        ],
    ));
    let commands = [
        "cat > /dev/null; echo one >&2; exit 1",
        "exit 3",
        "exit 255",
        "kill -9 $$",
        "sleep 30",
        "printf '\\377\\376\\000garbage'",
        "echo '{not json'",
        "echo '{\"decision\": 5, \"hookSpecificOutput\": \"nope\", \"continue\": \"false\"}'",
        "echo '[1, 2, 3]'",
        "head -c 3000000 /dev/zero | tr '\\000' '{'",
    ];
    case.write(".alcove/config.toml", hooks_toml("PreToolUse", &commands));
    let out = case.run(&[BYPASS[0], BYPASS[1], "odd hooks"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(end_status(&out), "completed");
    let result = &case.results("odd hooks", 1)[0];
    assert!(
        !result.1,
        "a misbehaving hook blocked the call: {}",
        result.0
    );
    assert_eq!(
        std::fs::read_to_string(case.ws("ran.txt")).unwrap(),
        "ran\n"
    );
    let warned = warnings(&out);
    for expected in [
        "PreToolUse hook `cat > /dev/null; echo one >&2; exit 1` failed with status 1: one",
        "PreToolUse hook `exit 3` failed with status 3",
        "PreToolUse hook `exit 255` failed with status 255",
        "PreToolUse hook `kill -9 $$` was killed by a signal",
        "PreToolUse hook `sleep 30` timed out after 0.1s",
        "PreToolUse hook `echo '{not json'` printed output that starts like JSON but does not parse",
        "PreToolUse hook `head -c 3000000 /dev/zero | tr '\\000' '{'` printed output that starts like JSON",
    ] {
        assert!(
            warned.iter().any(|warning| warning.starts_with(expected)),
            "{expected:?} not in {warned:?}"
        );
    }
    assert_eq!(warned.len(), 7, "only the failures warn: {warned:?}");
}

#[test]
fn hooks_of_every_event_that_crash_or_time_out_never_stop_the_session() {
    let case = Case::new(
        Script::new()
            .conversation(
                "every event",
                vec![
                    Step::tool_call(
                        "Agent",
                        json!({"description": "helper", "prompt": "HOOKED child"}),
                    ),
                    Step::text("parent done"),
                ],
            )
            .conversation(
                "HOOKED child",
                vec![
                    Step::tool_call("Read", json!({"file_path": "notes.txt"})),
                    Step::text("child done"),
                ],
            ),
    );
    case.write("notes.txt", "notes\n");
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
        config.push_str(&hooks_toml(event, &["exit 255", "kill -9 $$", "sleep 30"]));
    }
    // Plain stdout of SessionStart is context for the model: bytes that are
    // not UTF-8 arrive replaced, inside a request that is still valid JSON.
    config.push_str(&hooks_toml("SessionStart", &["printf 'ctx \\377 end'"]));
    case.write(".alcove/config.toml", &config);
    let out = case.run(&["every event"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(end_status(&out), "completed");
    let report = &case.results("every event", 1)[0];
    assert!(!report.1 && report.0.contains("child done"), "{}", report.0);
    let read = &case.results("HOOKED child", 1)[0];
    assert_eq!(read, &("     1\tnotes".to_owned(), false));
    let first = case.server.requests_for("every event")[0].first_user_message_text();
    assert!(first.contains("ctx \u{FFFD} end"), "{first}");
    let warned = warnings(&out);
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
        for what in [
            "failed with status 255",
            "was killed by a signal",
            "timed out",
        ] {
            assert!(
                warned
                    .iter()
                    .any(|warning| warning.starts_with(&format!("{event} hook"))
                        && warning.contains(what)),
                "{event}: {what:?} not in {warned:?}"
            );
        }
    }
}
