//! The permission gate: the one place that decides whether a tool call may run.
//!
//! Every call at every depth is checked here after its arguments were
//! validated and before any hook or the tool itself runs. A refusal is a
//! result the model reads, naming the flag or rule that would allow the call;
//! it is never a crash. The full rule language (allow/ask/deny, per-agent
//! rules, an approver for "ask") extends this type without a second path.

use alcove_protocol::AgentPath;
use alcove_tools::{Access, Invocation, Workspace};

/// How permissive a session is, in Claude Code's terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PermissionMode {
    /// Read-only tools run; anything else needs approval (denied when no one
    /// can be asked).
    Default,
    /// Read-only tools and file edits run; commands need approval.
    AcceptEdits,
    /// Read-only tools only.
    Plan,
    /// Everything runs.
    BypassPermissions,
    /// Like `Default`, but whatever would ask is denied outright.
    DontAsk,
}

impl PermissionMode {
    /// Parses the spelling used by flags and config.
    pub fn parse(text: &str) -> Option<PermissionMode> {
        match text {
            "default" => Some(PermissionMode::Default),
            "acceptEdits" => Some(PermissionMode::AcceptEdits),
            "plan" => Some(PermissionMode::Plan),
            "bypassPermissions" => Some(PermissionMode::BypassPermissions),
            "dontAsk" => Some(PermissionMode::DontAsk),
            _ => None,
        }
    }

    /// The spelling used by flags and config.
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionMode::Default => "default",
            PermissionMode::AcceptEdits => "acceptEdits",
            PermissionMode::Plan => "plan",
            PermissionMode::BypassPermissions => "bypassPermissions",
            PermissionMode::DontAsk => "dontAsk",
        }
    }
}

/// The gate's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// The call may run.
    Allow,
    /// Someone must approve it first; the text says what and how to allow it
    /// for good (it is the denial the model reads when no one can approve).
    Ask(String),
    /// The call may not run; the reason is the result the model reads.
    Deny(String),
}

/// One approval asked of the user: who asks, and exactly what for.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalRequest {
    /// The asking agent's path.
    pub agent: AgentPath,
    /// The asking agent's task description, for children.
    pub agent_description: Option<String>,
    /// The tool.
    pub tool: String,
    /// One line saying what the call does (the command, the file).
    pub summary: String,
    /// The call's arguments.
    pub input: serde_json::Value,
    /// Why approval is needed and what rule or flag would allow it.
    pub reason: String,
}

/// The user's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    /// Run it this once.
    AllowOnce,
    /// Run it, and calls like it for the rest of the session.
    AllowAlways,
    /// Do not run it; the optional text goes to the model.
    Deny(Option<String>),
}

/// Decides the calls the gate says must be asked about.
#[async_trait::async_trait]
pub trait Approver: Send + Sync {
    /// Asks; may wait for the user as long as it takes (cancellation drops the future).
    async fn approve(&self, request: ApprovalRequest) -> Approval;
}

/// The approver of a run without a terminal: nobody can answer, so every
/// request is denied with the request's own reason, which names the rule or
/// flag that would allow the call.
pub struct NoApprover;

#[async_trait::async_trait]
impl Approver for NoApprover {
    async fn approve(&self, _request: ApprovalRequest) -> Approval {
        Approval::Deny(None)
    }
}

/// Decides, for every tool call of a session, whether it may run.
#[derive(Debug)]
pub struct PermissionGate {
    mode: PermissionMode,
}

impl PermissionGate {
    /// A gate for a session in `mode`.
    pub fn new(mode: PermissionMode) -> PermissionGate {
        PermissionGate { mode }
    }

    /// The session's mode.
    pub fn mode(&self) -> PermissionMode {
        self.mode
    }

    /// Checks one validated call.
    pub fn check(
        &self,
        agent: &AgentPath,
        tool: &str,
        access: Access,
        invocation: &Invocation,
        workspace: &Workspace,
    ) -> Decision {
        if self.mode == PermissionMode::BypassPermissions {
            return Decision::Allow;
        }
        match access {
            Access::ReadOnly | Access::Delegate => Decision::Allow,
            Access::Edit => {
                if let Some(outside) = invocation
                    .paths
                    .iter()
                    .find(|path| !workspace.contains(path))
                {
                    return Decision::Deny(format!(
                        "Permission denied: {tool} of {} is outside the workspace {}. \
                         Only --permission-mode bypassPermissions allows writing outside it.",
                        outside.display(),
                        workspace.root().display()
                    ));
                }
                match self.mode {
                    PermissionMode::AcceptEdits => Decision::Allow,
                    PermissionMode::Plan => Decision::Deny(plan_denial(tool)),
                    _ => self.ask(format!(
                        "{tool} ({}) asked by {agent} needs approval. \
                         --permission-mode acceptEdits (or bypassPermissions) allows file edits.",
                        invocation.summary
                    )),
                }
            }
            Access::Execute => match self.mode {
                PermissionMode::Plan => Decision::Deny(plan_denial(tool)),
                _ => self.ask(format!(
                    "{tool} ({}) asked by {agent} needs approval. \
                     --permission-mode bypassPermissions allows commands.",
                    invocation.summary
                )),
            },
        }
    }
}

impl PermissionGate {
    /// `Ask`, or in `dontAsk` mode a denial with the same text.
    fn ask(&self, reason: String) -> Decision {
        match self.mode {
            PermissionMode::DontAsk => {
                Decision::Deny(format!("Permission denied (dontAsk mode): {reason}"))
            }
            _ => Decision::Ask(reason),
        }
    }
}

fn plan_denial(tool: &str) -> String {
    format!(
        "Permission denied: {tool} is not available in plan mode, which allows read-only tools only. \
         Present the plan instead."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(mode: PermissionMode, access: Access, path: &str) -> Decision {
        let dir = tempfile::tempdir().unwrap();
        let workspace = Workspace::new(dir.path()).unwrap();
        let invocation = Invocation {
            summary: path.to_owned(),
            paths: vec![workspace.resolve(path)],
            command: None,
        };
        PermissionGate::new(mode).check(&AgentPath::main(), "Tool", access, &invocation, &workspace)
    }

    #[test]
    fn default_mode_allows_reads_and_refuses_the_rest_naming_the_flag() {
        assert_eq!(
            check(PermissionMode::Default, Access::ReadOnly, "a.txt"),
            Decision::Allow
        );
        let Decision::Ask(edit) = check(PermissionMode::Default, Access::Edit, "a.txt") else {
            panic!("edit allowed in default mode");
        };
        assert!(edit.contains("--permission-mode acceptEdits"), "{edit}");
        let Decision::Ask(bash) = check(PermissionMode::Default, Access::Execute, "a.txt") else {
            panic!("execute allowed in default mode");
        };
        assert!(bash.contains("bypassPermissions"), "{bash}");
    }

    #[test]
    fn accept_edits_allows_edits_inside_the_workspace_only() {
        assert_eq!(
            check(PermissionMode::AcceptEdits, Access::Edit, "src/a.rs"),
            Decision::Allow
        );
        assert!(
            matches!(check(PermissionMode::AcceptEdits, Access::Edit, "../escape.txt"), Decision::Deny(reason) if reason.contains("outside the workspace"))
        );
        assert!(matches!(
            check(PermissionMode::AcceptEdits, Access::Execute, "x"),
            Decision::Ask(_)
        ));
        assert!(matches!(
            check(PermissionMode::DontAsk, Access::Execute, "x"),
            Decision::Deny(reason) if reason.contains("dontAsk")
        ));
    }

    #[test]
    fn plan_mode_allows_read_only_tools_only() {
        assert_eq!(
            check(PermissionMode::Plan, Access::ReadOnly, "a"),
            Decision::Allow
        );
        assert!(
            matches!(check(PermissionMode::Plan, Access::Edit, "a"), Decision::Deny(reason) if reason.contains("plan mode"))
        );
        assert!(matches!(
            check(PermissionMode::Plan, Access::Execute, "a"),
            Decision::Deny(_)
        ));
    }

    #[test]
    fn bypass_allows_everything_even_outside_the_workspace() {
        assert_eq!(
            check(PermissionMode::BypassPermissions, Access::Edit, "../x"),
            Decision::Allow
        );
        assert_eq!(
            check(PermissionMode::BypassPermissions, Access::Execute, "x"),
            Decision::Allow
        );
    }
}
