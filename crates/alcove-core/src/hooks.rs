//! The hook seam: code the user configures to run around tool calls.
//!
//! Every tool call at every depth passes [`Hooks::pre_tool_use`] before it
//! runs and [`Hooks::post_tool_use`] after; [`Hooks::stop`] runs when the
//! main agent (depth 0 only) is about to finish. The command-hook
//! implementation arrives with the permissions work; the loop only knows this
//! trait.

use alcove_protocol::{AgentPath, Message};
use alcove_tools::ToolOutput;
use serde_json::Value;

/// What a PreToolUse hook decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookVerdict {
    /// Let the call run.
    Continue,
    /// Refuse it; the reason goes to the model as the error result.
    Block(String),
}

/// Code that runs around tool calls and at the end of the main agent's run.
#[async_trait::async_trait]
pub trait Hooks: Send + Sync {
    /// Runs before a call that the permission gate allowed.
    async fn pre_tool_use(&self, agent: &AgentPath, tool: &str, input: &Value) -> HookVerdict;

    /// Runs after a call, with its result. Failures are the hook's own
    /// business: they never change the result.
    async fn post_tool_use(
        &self,
        agent: &AgentPath,
        tool: &str,
        input: &Value,
        output: &ToolOutput,
    );

    /// Runs when the main agent is about to finish. `Some(feedback)` makes it
    /// go on, with the feedback as a new user message.
    async fn stop(&self, messages: &[Message]) -> Option<String>;
}

/// No hooks at all.
pub struct NoHooks;

#[async_trait::async_trait]
impl Hooks for NoHooks {
    async fn pre_tool_use(&self, _agent: &AgentPath, _tool: &str, _input: &Value) -> HookVerdict {
        HookVerdict::Continue
    }

    async fn post_tool_use(
        &self,
        _agent: &AgentPath,
        _tool: &str,
        _input: &Value,
        _output: &ToolOutput,
    ) {
    }

    async fn stop(&self, _messages: &[Message]) -> Option<String> {
        None
    }
}
