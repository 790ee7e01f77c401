//! `BashOutput`: what a background command (`Bash` with
//! `run_in_background`) printed since the last read, and whether it still
//! runs — Claude Code's tool of that name, with its parameters.

use alcove_protocol::ToolSpec;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::{Access, Invocation, ToolContext, ToolOutput, TypedTool, Workspace};

/// The tool's name.
pub const BASH_OUTPUT: &str = "BashOutput";

const DESCRIPTION: &str =
    "Reads a background command's new output (since the last read) and whether it still runs.";

/// Arguments of `BashOutput`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct BashOutputInput {
    /// The id Bash returned.
    bash_id: String,
    /// A regex: only matching lines are shown.
    filter: Option<String>,
}

/// The `BashOutput` tool.
pub struct BashOutput {
    spec: ToolSpec,
}

impl Default for BashOutput {
    fn default() -> BashOutput {
        BashOutput {
            spec: crate::tool_spec!(BashOutputInput, BASH_OUTPUT, DESCRIPTION),
        }
    }
}

/// A checked call: the command's id and the filter, compiled.
pub struct BashOutputCall {
    id: String,
    filter: Option<regex::Regex>,
}

fn checked(input: BashOutputInput) -> Result<BashOutputCall, String> {
    let filter = match input.filter.as_deref().filter(|filter| !filter.is_empty()) {
        None => None,
        Some(filter) => Some(
            regex::Regex::new(filter)
                .map_err(|err| format!("filter is not a valid regex: {err}"))?,
        ),
    };
    Ok(BashOutputCall {
        id: input.bash_id,
        filter,
    })
}

#[async_trait::async_trait]
impl TypedTool for BashOutput {
    type Input = BashOutputInput;
    type Call = BashOutputCall;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// It only reads what a command the agent started printed.
    fn access(&self) -> Access {
        Access::ReadOnly
    }

    fn uses_background(&self) -> bool {
        true
    }

    fn inspect(
        &self,
        input: BashOutputInput,
        _workspace: &Workspace,
    ) -> Result<(Invocation, BashOutputCall), String> {
        let call = checked(input)?;
        let invocation = Invocation {
            summary: call.id.clone(),
            paths: Vec::new(),
            command: None,
        };
        Ok((invocation, call))
    }

    async fn call(&self, call: BashOutputCall, context: &ToolContext) -> ToolOutput {
        let BashOutputCall { id, filter } = call;
        let Some(background) = &context.background else {
            return ToolOutput::error("Background commands are not available here.");
        };
        match background.shells.read(&context.agent, &id, filter.as_ref()) {
            Ok(text) => ToolOutput::ok(text),
            Err(reason) => ToolOutput::error(reason),
        }
    }
}
