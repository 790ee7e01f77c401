//! What a workflow needs from the program that runs it: agents, and an
//! audience for its progress.
//!
//! The engine knows nothing of alcove's supervisor. `Host::agent` starts one
//! agent and returns how it ended; the host (alcove-cli) runs it as a child
//! through alcove's one child lifecycle. Tests use a fake host.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// One `agent(prompt, opts)` call, as the host gets it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCall {
    /// The call's number in the run, in the order calls were made (0-based).
    #[serde(default)]
    pub index: u32,
    /// The prompt.
    pub prompt: String,
    /// `opts.label`: the agent's name in progress lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// `opts.phase`, or the phase `phase()` last set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// `opts.schema`: the JSON Schema the answer must meet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<Value>,
    /// `opts.model`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// `opts.effort`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
    /// `opts.isolation`: `"worktree"` or none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolation: Option<String>,
    /// `opts.agentType`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_type: Option<String>,
    /// The tokens the run's budget has left, when it has one: the agent's
    /// share (the host makes it the child's token ceiling).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
}

/// Why an agent gave the script `null`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NullReason {
    /// It failed (an error, a limit, no answer).
    Failed,
    /// It was cancelled (the run was stopped).
    Cancelled,
    /// A budget refused it before it started.
    Budget,
    /// The provider refused the tree: nothing more will start.
    Halted,
}

impl NullReason {
    /// The reason's name in end records.
    pub fn as_str(self) -> &'static str {
        match self {
            NullReason::Failed => "failed",
            NullReason::Cancelled => "cancelled",
            NullReason::Budget => "budget",
            NullReason::Halted => "halted",
        }
    }
}

/// How an agent ended.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentOutcome {
    /// Its answer: the final text, or with a schema the validated object.
    Answer {
        /// The value `agent()` resolves to.
        value: Value,
        /// Budget tokens it used (every input and output token).
        tokens: u64,
    },
    /// `agent()` resolves to `null`.
    Null {
        /// Why.
        reason: NullReason,
        /// What the host knows of it (the error, the refusal).
        detail: String,
        /// Budget tokens it used.
        tokens: u64,
    },
    /// `agent()` throws this message (e.g. a schema never met).
    Error {
        /// The message.
        message: String,
        /// Budget tokens it used.
        tokens: u64,
    },
}

impl AgentOutcome {
    /// Budget tokens the agent used.
    pub fn tokens(&self) -> u64 {
        match self {
            AgentOutcome::Answer { tokens, .. }
            | AgentOutcome::Null { tokens, .. }
            | AgentOutcome::Error { tokens, .. } => *tokens,
        }
    }
}

/// What happens in a run, for progress lines and `--json` events.
#[derive(Debug, Clone, PartialEq)]
pub enum RunEvent {
    /// `phase(title)`.
    Phase(String),
    /// `log(message)`.
    Log(String),
    /// An agent started (live, not replayed).
    AgentStarted {
        /// Its call number.
        index: u32,
        /// Its label, or its prompt's first words.
        label: String,
        /// Its phase.
        phase: Option<String>,
    },
    /// An agent ended, or was replayed from the journal.
    AgentEnded {
        /// Its call number.
        index: u32,
        /// Its label.
        label: String,
        /// `answered`, `replayed`, `threw`, or the null reason.
        status: String,
        /// Budget tokens it used.
        tokens: u64,
    },
}

/// The program a workflow runs in.
#[async_trait::async_trait]
pub trait Host: Send + Sync + 'static {
    /// Runs one agent to its end; `cancel` is the run's (or the agent's).
    async fn agent(&self, call: AgentCall, cancel: CancellationToken) -> AgentOutcome;

    /// Something happened; progress and events are the host's to show.
    fn event(&self, event: RunEvent);

    /// The source of the saved workflow `name`, or of the script at
    /// `path`, for `workflow(nameOrRef)`.
    fn workflow_source(&self, name_or_path: &str) -> Result<String, String>;

    /// Dollars this run's agents have cost so far, at their models' known
    /// prices; `None` when the host knows no price (a dollar budget then
    /// cannot be held, and the host refuses one before the run).
    fn spent_usd(&self) -> Option<f64> {
        None
    }
}
