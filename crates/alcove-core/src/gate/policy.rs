//! The permissions an agent passes to an alcove child process.
//!
//! The process runner (`agents.command`) may start another alcove, locally
//! or through `ssh`. The gate a child agent would have had travels with it:
//! each level of the gate chain (mode and allow / ask / deny rules, `--deny`
//! flags and a definition's narrowing included), root first, as JSON (in
//! `ALCOVE_PARENT_POLICY`) or as hex of that JSON (on the command line,
//! which no shell, local or remote, changes). The child rebuilds the chain
//! and narrows it with its own mode and rules, so it can never loosen it.
//! The child's budgets travel with it too ([`Charter`]: its share of turns
//! and tokens, its wall time), which the child takes as ceilings on its own;
//! the parent enforces them from outside as well (`agents/process_runner.rs`).

use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{PermissionGate, PermissionMode, Rule, RuleKind, RuleSet};

/// The environment variable an alcove child reads its parent's policy from.
pub const POLICY_ENV: &str = "ALCOVE_PARENT_POLICY";

/// The permissions an agent passes to an alcove child process: each level
/// of its gate, the root first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParentPolicy {
    levels: Vec<PolicyLevel>,
    /// The sandbox mode of the agent's commands: the child process runs its
    /// own commands in this or a stricter one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sandbox: Option<String>,
    /// Whether the agent's commands may use the network.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    network: Option<bool>,
    /// What the child may use: its share of turns and tokens and its wall
    /// time, which the child process takes as a ceiling on its own.
    #[serde(default, skip_serializing_if = "Charter::is_empty")]
    charter: Charter,
}

/// A child's budgets, as they travel to an alcove child process.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Charter {
    /// Model turns (requests) the child may make.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_turns: Option<u32>,
    /// Tokens the child (its whole tree) may use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// Seconds of wall time the child has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_secs: Option<u64>,
}

impl Charter {
    fn is_empty(&self) -> bool {
        *self == Charter::default()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct PolicyLevel {
    mode: String,
    allow: Vec<String>,
    ask: Vec<String>,
    deny: Vec<String>,
}

impl ParentPolicy {
    /// The policy of `gate`, its ancestors' levels included.
    pub fn of(gate: &PermissionGate) -> ParentPolicy {
        let mut levels = Vec::new();
        let mut level = Some(gate);
        while let Some(gate) = level {
            let texts = |kind| {
                gate.rules()
                    .rules(kind)
                    .iter()
                    .map(|rule: &Rule| rule.text().to_owned())
                    .collect()
            };
            levels.push(PolicyLevel {
                mode: gate.mode().as_str().to_owned(),
                allow: texts(RuleKind::Allow),
                ask: texts(RuleKind::Ask),
                deny: texts(RuleKind::Deny),
            });
            level = gate.parent().map(|parent| parent.as_ref());
        }
        levels.reverse();
        ParentPolicy {
            levels,
            sandbox: None,
            network: None,
            charter: Charter::default(),
        }
    }

    /// The same policy carrying the sandbox the agent's commands run in.
    pub fn with_sandbox(mut self, scope: alcove_tools::SandboxScope) -> ParentPolicy {
        self.sandbox = Some(scope.mode.as_str().to_owned());
        self.network = Some(scope.network);
        self
    }

    /// The same policy carrying the child's budgets.
    pub fn with_charter(mut self, charter: Charter) -> ParentPolicy {
        self.charter = charter;
        self
    }

    /// The budgets the parent gave the child (none set: the parent said nothing).
    pub fn charter(&self) -> Charter {
        self.charter
    }

    /// The sandbox the parent's commands ran in, which the child's may only
    /// tighten (`None`: the parent said nothing).
    pub fn sandbox(&self) -> Option<alcove_tools::SandboxScope> {
        let mode = alcove_tools::SandboxMode::parse(self.sandbox.as_deref()?)?;
        Some(alcove_tools::SandboxScope {
            mode,
            network: self
                .network
                .unwrap_or(mode == alcove_tools::SandboxMode::Off),
        })
    }

    /// The policy as JSON (for the environment).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The policy as hex of its JSON: no shell, local or remote, changes it.
    pub fn to_hex(&self) -> String {
        self.to_json()
            .bytes()
            .map(|byte| format!("{byte:02x}"))
            .collect()
    }

    /// Reads a policy written by [`ParentPolicy::to_json`] or [`ParentPolicy::to_hex`].
    pub fn parse(text: &str) -> Result<ParentPolicy, String> {
        let text = text.trim();
        let json = if text.starts_with('{') {
            text.to_owned()
        } else {
            let bytes = (0..text.len())
                .step_by(2)
                .map(|idx| {
                    text.get(idx..idx + 2)
                        .and_then(|pair| u8::from_str_radix(pair, 16).ok())
                })
                .collect::<Option<Vec<u8>>>()
                .ok_or("the parent policy is neither JSON nor hex")?;
            String::from_utf8(bytes).map_err(|_| "the parent policy is not UTF-8")?
        };
        let policy: ParentPolicy =
            serde_json::from_str(&json).map_err(|err| format!("the parent policy: {err}"))?;
        if policy.levels.is_empty() {
            return Err("the parent policy has no level".to_owned());
        }
        Ok(policy)
    }

    /// The gate chain the policy describes, rooted with `home`; a session
    /// narrows it with its own mode and rules, never loosening it.
    pub fn gate(&self, home: Option<PathBuf>) -> Result<Arc<PermissionGate>, String> {
        let mut gate: Option<Arc<PermissionGate>> = None;
        for level in &self.levels {
            let mode = PermissionMode::parse(&level.mode).ok_or_else(|| {
                format!("the parent policy names an unknown mode `{}`", level.mode)
            })?;
            let rules =
                RuleSet::from_lists(&level.allow, &level.ask, &level.deny, "the parent agent")
                    .map_err(|err| err.to_string())?;
            gate = Some(match gate {
                None => Arc::new(
                    PermissionGate::new(mode)
                        .with_rules(rules)
                        .with_home(home.clone()),
                ),
                Some(parent) => parent.narrowed(Some(mode), rules),
            });
        }
        gate.ok_or_else(|| "the parent policy has no level".to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_policy_survives_hex_and_json_and_rebuilds_a_gate_that_keeps_its_denials() {
        let root = Arc::new(
            PermissionGate::new(PermissionMode::BypassPermissions).with_rules(
                RuleSet::from_lists(&[], &[], &["Bash(rm:*)".to_owned()], "--deny").unwrap(),
            ),
        );
        let child = root.narrowed(Some(PermissionMode::AcceptEdits), RuleSet::default());
        let policy = ParentPolicy::of(&child);
        assert_eq!(ParentPolicy::parse(&policy.to_hex()).unwrap(), policy);
        assert_eq!(ParentPolicy::parse(&policy.to_json()).unwrap(), policy);
        let rebuilt = policy.gate(None).unwrap();
        assert_eq!(rebuilt.mode(), PermissionMode::AcceptEdits);
        assert_eq!(ParentPolicy::of(&rebuilt), policy);
        let charter = Charter {
            max_turns: Some(2),
            max_tokens: Some(30_000),
            wall_secs: Some(60),
        };
        let chartered = policy.clone().with_charter(charter);
        assert_eq!(
            ParentPolicy::parse(&chartered.to_hex()).unwrap().charter(),
            charter
        );
        // A policy without one (an older parent's) has no ceilings.
        assert_eq!(
            ParentPolicy::parse(&policy.to_json()).unwrap().charter(),
            Charter::default()
        );
        assert!(!policy.to_json().contains("charter"));
        assert!(ParentPolicy::parse("zz").is_err());
        assert!(ParentPolicy::parse("{\"levels\": []}").is_err());
    }
}
