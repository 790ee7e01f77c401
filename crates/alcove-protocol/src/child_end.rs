//! What the harness observed a child do, as data: the typed part of a
//! child's one end record (`EventKind::AgentEnded`).
//!
//! The child lifecycle builds it once, from the events the child and its
//! descendants emitted (tool calls' `Effects`, never result text), and
//! renders the footer the parent reads from the same facts; `wait`, the
//! report, OTel and results.jsonl read this record instead of parsing text.

use serde::{Deserialize, Serialize};

/// A child's evidence: what it did and how its run was bounded.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ChildEvidence {
    /// Tool calls it (and its descendants) made.
    pub tool_calls: usize,
    /// Files read, workspace-relative where inside it.
    pub files_read: Vec<String>,
    /// Files created or changed.
    pub files_written: Vec<String>,
    /// Commands run, with how each ended.
    pub commands: Vec<CommandRun>,
    /// Wall time of the run.
    pub duration_ms: u64,
    /// Which budget cut the run short (`wall time over 5s`, `tokens over
    /// 2000`), when one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<String>,
    /// Set when the process runner ran it (`agents.command`, a batch's
    /// command or Slurm runner).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub process: Option<ProcessRun>,
    /// The `[alcove worktree]` line of a child with a worktree of its own:
    /// its branch and commit, or why none was made.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worktree: Option<String>,
    /// What the parent was warned of (an unknown model replaced, …).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// The child's own transcript.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transcript: Option<String>,
    /// The footer the parent read, rendered from these facts (`Agent`'s
    /// report ends with it; `wait` returns it as `evidence`).
    pub footer: String,
}

/// A command a child ran.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandRun {
    /// The command line.
    pub command: String,
    /// `exit 0`, `killed`, `not run`, `ran`.
    pub result: String,
}

/// How the process runner ran a child.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProcessRun {
    /// The alcove session the command ran, when it reported one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// Whether the command reported its usage (alcove's events); when not,
    /// no tokens were charged and only its wall time bounded it.
    pub metered: bool,
}
