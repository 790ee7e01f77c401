//! `KillShell`: ends a background command (`Bash` with
//! `run_in_background`) and every process of its group — Claude Code's
//! tool of that name, with its parameter.

use alcove_protocol::ToolSpec;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::{Access, Invocation, ToolContext, ToolOutput, TypedTool, Workspace};

/// The tool's name.
pub const KILL_SHELL: &str = "KillShell";

const DESCRIPTION: &str = "Stops a background command and every process it started.";

/// Arguments of `KillShell`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct KillShellInput {
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
impl TypedTool for KillShell {
    type Input = KillShellInput;
    type Call = KillShellInput;

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

    fn inspect(
        &self,
        input: KillShellInput,
        _workspace: &Workspace,
    ) -> Result<(Invocation, KillShellInput), String> {
        let invocation = Invocation {
            summary: input.shell_id.clone(),
            paths: Vec::new(),
            command: None,
        };
        Ok((invocation, input))
    }

    async fn call(&self, input: KillShellInput, context: &ToolContext) -> ToolOutput {
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
