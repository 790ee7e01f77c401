//! `KillShell`: ends a background command (`Bash` with
//! `run_in_background`) and every process of its group — Claude Code's
//! tool of that name, with its parameter.

use alcove_protocol::ToolSpec;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::{Access, Invocation, Tool, ToolContext, ToolOutput, Workspace, parse_input};

/// The tool's name.
pub const KILL_SHELL: &str = "KillShell";

const DESCRIPTION: &str = "Stops a background command and every process it started.";

/// Arguments of `KillShell`.
#[derive(Debug, Deserialize, JsonSchema)]
struct KillShellInput {
    /// The id Bash returned.
    shell_id: String,
}

/// The `KillShell` tool.
pub struct KillShell {
    spec: ToolSpec,
}

impl Default for KillShell {
    fn default() -> KillShell {
        KillShell {
            spec: crate::tool_spec!(KillShellInput, KILL_SHELL, DESCRIPTION),
        }
    }
}

#[async_trait::async_trait]
impl Tool for KillShell {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// It only stops a command the agent itself started (which the gate
    /// allowed when it started), as Claude Code's asks no permission.
    fn access(&self) -> Access {
        Access::ReadOnly
    }

    fn concurrency_safe(&self) -> bool {
        false
    }

    fn uses_background(&self) -> bool {
        true
    }

    fn inspect(&self, input: &Value, _workspace: &Workspace) -> Result<Invocation, String> {
        let input: KillShellInput = parse_input(KILL_SHELL, input)?;
        Ok(Invocation {
            summary: input.shell_id,
            paths: Vec::new(),
            command: None,
        })
    }

    async fn call(&self, input: Value, context: &ToolContext) -> ToolOutput {
        let input: KillShellInput = match parse_input(KILL_SHELL, &input) {
            Ok(input) => input,
            Err(reason) => return ToolOutput::error(reason),
        };
        let Some(background) = &context.background else {
            return ToolOutput::error("Background commands are not available here.");
        };
        match background
            .shells
            .kill(&context.agent, &input.shell_id)
            .await
        {
            Ok(text) => ToolOutput::ok(text),
            Err(reason) => ToolOutput::error(reason),
        }
    }
}
