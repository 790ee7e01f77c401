//! Issue 44: alcove's own git stays inside the charter. A command that
//! plants a `.git/commondir` naming a copy of the git folder with a
//! `core.fsmonitor` and a `post-checkout` hook must not get them run by
//! the git alcove itself runs (outside the sandbox) for a worktree child.

use alcove_testkit::{Block, Script, Step};
use serde_json::json;

use super::{bash, init_repo};
use crate::support::{exec, setup};

/// The command that copies `.git` to `evil`, gives the copy an fsmonitor
/// and a post-checkout hook that touch `marker`, and points `.git/commondir`
/// at it.
fn plant(evil: &std::path::Path, marker: &std::path::Path) -> Block {
    let (evil, marker) = (evil.display(), marker.display());
    bash(&format!(
        "cp -r .git {evil} && git config --file {evil}/config core.fsmonitor 'touch {marker}; false' \
         && printf '#!/bin/sh\\ntouch {marker}\\n' > {evil}/hooks/post-checkout \
         && chmod +x {evil}/hooks/post-checkout && echo {evil} > .git/commondir && echo PLANTED"
    ))
}

fn worktree_child() -> Block {
    Block::tool_call(
        "Agent",
        json!({"description": "CHILD look", "prompt": "CHILD look", "isolation": "worktree"}),
    )
}

fn script(prompt: &str, evil: &std::path::Path, marker: &std::path::Path) -> Script {
    Script::new()
        .conversation(
            prompt,
            vec![
                Step::reply(vec![plant(evil, marker)]),
                Step::reply(vec![worktree_child()]),
                Step::text("done"),
            ],
        )
        .conversation("CHILD look", vec![Step::text("looked")])
}

#[test]
fn a_planted_commondir_is_undone_and_alcoves_own_git_for_a_worktree_child_runs_nothing_of_it() {
    let outside = tempfile::tempdir().unwrap();
    let (evil, marker) = (outside.path().join("evil"), outside.path().join("MARKER"));
    let (env, server) = setup(script("plant then delegate", &evil, &marker));
    env.write_file("a.txt", "a\n");
    init_repo(env.workspace());
    // Default mode and sandbox: the Bash call is auto-allowed and confined.
    let out = exec(&env, &server, &["plant then delegate"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let results = server.requests_for("plant then delegate")[1].tool_results();
    let (_, planted, is_error) = &results[0];
    assert!(
        *is_error && planted.contains("Refused") && planted.contains("commondir"),
        "{planted}"
    );
    assert!(!env.path(".git/commondir").exists(), "the plant stayed");
    let results = server.requests_for("plant then delegate")[2].tool_results();
    let (_, child, is_error) = &results[1];
    assert!(!is_error && child.contains("[alcove worktree]"), "{child}");
    assert!(
        evil.join("hooks/post-checkout").exists(),
        "the copy was made"
    );
    assert!(
        !marker.exists(),
        "alcove's own git ran a planted fsmonitor or hook"
    );
}

#[test]
fn unconfined_the_plant_stays_and_alcoves_own_git_refuses_the_repository() {
    let outside = tempfile::tempdir().unwrap();
    let (evil, marker) = (outside.path().join("evil"), outside.path().join("MARKER"));
    let (env, server) = setup(script("plant unconfined", &evil, &marker));
    env.write_file("a.txt", "a\n");
    init_repo(env.workspace());
    let out = exec(
        &env,
        &server,
        &[
            "--sandbox",
            "off",
            "--permission-mode",
            "bypassPermissions",
            "plant unconfined",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let results = server.requests_for("plant unconfined")[1].tool_results();
    assert!(results[0].1.contains("PLANTED"), "{:?}", results[0]);
    assert!(env.path(".git/commondir").exists());
    let results = server.requests_for("plant unconfined")[2].tool_results();
    let (_, refused, is_error) = &results[1];
    assert!(
        *is_error && refused.contains("refuses to run git") && refused.contains("commondir"),
        "{refused}"
    );
    assert!(
        !marker.exists(),
        "alcove's own git ran a planted fsmonitor or hook"
    );
}
