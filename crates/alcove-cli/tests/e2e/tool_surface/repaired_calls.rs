//! Calls a small model gets wrong, repaired only where the repair is
//! unambiguous: a call of one tool with another's arguments runs as that
//! tool, and the gate, hooks and rules judge it as the tool that runs.

use alcove_testkit::{Script, Step};
use serde_json::json;

use super::*;

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
