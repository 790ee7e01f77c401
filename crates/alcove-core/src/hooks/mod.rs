//! The hook seam: code the user configures to run at points of a session.
//!
//! Every tool call at every depth passes [`Hooks::pre_tool_use`] after the
//! permission gate and before it runs, and [`Hooks::post_tool_use`] after.
//! [`Hooks::stop`] runs when an agent is about to finish (the implementation
//! tells `Stop`, depth 0, from `SubagentStop`, deeper, by the scope). The
//! loop knows only this trait; the Claude Code command-hook protocol is one
//! implementation of it. Every method has a no-op default.
//!
//! - `settings`: the configuration, from TOML or a settings.json.
//! - `matcher`: which tool (agent type, source, reason) an entry is for.
//! - `runner`: one command in its own process group, with a timeout.
//! - `outcome`: what a command's exit status and output mean.
//! - `command`: [`CommandHooks`], the protocol as a [`Hooks`].

mod command;
mod hook_process;
mod matcher;
mod outcome;
mod settings;

pub use command::{CommandHooks, HookSession};
pub use settings::{
    DEFAULT_HOOK_TIMEOUT, HookCommand, HookConfig, HookEntry, HookEvent, HookHandler,
};

use alcove_protocol::AgentPath;
use alcove_tools::ToolOutput;
use serde_json::Value;

/// Which agent a hook runs for.
#[derive(Debug, Clone, Copy)]
pub struct HookScope<'a> {
    /// The agent's path.
    pub agent: &'a AgentPath,
    /// Its depth (0 for the main agent).
    pub depth: u32,
    /// Its agent type, for children.
    pub agent_type: Option<&'a str>,
}

/// The tool call a hook is asked about.
#[derive(Debug, Clone, Copy)]
pub struct HookCall<'a> {
    /// The model's call id.
    pub id: &'a str,
    /// The tool's name.
    pub name: &'a str,
    /// The arguments.
    pub input: &'a Value,
}

/// What PreToolUse hooks decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PreToolVerdict {
    /// No opinion: the permission gate's decision stands.
    Continue,
    /// Run it without asking (never overrides a deny rule, which is checked first).
    Allow,
    /// Ask the user even if the rules would allow it.
    Ask(String),
    /// Refuse it; the reason goes to the model.
    Deny(String),
}

/// What PostToolUse hooks want the model to also read.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PostToolNote {
    /// Text appended to the tool result (`additionalContext`, or a blocking
    /// hook's reason).
    pub additional_context: Option<String>,
}

/// Code that runs at points of a session. Implementations must be safe to
/// call concurrently from several agents.
#[async_trait::async_trait]
pub trait Hooks: Send + Sync {
    /// A session began (`SessionStart`).
    async fn session_start(&self) {}

    /// The user submitted a prompt to the main agent (`UserPromptSubmit`).
    /// `Err(reason)` refuses the prompt; `Ok(Some(text))` adds context.
    async fn user_prompt_submit(&self, _prompt: &str) -> Result<Option<String>, String> {
        Ok(None)
    }

    /// Runs before a call the permission gate did not deny.
    async fn pre_tool_use(&self, _scope: HookScope<'_>, _call: HookCall<'_>) -> PreToolVerdict {
        PreToolVerdict::Continue
    }

    /// Runs after a call, with its result.
    async fn post_tool_use(
        &self,
        _scope: HookScope<'_>,
        _call: HookCall<'_>,
        _output: &ToolOutput,
    ) -> PostToolNote {
        PostToolNote::default()
    }

    /// A child agent is starting (`SubagentStart`).
    async fn subagent_start(&self, _scope: HookScope<'_>) {}

    /// An agent is about to finish with `last_text`: `Stop` at depth 0,
    /// `SubagentStop` below. `Some(reason)` sends it back to work with the
    /// reason as a new user message. `active` is true when it was already
    /// sent back by a stop hook in this run.
    async fn stop(&self, _scope: HookScope<'_>, _last_text: &str, _active: bool) -> Option<String> {
        None
    }

    /// The session is ending (`SessionEnd`).
    async fn session_end(&self, _reason: &str) {}

    /// An agent's history is about to be compacted (`PreCompact`).
    /// `trigger` is `auto` or `manual`; `instructions` is the focus the
    /// user gave `/compact`, if any. It cannot stop the compaction.
    async fn pre_compact(&self, _scope: HookScope<'_>, _trigger: &str, _instructions: &str) {}
}

/// No hooks at all.
pub struct NoHooks;

impl Hooks for NoHooks {}
