//! The fuzz entry points of alcove, one per fuzz target, shared by the
//! cargo-fuzz targets in `fuzz/` (run by hand, for minutes or hours, with
//! libFuzzer) and by the seeded smoke test in `tests/smoke.rs` (run by CI on
//! the stable toolchain, a few seconds per target).
//!
//! Each entry takes arbitrary bytes, drives one parser the way alcove drives
//! it on untrusted input, and panics only when something is wrong: a panic
//! inside the parser, or a property stated next to the entry that does not
//! hold. The inputs come from places alcove does not control: a model
//! server's SSE stream, the arguments a model writes for a tool, agent
//! definition files, permission rules from config and flags, and the shell
//! commands a model asks to run.
//!
//! [`seeds`] holds the valid inputs each target starts from, and [`smoke`]
//! the deterministic input generator the CI test uses.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use alcove_core::{
    Decision, PermissionGate, PermissionMode, Rule, RuleKind, RuleSet, fuzzing, parse_definition,
};
use alcove_model::WireProtocol;
use alcove_protocol::AgentPath;
use alcove_tools::{Access, SandboxScope, Tool, Workspace, builtin_tools};
use serde_json::{Value, json};

pub mod seeds;
pub mod smoke;

/// A fuzz target: its name (the cargo-fuzz target's) and its entry.
#[derive(Debug, Clone, Copy)]
pub struct Target {
    /// The name, as in `cargo fuzz run NAME`.
    pub name: &'static str,
    /// Takes one input; panics only on a bug.
    pub entry: fn(&[u8]),
}

/// Every fuzz target, in the order the smoke test and `fuzz/run` use.
pub const TARGETS: [Target; 7] = [
    Target {
        name: "sse_anthropic",
        entry: sse_anthropic,
    },
    Target {
        name: "sse_openai",
        entry: sse_openai,
    },
    Target {
        name: "sse_responses",
        entry: sse_responses,
    },
    Target {
        name: "tool_arguments",
        entry: tool_arguments,
    },
    Target {
        name: "agent_definition",
        entry: agent_definition,
    },
    Target {
        name: "permission_rules",
        entry: permission_rules,
    },
    Target {
        name: "shell_split",
        entry: shell_split,
    },
];

/// An Anthropic Messages SSE stream: the first byte says how the body is
/// cut into chunks, the rest is the body.
///
/// Property: for a UTF-8 body, how the bytes are cut into chunks never
/// changes the outcome (success or failure, the message, the stop reason,
/// the usage, the text reported on the way).
pub fn sse_anthropic(data: &[u8]) {
    sse(WireProtocol::Anthropic, data);
}

/// An OpenAI Chat Completions SSE stream, as [`sse_anthropic`].
pub fn sse_openai(data: &[u8]) {
    sse(WireProtocol::OpenAi, data);
}

/// An OpenAI Responses SSE stream, as [`sse_anthropic`].
pub fn sse_responses(data: &[u8]) {
    sse(WireProtocol::OpenAiResponses, data);
}

fn sse(protocol: WireProtocol, data: &[u8]) {
    let Some((&knob, body)) = data.split_first() else {
        return;
    };
    let (whole, whole_deltas) = alcove_model::fuzzing::read_stream(protocol, &[body]);
    let chunks = chunked(body, knob);
    let (split, split_deltas) = alcove_model::fuzzing::read_stream(protocol, &chunks);
    // A body that is not UTF-8 fails wherever the decoder meets the bad
    // byte, which may be before or after the end marker depending on the
    // cut; only UTF-8 bodies must not care.
    if std::str::from_utf8(body).is_err() {
        return;
    }
    match (&whole, &split) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a.message, b.message, "chunking changed the message");
            assert_eq!(a.stop_reason, b.stop_reason, "chunking changed the stop");
            assert_eq!(a.usage, b.usage, "chunking changed the usage");
            assert_eq!(whole_deltas, split_deltas, "chunking changed the deltas");
        }
        (Err(_), Err(_)) => {}
        _ => panic!(
            "chunking changed the outcome: whole body {whole:?}, in {} chunks {split:?}",
            chunks.len()
        ),
    }
}

/// `body` cut into chunks: of `knob % 16 + 1` bytes for a knob below 128,
/// otherwise at cut points drawn from a generator seeded with the knob.
fn chunked(body: &[u8], knob: u8) -> Vec<&[u8]> {
    if knob < 128 {
        return body.chunks(usize::from(knob % 16) + 1).collect();
    }
    let mut rng = fastrand::Rng::with_seed(u64::from(knob));
    let mut chunks = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        let (head, tail) = rest.split_at(rng.usize(1..=rest.len().min(40)));
        chunks.push(head);
        rest = tail;
    }
    chunks
}

/// The folder every tool call of the fuzz targets resolves against: an
/// empty folder of its own under the temporary folder (nothing is written).
fn workspace() -> Option<&'static Workspace> {
    static WORKSPACE: OnceLock<Option<Workspace>> = OnceLock::new();
    WORKSPACE
        .get_or_init(|| {
            let root = std::env::temp_dir().join("alcove-fuzz-workspace");
            std::fs::create_dir_all(&root).ok()?;
            Workspace::new(&root).ok()
        })
        .as_ref()
}

/// The built-in tools, built once (their schemas take a while to derive).
fn tools() -> &'static [Arc<dyn Tool<alcove_core::AgentScope>>] {
    static TOOLS: OnceLock<Vec<Arc<dyn Tool<alcove_core::AgentScope>>>> = OnceLock::new();
    TOOLS.get_or_init(builtin_tools)
}

/// The home folder `~/` rules resolve against.
fn home() -> PathBuf {
    PathBuf::from("/home/fuzz")
}

/// Rules like a real config's, which the tool-arguments target's calls are
/// checked against.
fn config_gate() -> &'static Arc<PermissionGate> {
    static GATE: OnceLock<Arc<PermissionGate>> = OnceLock::new();
    GATE.get_or_init(build_config_gate)
}

fn build_config_gate() -> Arc<PermissionGate> {
    let list = |rules: &[&str]| rules.iter().map(|&r| r.to_owned()).collect::<Vec<_>>();
    let rules = RuleSet::from_lists(
        &list(&[
            "Bash(git diff:*)",
            "Bash(npm run *)",
            "Edit(src/**)",
            "Read",
        ]),
        &list(&["Bash(git push:*)", "Write(/tmp/**)"]),
        &list(&["Read(./secrets/**)", "Bash(rm:*)", "Edit(~/.ssh/**)"]),
        "fuzz config",
    )
    .unwrap_or_default();
    Arc::new(
        PermissionGate::new(PermissionMode::Default)
            .with_rules(rules)
            .with_home(Some(home())),
    )
}

/// A tool call's arguments, as a model wrote them: JSON, or text that is
/// not (which the assemblers keep as a string). Every built-in tool
/// validates them the way dispatch does; those that pass go through the
/// permission gate and its "allow always" suggestions.
pub fn tool_arguments(data: &[u8]) {
    let Some(workspace) = workspace() else {
        return;
    };
    let input: Value = serde_json::from_slice(data)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(data).into_owned()));
    let gate = config_gate();
    let agent = AgentPath::main();
    for tool in tools() {
        let name = tool.spec().name.clone();
        let checked = fuzzing::check_arguments(tool.as_ref(), &name, &input, workspace);
        let Ok(invocation) = checked else {
            continue;
        };
        let decision = gate.check(
            &agent,
            &name,
            tool.access(),
            &invocation,
            &input,
            workspace,
            SandboxScope::default(),
        );
        if tool.access() == Access::Execute && matches!(decision, Decision::Allow) {
            // Default mode allows no command unless an allow rule covers every part.
            let command = invocation.command.as_deref().unwrap_or_default();
            assert!(
                fuzzing::shell_parts(command).is_ok(),
                "an unparsable command was allowed: {command:?}"
            );
        }
        for rule in gate.suggest_rules(&name, &input, workspace) {
            let again = Rule::parse(rule.text(), "suggestion");
            assert!(again.is_ok(), "a suggested rule does not parse: {rule}");
        }
    }
}

/// An agent-definition file (lossily decoded: files are read as UTF-8).
/// What parses is used as alcove uses it: its rules are parsed and narrow a
/// parent's gate.
///
/// Properties: a definition that loads has a description, a body, rules
/// that parse and, when it has a timeout, a positive one. The same text read
/// as a skill (`SKILL.md`) or a custom command — the same front-matter
/// parser — loads with a description and a capped body, or a non-empty
/// prompt, and substituting arguments into it never panics.
pub fn agent_definition(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if let Ok(skill) = alcove_core::parse_skill(&text, "fuzz") {
        assert!(
            !skill.description.trim().is_empty(),
            "a skill without a description"
        );
        assert!(
            skill.body.len() <= alcove_core::SKILL_BODY_CAP + 200,
            "an uncapped skill body"
        );
        let _ = alcove_core::Skills::render(&skill, &text);
    }
    if let Ok(command) = alcove_core::parse_command(&text, "fuzz") {
        assert!(!command.body.trim().is_empty(), "an empty command");
        let _ = alcove_core::substitute_arguments(&command.body, &text);
    }
    let Ok((definition, _notes)) = parse_definition(&text, "fuzz") else {
        return;
    };
    assert!(!definition.description.trim().is_empty(), "no description");
    assert!(!definition.system_prompt.trim().is_empty(), "no body");
    assert!(
        definition.timeout.is_none_or(|t| !t.is_zero()),
        "zero timeout"
    );
    assert!(definition.max_turns != Some(0), "zero maxTurns");
    let mode = definition
        .permission_mode
        .as_deref()
        .map(PermissionMode::parse);
    assert!(mode.is_none_or(|m| m.is_some()), "an unknown mode loaded");
    let permissions = &definition.permissions;
    let rules = RuleSet::from_lists(
        &permissions.allow,
        &permissions.ask,
        &permissions.deny,
        "fuzz definition",
    );
    // The loader refuses a definition whose rules do not parse.
    let Ok(rules) = rules else {
        panic!("a definition with a bad rule loaded: {rules:?}");
    };
    let Some(workspace) = workspace() else {
        return;
    };
    let child = config_gate().narrowed(mode.flatten(), rules);
    let bash = json!({"command": "cargo test && git diff"});
    for tool in tools() {
        let name = tool.spec().name.clone();
        let _ = child.offers(&name);
        if let Ok(invocation) = fuzzing::check_arguments(tool.as_ref(), &name, &bash, workspace) {
            let _ = child.check(
                &AgentPath::main().child("fuzz"),
                &name,
                tool.access(),
                &invocation,
                &bash,
                workspace,
                SandboxScope::default(),
            );
        }
    }
}

/// Permission rules and one call to check against them, as lines: the first
/// line is the call's subject (a Bash command, also tried as a file path
/// and an agent type), each further line a rule, `deny ` or `ask ` in front
/// making it one of those (an allow rule otherwise).
///
/// Properties: a rule that parses prints as what it parsed and parses
/// again; a bare `deny Bash` denies every command.
pub fn permission_rules(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let mut lines = text.split('\n');
    let subject = lines.next().unwrap_or_default();
    let mut rules = RuleSet::default();
    let mut denies_bash = false;
    for line in lines {
        let (kind, text) = if let Some(rest) = line.strip_prefix("deny ") {
            (RuleKind::Deny, rest)
        } else if let Some(rest) = line.strip_prefix("ask ") {
            (RuleKind::Ask, rest)
        } else {
            (RuleKind::Allow, line)
        };
        match Rule::parse(text, "fuzz") {
            Ok(rule) => {
                let printed = rule.to_string();
                if printed != text {
                    let again = Rule::parse(&printed, "fuzz again");
                    assert!(again.is_ok(), "{rule} parsed once but not twice");
                }
                denies_bash |= kind == RuleKind::Deny && rule.is_bare() && rule.covers_tool("Bash");
                for tool in ["Bash", "Read", "Write", "Glob", "Agent", "mcp__srv__tool"] {
                    let _ = rule.covers_tool(tool);
                }
                rules.add(kind, rule);
            }
            Err(error) => {
                let _ = error.to_string();
            }
        }
    }
    let Some(workspace) = workspace() else {
        return;
    };
    let mode = match data.len() % 5 {
        0 => PermissionMode::Default,
        1 => PermissionMode::AcceptEdits,
        2 => PermissionMode::Plan,
        3 => PermissionMode::BypassPermissions,
        _ => PermissionMode::DontAsk,
    };
    let gate = Arc::new(
        PermissionGate::new(mode)
            .with_rules(rules)
            .with_home(Some(home())),
    );
    let child = gate.narrowed(None, RuleSet::default());
    let agent = AgentPath::main();
    let calls = [
        json!({"command": subject}),
        json!({"file_path": subject, "content": "", "old_string": "a", "new_string": "b"}),
        json!({"subagent_type": subject}),
    ];
    // Glob and Grep compile their pattern on every call, which would cost
    // most of this target's time; `Read` rules cover them through Read's
    // calls, and the tool-arguments target drives them.
    let file_and_command_tools = tools()
        .iter()
        .filter(|tool| !matches!(tool.spec().name.as_str(), "Glob" | "Grep"));
    for tool in file_and_command_tools {
        let name = tool.spec().name.clone();
        for input in &calls {
            let Ok(invocation) = fuzzing::check_arguments(tool.as_ref(), &name, input, workspace)
            else {
                continue;
            };
            for gate in [&gate, &child] {
                let decision = gate.check(
                    &agent,
                    &name,
                    tool.access(),
                    &invocation,
                    input,
                    workspace,
                    SandboxScope::default(),
                );
                if denies_bash && name == "Bash" {
                    assert!(
                        matches!(decision, Decision::Deny(_)),
                        "`deny Bash` did not deny {subject:?}: {decision:?}"
                    );
                }
            }
        }
    }
    // Suggestions are rules parsed from the call: one command, one path.
    let _ = gate.suggest_rules("Bash", &calls[0], workspace);
    let _ = gate.suggest_rules("Read", &calls[1], workspace);
    for name in ["Agent", "mcp__srv__tool"] {
        let invocation = alcove_tools::Invocation {
            summary: subject.to_owned(),
            paths: Vec::new(),
            command: None,
        };
        let _ = gate.check(
            &agent,
            name,
            Access::Delegate,
            &invocation,
            &calls[2],
            workspace,
            SandboxScope::default(),
        );
        let _ = gate.suggest_rules(name, &calls[2], workspace);
    }
}

/// A Bash command, split as the permission gate splits it (and roughly, as
/// it does when the grammar gives up).
pub fn shell_split(data: &[u8]) {
    let command = String::from_utf8_lossy(data);
    let _ = fuzzing::shell_parts(&command);
    let _ = fuzzing::rough_commands(&command);
}
