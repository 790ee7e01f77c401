//! The agent event stream: everything a user can observe, from any agent.
//!
//! The `exec --json` output, the transcripts, the TRACE lines and the
//! interactive UI all consume this one stream, so what one shows the others
//! can show too.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{ChildEvidence, Message, SharedText, Todo, Usage};

/// What one tool call did, as data next to the text the model reads.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Effects {
    /// Files the call read, workspace-relative where inside it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub files_read: Vec<String>,
    /// Files the call created or changed, workspace-relative where inside it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub files_written: Vec<String>,
    /// A command's exit code (`None` when it ran no command, or was killed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The bytes the call read, wrote or a command printed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// The plan a `TodoWrite` call set. Not written with the call's event:
    /// dispatch sends it on as its own `plan_updated` event.
    #[serde(skip)]
    pub plan: Option<Box<[Todo]>>,
}

impl Effects {
    /// Whether nothing is recorded.
    pub fn is_empty(&self) -> bool {
        self == &Effects::default()
    }
}

/// Where an agent sits in the delegation tree: `main`, `main/a1`,
/// `main/a1/a2`, …
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct AgentPath(String);

impl AgentPath {
    /// The path of the top-level agent.
    pub fn main() -> AgentPath {
        AgentPath("main".to_owned())
    }

    /// The path of a child of this agent.
    pub fn child(&self, name: &str) -> AgentPath {
        AgentPath(format!("{}/{name}", self.0))
    }

    /// The path as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// This path as seen from another session whose `main` is `onto`: the
    /// events of an alcove child process are re-tagged this way, so
    /// `main/agent-2` of the child becomes `<onto>/agent-2`.
    pub fn rebase(&self, onto: &AgentPath) -> AgentPath {
        match self.0.strip_prefix("main") {
            Some(rest) if rest.is_empty() || rest.starts_with('/') => {
                AgentPath(format!("{}{rest}", onto.0))
            }
            _ => AgentPath(format!("{}/{}", onto.0, self.0)),
        }
    }
}

impl std::fmt::Display for AgentPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// How an agent run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// The model gave a final answer.
    Completed,
    /// The turn cap was reached first.
    MaxTurns,
    /// The run was cancelled.
    Aborted,
    /// The model could not be reached or failed after retries.
    Failed,
    /// A budget (wall time or tokens) ran out first.
    Budget,
    /// The model provider refused the tree for a reason no retry heals (a
    /// bad key, no quota or credit, an unknown model): this run and every
    /// other of the session stopped, and started nothing new.
    Halted,
}

impl RunStatus {
    /// The lowercase name used in events, trace lines and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Completed => "completed",
            RunStatus::MaxTurns => "max_turns",
            RunStatus::Aborted => "aborted",
            RunStatus::Failed => "failed",
            RunStatus::Budget => "budget",
            RunStatus::Halted => "halted",
        }
    }

    /// Whether the run ended in an error (the model or its provider failed),
    /// not by a cap, a budget or a cancel.
    pub fn is_failure(self) -> bool {
        matches!(self, RunStatus::Failed | RunStatus::Halted)
    }
}

/// One observable thing an agent did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentEvent {
    /// The agent it came from.
    pub agent: AgentPath,
    /// What happened.
    #[serde(flatten)]
    pub kind: EventKind,
}

/// What happened. Serialized with a `type` tag in snake_case; the schema is
/// documented in `docs/events.md`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventKind {
    /// A session began.
    SessionStarted {
        /// The session id (also the transcript's file stem).
        session_id: String,
        /// `provider/model`.
        model: String,
        /// The absolute workspace root.
        workspace: String,
        /// Where the transcript is written, when it is.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        transcript: Option<String>,
    },
    /// A message was appended to the agent's history. Replaying these events
    /// rebuilds the conversation.
    Message {
        /// The message.
        message: Message,
    },
    /// A model turn began.
    TurnStarted {
        /// 1-based turn number.
        turn: u32,
    },
    /// A request is about to be sent to the model.
    ModelRequest {
        /// 1-based turn number.
        turn: u32,
        /// How many messages the request carries.
        messages: usize,
        /// How many tools the model is offered.
        tools: usize,
    },
    /// A failed model request will be retried.
    ModelRetry {
        /// 1-based number of the attempt that failed.
        attempt: u32,
        /// How long until the next attempt.
        delay_ms: u64,
        /// Why the attempt failed.
        reason: String,
    },
    /// A piece of streamed assistant text.
    TextDelta {
        /// The text.
        text: String,
    },
    /// A piece of the model's streamed thinking (shown, never part of the
    /// answer; the whole thinking is in the `message` event).
    ThinkingDelta {
        /// The text.
        text: String,
    },
    /// The streamed text was discarded because the request is being retried
    /// from the start.
    StreamRestarted {
        /// Why.
        reason: String,
    },
    /// The assistant message is complete; its whole text.
    AssistantText {
        /// The text (may be empty when the message only calls tools).
        text: String,
    },
    /// Tokens used by one model request.
    Usage {
        /// Tokens used by this request.
        usage: Usage,
    },
    /// How full the agent's context window is: the estimated size of the
    /// request about to be sent, against the model's window. Emitted before
    /// each model request.
    Context {
        /// Estimated prompt tokens of the next request.
        used: u64,
        /// The model's context window, in tokens.
        window: u64,
    },
    /// The agent's history was compacted: old tool results became one-line
    /// stubs and, when that was not enough, the oldest messages were replaced
    /// by a summary. The transcript keeps every original message; replaying
    /// `message` events and applying each `compacted` event in order rebuilds
    /// the history the agent continued from.
    Compacted {
        /// `auto` (the next request would pass the threshold), `overflow`
        /// (the provider said the request was too long), `manual`
        /// (`/compact`, `exec --compact`) or `resume`.
        trigger: String,
        /// How many messages the history held before.
        messages_before: usize,
        /// How many it holds after.
        messages_after: usize,
        /// Estimated prompt tokens before.
        tokens_before: u64,
        /// Estimated prompt tokens after.
        tokens_after: u64,
        /// The ids of the tool calls whose results became stubs.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        cleared: Vec<String>,
        /// How many messages at the start of the history were replaced by
        /// the summary (0 when no summary was made).
        #[serde(default)]
        replaced: usize,
        /// The summary text, when one was made.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        summary: Option<String>,
    },
    /// A tool call is starting.
    ToolCallStarted {
        /// The call id.
        id: String,
        /// The tool's name.
        name: String,
        /// The arguments.
        input: Value,
    },
    /// A tool call finished (also when it was refused or cancelled).
    ToolCallFinished {
        /// The call id.
        id: String,
        /// The tool's name.
        name: String,
        /// The result text the model will read: the same text the
        /// result's message holds (shared, so its JSON is made once for
        /// both lines and the next request).
        content: SharedText,
        /// Whether it failed, was denied or was cancelled.
        is_error: bool,
        /// Wall time of the call.
        duration_ms: u64,
        /// What the call did, as the tool reported it (files read and
        /// written, exit code, bytes); the evidence footer reads this, never
        /// the result text. Absent when the call did nothing a tool reports.
        #[serde(default, skip_serializing_if = "Effects::is_empty")]
        effects: Effects,
    },
    /// A model turn ended.
    TurnEnded {
        /// 1-based turn number.
        turn: u32,
        /// How many tool calls the turn made.
        tool_calls: usize,
    },
    /// A child agent began.
    AgentStarted {
        /// The child's path.
        child: AgentPath,
        /// The id of the parent's tool call that started it.
        call_id: String,
        /// The child's agent type.
        agent_type: String,
        /// The short task description the parent gave.
        description: String,
        /// The child's depth (the main agent is 0).
        depth: u32,
        /// Where the child's own transcript is written, when it is.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        transcript: Option<String>,
        /// The batch or workflow run it is a task of (`b…`, `wf_…`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        run: Option<String>,
        /// Its workflow phase: its `agent({phase})`, or the title the
        /// script's last `phase()` set.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        phase: Option<String>,
    },
    /// A workflow run started (the model's `Workflow` call, `alcove
    /// workflow run`): emitted by the agent that started it, before its
    /// first agent. Its agents' `agent_started` events name it in `run`.
    WorkflowStarted {
        /// The run's id (`wf_…`).
        run_id: String,
        /// The script's `meta.name`.
        name: String,
        /// The phases `meta.phases` declares, in order.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        phases: Vec<String>,
        /// The most agents it runs at once.
        max_concurrent: u32,
        /// Its budget in tokens, when it has one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        budget_tokens: Option<u64>,
        /// Its budget in dollars, when it has one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        budget_usd: Option<f64>,
    },
    /// A workflow's script called `phase(title)`.
    WorkflowPhase {
        /// The run's id.
        run_id: String,
        /// The phase's title.
        title: String,
    },
    /// A workflow run ended.
    WorkflowEnded {
        /// The run's id.
        run_id: String,
        /// `completed` (the script returned), `failed` (it threw),
        /// `budget_exhausted`, `halted` (the provider refused the tree) or
        /// `cancelled`.
        status: String,
        /// Agents started live.
        agents: u32,
        /// `agent()` calls that gave the script `null`.
        nulls: u32,
        /// One line: what its agents did (`12 agents started, 10 answered,
        /// 2 null (1 failed, 1 cancelled)`).
        summary: String,
        /// Budget tokens its agents used (every input and output token).
        tokens: u64,
        /// What its agents cost, where their prices are known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usd: Option<f64>,
        /// Why it did not complete.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// A child agent ended.
    AgentEnded {
        /// The child's path.
        child: AgentPath,
        /// The short task description the parent gave.
        description: String,
        /// How it ended.
        status: RunStatus,
        /// Whether it completed its task: `status` is `completed`. A run
        /// cut short (a turn cap, a budget, a cancel, an error) is not ok,
        /// whatever it said and whichever face started it.
        ok: bool,
        /// How many model requests it made.
        turns: u32,
        /// Tokens it used.
        usage: Usage,
        /// Why it did not complete, when it failed or was halted.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// What the harness observed it do, as data (the footer's facts).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        evidence: Option<Box<ChildEvidence>>,
    },
    /// Something worth telling the user that is not an error of the run.
    Warning {
        /// What.
        message: String,
    },
    /// The run ended.
    SessionEnded {
        /// How.
        status: RunStatus,
        /// How many model turns it took.
        turns: u32,
        /// Tokens used in all.
        usage: Usage,
        /// The error, when the status is `failed`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// What the tokens cost in dollars, when config has a price for
        /// the model (`[pricing."provider/model"]`); never guessed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost: Option<f64>,
        /// The session's id (to resume it).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session_id: Option<String>,
        /// The main agent's final text.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<String>,
        /// Whether the session ended in an error (any status but
        /// `completed`).
        #[serde(default)]
        is_error: bool,
        /// How long the session ran, in milliseconds.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        duration_ms: Option<u64>,
        /// Usage by agent path (`main`, `main/agent-1`, …): `usage` is
        /// their sum.
        #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
        agents: std::collections::BTreeMap<String, Usage>,
        /// Child runs (an `Agent` call, a spawned agent's submission, a
        /// batch task) that ended without completing.
        #[serde(default)]
        children_incomplete: u32,
    },
    /// The agent's plan changed (a `TodoWrite` call): the whole plan as it
    /// stands now. Also emitted by `resume` with the plan it restored.
    PlanUpdated {
        /// Every step, in order.
        todos: Vec<Todo>,
    },
    /// A `Bash` call started a command in the background (right before its
    /// `tool_call_finished`).
    BackgroundStarted {
        /// Its id (`bash_1`), which `BashOutput` and `KillShell` take.
        id: String,
        /// Its first line, shortened.
        command: String,
        /// Its shell's pid, also its process group's id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pid: Option<u32>,
    },
    /// A background command ended: by itself, or stopped (`KillShell`, its
    /// agent's end, an interrupt, the session's end).
    BackgroundEnded {
        /// Its id.
        id: String,
        /// Its exit code, when it exited by itself.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i32>,
        /// Whether it was stopped rather than exiting by itself.
        killed: bool,
    },
}
