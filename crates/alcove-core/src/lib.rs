//! The alcove agent: one loop, called at every depth.
//!
//! [`run_agent`] sends the history and the tools to the model, streams the
//! reply, runs the tool calls through the single dispatch path (lookup →
//! argument validation → permission gate → PreToolUse hooks → call →
//! PostToolUse hooks → result) and loops until the model answers without
//! calling a tool, the turn cap is reached, the run is cancelled or the model
//! fails for good. A subagent is this same loop called again with a fresh
//! history, a narrower tool set and a child cancellation token.
//!
//! Everything observable leaves through an [`EventSink`] as
//! [`alcove_protocol::AgentEvent`]s; this crate never prints, reads argv or
//! the environment, or exits the process.
//!
//! - [`Runtime`]: what an agent runs with, held by reference (model client,
//!   approver, hooks, event sink, workspace, limits, inbox); a child's is its
//!   parent's with its own event sink and, when it asks, another model.
//! - [`AgentRun`]: what one agent run owns (path, depth, gate, tools, cancel
//!   token, budgets, the sink its descendants' events go to).
//! - [`Supervisor`]: what a session's delegations share (limits, slots,
//!   definitions, the registry of spawned agents, the tree budget); a child's
//!   whole life is one path (`agents/lifecycle.rs`) for `Agent`,
//!   `spawn_agent` and `send_input`.
//! - [`PermissionGate`], [`Hooks`]: the seams every tool call passes.
//! - [`Transcript`]: the append-only JSONL record of a session.

mod agent_loop;
mod agents;
mod call;
mod compaction;
mod context;
mod custom_commands;
mod deferred;
mod dispatch;
mod events;
mod file_reads;
mod frontmatter;
#[doc(hidden)]
pub mod fuzzing;
mod gate;
mod hooks;
pub mod isolation;
pub mod known_keys;
mod memory;
mod plan;
mod read_reminder;
mod redact;
mod repair;
mod repeats;
mod schema_fit;
mod skills;
mod tool_lookup;
mod tool_search;
mod transcript;
mod web;

pub use agent_loop::{
    AgentOutcome, AgentRun, DEFAULT_MAX_TOOL_CALLS_PER_REPLY, Inbox, Limits, Runtime, ToolSpecSets,
    run_agent,
};
pub use agents::batch;
pub use agents::{
    AgentDefinition, AgentLimits, DEFAULT_AGENT_TYPE, Definitions, ModelFactory, Supervisor,
    TreeBudget, TreeUsage,
};
pub use agents::{AgentPermissions, DefinitionError, load_definitions, parse_definition};
pub use agents::{AgentScope, BatchRunnerFactory, DynTool, HostRun, HostRuns, ProcessEnv};
pub use agents::{CheckedDelegation, DelegationEnd, DelegationRequest};
pub use call::{CallInput, ToolCall};
#[doc(hidden)]
pub use compaction::clear_old_results;
pub use compaction::{
    Calibration, ContextLimits, DEFAULT_WINDOW, WINDOW_TABLE, compact_history, replay_compaction,
    table_window,
};
pub use context::{ProjectContext, system_prompt};
pub use custom_commands::{
    Commands, CustomCommand, Expansion, expand, load_commands, parse_command,
};
pub use deferred::{DEFERRED_TOOLS, MCP_DEFER_BYTES, TOOL_SEARCH, with_tool_search};
pub use dispatch::front_end_call;
pub use events::{EventSink, FanOut};
pub use file_reads::FileReads;
pub use frontmatter::substitute_arguments;
pub use gate::{
    Approval, ApprovalRequest, Approver, Charter, Decision, NoApprover, POLICY_ENV, ParentPolicy,
    PermissionGate, PermissionMode,
};
pub use gate::{Rule, RuleError, RuleKind, RuleSet};
pub use hooks::{
    CommandHooks, DEFAULT_HOOK_TIMEOUT, HookCommand, HookConfig, HookEntry, HookEvent, HookHandler,
    HookSession,
};
pub use hooks::{HookCall, HookScope, Hooks, NoHooks, PostToolNote, PreToolVerdict};
pub use memory::{MEMORY_CAP, MEMORY_FILE, Memory};
pub use plan::latest_plan;
pub use redact::{REDACTED, RedactingSink, Redactor};
pub use skills::{SKILL_BODY_CAP, Skill, SkillTool, Skills, load_skills, parse_skill};
pub use transcript::{Transcript, read_transcript};
pub use web::{WEB_FETCH, WEB_SEARCH, WebFetch, WebSearch};
