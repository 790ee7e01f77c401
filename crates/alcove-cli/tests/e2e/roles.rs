//! Seed 004's production roles as agent definitions with their own rules:
//! an editor limited to `Edit(src/**)`, a verifier limited to
//! `Bash(cargo test:*)`, an explorer with no Bash at all. A definition's
//! rules narrow its parent's, never loosen them.

use alcove_testkit::{Block, Script, Step, TestEnv};
use serde_json::json;

use crate::support::{exec, setup};

fn define(env: &TestEnv, name: &str, front_matter: &str) {
    env.write_file(
        &format!(".alcove/agents/{name}.md"),
        &format!("---\nname: {name}\ndescription: the {name} role\n{front_matter}---\nYou are the {name}.\n"),
    );
}

fn delegate(agent_type: &str, prompt: &str) -> Step {
    Step::tool_call(
        "Agent",
        json!({"description": agent_type, "prompt": prompt, "subagent_type": agent_type}),
    )
}

#[test]
fn an_editor_may_edit_src_only() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "edit things",
                vec![delegate("editor", "EDITOR child"), Step::text("ok")],
            )
            .conversation(
                "EDITOR child",
                vec![
                    Step::reply(vec![
                        Block::tool_call(
                            "Write",
                            json!({"file_path": "src/lib.rs", "content": "pub fn f() {}\n"}),
                        ),
                        Block::tool_call(
                            "Write",
                            json!({"file_path": "docs/notes.md", "content": "x"}),
                        ),
                    ]),
                    Step::text("edited src only"),
                ],
            ),
    );
    define(
        &env,
        "editor",
        "permissionMode: default\npermissions:\n  allow: [\"Edit(src/**)\"]\n",
    );
    let out = exec(
        &env,
        &server,
        &["--permission-mode", "acceptEdits", "edit things"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(env.read_file("src/lib.rs"), "pub fn f() {}\n");
    assert!(
        !env.path("docs/notes.md").exists(),
        "the editor wrote outside src/"
    );
    let results = server.requests_for("EDITOR child")[1].tool_results();
    assert!(!results[0].2, "{:?}", results[0]);
    assert!(results[1].2, "{:?}", results[1]);
    assert!(
        server.requests_for("EDITOR child")[0]
            .system_prompt()
            .contains("You are the editor.")
    );
}

#[test]
fn a_verifier_may_run_cargo_test_and_nothing_else() {
    let (env, server) = setup(
        Script::new()
            .conversation("verify things", vec![delegate("verifier", "VERIFIER child"), Step::text("ok")])
            .conversation(
                "VERIFIER child",
                vec![
                    Step::reply(vec![
                        Block::tool_call("Bash", json!({"command": "cargo test --offline 2>&1; echo ran-tests > ran.txt"})),
                        Block::tool_call("Bash", json!({"command": "cargo test --offline"})),
                        Block::tool_call("Bash", json!({"command": "touch touched.txt"})),
                        Block::tool_call("Write", json!({"file_path": "w.txt", "content": "x"})),
                    ])
                    // Write is not the verifier's: a model calling it anyway.
                    .unoffered(),
                    Step::text("verified"),
                ],
            ),
    );
    define(
        &env,
        "verifier",
        "tools: Bash, Read\npermissionMode: default\npermissions:\n  allow: [\"Bash(cargo test:*)\"]\n",
    );
    let out = exec(
        &env,
        &server,
        &[
            "-c",
            "sandbox.auto_allow=false",
            "--permission-mode",
            "bypassPermissions",
            "verify things",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let child = &server.requests_for("VERIFIER child")[0];
    assert_eq!(child.tool_names(), ["Read", "Bash"]);
    let results = server.requests_for("VERIFIER child")[1].tool_results();
    assert!(
        results[0].2 && results[0].1.contains("Permission"),
        "a compound command is allowed only if every part is: {:?}",
        results[0]
    );
    assert!(
        !results[1].1.starts_with("Permission"),
        "cargo test runs: {:?}",
        results[1]
    );
    assert!(
        results[2].2 && results[2].1.contains("Permission"),
        "{:?}",
        results[2]
    );
    assert!(
        results[3].2 && results[3].1.contains("Unknown tool `Write`"),
        "{:?}",
        results[3]
    );
    assert!(
        !env.path("touched.txt").exists()
            && !env.path("ran.txt").exists()
            && !env.path("w.txt").exists()
    );
}

#[test]
fn an_explorer_has_no_bash_at_all() {
    let (env, server) = setup(
        Script::new()
            .conversation(
                "explore things",
                vec![delegate("scout", "SCOUT child"), Step::text("ok")],
            )
            .conversation(
                "SCOUT child",
                vec![
                    Step::tool_call("Bash", json!({"command": "touch touched.txt"})).unoffered(),
                    Step::text("looked around"),
                ],
            ),
    );
    define(
        &env,
        "scout",
        "disallowedTools: [Bash]\npermissionMode: plan\n",
    );
    let out = exec(
        &env,
        &server,
        &["--permission-mode", "bypassPermissions", "explore things"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let child = &server.requests_for("SCOUT child")[0];
    assert!(
        !child.tool_names().contains(&"Bash".to_owned()),
        "{:?}",
        child.tool_names()
    );
    let results = server.requests_for("SCOUT child")[1].tool_results();
    assert!(
        results[0].2 && results[0].1.contains("Unknown tool `Bash`"),
        "{:?}",
        results[0]
    );
    assert!(!env.path("touched.txt").exists());
}
