//! Tests of narrowing: a child's gate links to its parent's, keeps every
//! deny and ask above it, never widens an allow, takes the stricter mode, and
//! sees session rules granted at the root — proved two levels down.

use serde_json::json;

use super::tests::{asked, denied, fixture, gate, rules};
use super::*;

#[test]
fn modes_order_by_strictness() {
    use PermissionMode::*;
    assert_eq!(Plan.stricter(BypassPermissions), Plan);
    assert_eq!(BypassPermissions.stricter(AcceptEdits), AcceptEdits);
    assert_eq!(AcceptEdits.stricter(Default), Default);
    assert_eq!(Default.stricter(DontAsk), DontAsk);
    assert_eq!(DontAsk.stricter(Plan), Plan);
}

#[test]
fn narrowing_holds_across_two_levels_of_children() {
    let f = fixture();
    let root = gate(
        PermissionMode::Default,
        rules(
            &["Bash(echo:*)", "Bash(cat:*)"],
            &[],
            &["Bash(rm:*)"],
            "--deny",
        ),
    );
    let child = root.narrowed(
        None,
        rules(
            &["Bash(ls:*)"],
            &[],
            &["Bash(curl:*)", "Bash(cat:*)"],
            "agent definition `worker`",
        ),
    );
    let grandchild = child.narrowed(
        Some(PermissionMode::BypassPermissions),
        rules(
            &["Bash(rm:*)", "Bash"],
            &["Bash(echo secret:*)"],
            &[],
            "agent definition `sub`",
        ),
    );
    // The root's deny holds two levels down, whatever the grandchild allows.
    assert!(denied(
        &f.bash(&grandchild, "rm -rf x"),
        "Bash(rm:*) from --deny"
    ));
    // A child's deny holds below it but not above it.
    assert!(denied(
        &f.bash(&grandchild, "curl x"),
        "from agent definition `worker`"
    ));
    assert!(denied(&f.bash(&child, "cat f"), "Bash(cat:*)"));
    assert_eq!(f.bash(&root, "cat f"), Decision::Allow);
    // A child's allow never widens: the root would ask for `ls`.
    assert!(matches!(f.bash(&child, "ls"), Decision::Ask(_)));
    assert!(matches!(f.bash(&grandchild, "ls"), Decision::Ask(_)));
    // What the root allows stays allowed unless a level below asks or denies.
    assert_eq!(f.bash(&grandchild, "echo hi"), Decision::Allow);
    assert!(asked(
        &f.bash(&grandchild, "echo secret stuff"),
        "ask rule Bash(echo secret:*)"
    ));
    // The mode is the stricter one: bypass asked for, default kept.
    assert_eq!(grandchild.mode(), PermissionMode::Default);
    assert!(matches!(
        f.file(&grandchild, "Edit", "src/a.rs"),
        Decision::Ask(_)
    ));
}

#[test]
fn child_modes_are_the_stricter_and_dont_ask_is_inherited() {
    let f = fixture();
    let bypass = gate(PermissionMode::BypassPermissions, RuleSet::default());
    let child = bypass.narrowed(Some(PermissionMode::Default), RuleSet::default());
    assert!(
        matches!(f.bash(&child, "ls"), Decision::Ask(_)),
        "a child can be stricter"
    );
    let grandchild = child.narrowed(Some(PermissionMode::BypassPermissions), RuleSet::default());
    assert!(
        matches!(f.bash(&grandchild, "ls"), Decision::Ask(_)),
        "but never looser"
    );

    let dont_ask = gate(
        PermissionMode::DontAsk,
        rules(&[], &["Bash(git:*)"], &[], "config"),
    );
    let planner = dont_ask.narrowed(Some(PermissionMode::Plan), RuleSet::default());
    let below = planner.narrowed(
        None,
        rules(&[], &["Read(src/**)"], &[], "agent definition `r`"),
    );
    assert_eq!(below.mode(), PermissionMode::Plan);
    assert!(denied(&f.bash(&below, "git log"), "dontAsk"));
    assert!(denied(&f.file(&below, "Read", "src/a.rs"), "dontAsk"));

    let accept = gate(PermissionMode::AcceptEdits, RuleSet::default());
    let editor = accept.narrowed(
        Some(PermissionMode::Default),
        rules(&["Edit(src/**)"], &[], &[], "agent definition `editor`"),
    );
    assert_eq!(f.file(&editor, "Edit", "src/a.rs"), Decision::Allow);
    assert!(matches!(
        f.file(&editor, "Edit", "README.md"),
        Decision::Ask(_)
    ));
}

#[test]
fn offers_and_session_rules_are_consulted_through_the_parent_link() {
    let f = fixture();
    let root = gate(
        PermissionMode::Default,
        rules(&[], &[], &["Grep"], "config"),
    );
    let child = root.narrowed(
        None,
        rules(&[], &[], &["Bash"], "agent definition `explore`"),
    );
    let grandchild = child.narrowed(None, RuleSet::default());
    assert!(!grandchild.offers("Grep") && !grandchild.offers("Bash"));
    assert!(root.offers("Bash") && !root.offers("Grep"));

    let worker = root.narrowed(
        None,
        rules(&[], &[], &["Bash(rm:*)"], "agent definition `w`"),
    );
    let deep = worker.narrowed(None, RuleSet::default());
    assert!(matches!(f.bash(&deep, "cargo test"), Decision::Ask(_)));
    // Granted at the root after the children were made: seen through the link.
    for rule in deep.suggest_rules(
        "Bash",
        &json!({"command": "cargo test && rm x"}),
        &f.workspace,
    ) {
        deep.allow_for_session(rule);
    }
    assert_eq!(f.bash(&deep, "cargo test --all"), Decision::Allow);
    assert_eq!(f.bash(&root, "rm x"), Decision::Allow);
    assert!(
        denied(&f.bash(&deep, "rm x"), "agent definition `w`"),
        "a child's deny still holds"
    );
}

#[test]
fn a_child_in_plan_mode_runs_no_command_and_writes_nothing_whatever_its_parent_allows() {
    let f = fixture();
    let root = gate(
        PermissionMode::AcceptEdits,
        rules(&["Bash(cargo test:*)", "Edit(src/**)"], &[], &[], "--allow"),
    );
    assert_eq!(f.bash(&root, "cargo test"), Decision::Allow);
    let planner = root.narrowed(Some(PermissionMode::Plan), RuleSet::default());
    assert!(denied(&f.bash(&planner, "cargo test"), "plan mode"));
    assert!(denied(&f.file(&planner, "Edit", "src/a.rs"), "plan mode"));
    assert_eq!(f.file(&planner, "Read", "src/a.rs"), Decision::Allow);
}

#[test]
fn only_the_roots_rules_name_a_private_host_a_childs_never_widen_its_reach() {
    let root = gate(
        PermissionMode::Default,
        rules(&["WebFetch"], &[], &[], "--allow"),
    );
    let child = root.narrowed(
        None,
        rules(
            &["WebFetch(domain:127.0.0.1)"],
            &[],
            &[],
            "agent definition `fetcher`",
        ),
    );
    assert!(!child.names_host("WebFetch", "127.0.0.1"));
    let root = gate(
        PermissionMode::Default,
        rules(&["WebFetch(domain:127.0.0.1)"], &[], &[], "--allow"),
    );
    let grandchild = root
        .narrowed(None, rules(&[], &[], &[], "a"))
        .narrowed(None, rules(&[], &[], &[], "b"));
    assert!(grandchild.names_host("WebFetch", "127.0.0.1"));
}
