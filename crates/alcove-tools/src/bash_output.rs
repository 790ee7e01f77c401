//! `BashOutput`: what a background command (`Bash` with
//! `run_in_background`) printed since the last read, and whether it still
//! runs — Claude Code's tool of that name, with its parameters.

use alcove_protocol::ToolSpec;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::{Access, Invocation, Tool, ToolContext, ToolOutput, Workspace, parse_input};

/// The tool's name.
pub const BASH_OUTPUT: &str = "BashOutput";

const DESCRIPTION: &str =
    "Reads a background command's new output (since the last read) and whether it still runs.";

/// Arguments of `BashOutput`.
#[derive(Debug, Deserialize, JsonSchema)]
struct BashOutputInput {
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

fn checked(input: &Value) -> Result<(String, Option<regex::Regex>), String> {
    let input: BashOutputInput = parse_input(BASH_OUTPUT, input)?;
    let filter = match input.filter.as_deref().filter(|filter| !filter.is_empty()) {
        None => None,
        Some(filter) => Some(
            regex::Regex::new(filter)
                .map_err(|err| format!("filter is not a valid regex: {err}"))?,
        ),
    };
    Ok((input.bash_id, filter))
}

#[async_trait::async_trait]
impl Tool for BashOutput {
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

    fn inspect(&self, input: &Value, _workspace: &Workspace) -> Result<Invocation, String> {
        let (id, _) = checked(input)?;
        Ok(Invocation {
            summary: id,
            paths: Vec::new(),
            command: None,
        })
    }

    async fn call(&self, input: Value, context: &ToolContext) -> ToolOutput {
        let (id, filter) = match checked(&input) {
            Ok(checked) => checked,
            Err(reason) => return ToolOutput::error(reason),
        };
        let Some(background) = &context.background else {
            return ToolOutput::error("Background commands are not available here.");
        };
        match background.shells.read(&context.agent, &id, filter.as_ref()) {
            Ok(text) => ToolOutput::ok(text),
            Err(reason) => ToolOutput::error(reason),
        }
    }
}
