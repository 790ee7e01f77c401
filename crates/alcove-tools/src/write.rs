//! The `Write` tool: creates or overwrites a whole file.
//!
//! For new files and full rewrites; small changes go through `Edit`, which
//! costs fewer tokens and cannot clobber unrelated lines. Whether the path is
//! allowed is the permission gate's business (it sees [`Invocation::paths`]),
//! not this tool's.

use alcove_protocol::ToolSpec;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::{Access, Effects, Invocation, Tool, ToolContext, ToolOutput, Workspace, parse_input};

const NAME: &str = "Write";
const DESCRIPTION: &str = "Writes a whole file, creating missing folders. Prefer Edit to change \
part of a file.";

/// Arguments of `Write`.
#[derive(Debug, Deserialize, JsonSchema)]
struct WriteInput {
    /// Absolute or workspace-relative path.
    file_path: String,
    /// The whole new content.
    content: String,
}

/// The `Write` tool.
pub struct Write {
    spec: ToolSpec,
}

impl Default for Write {
    fn default() -> Self {
        Write {
            spec: crate::tool_spec!(WriteInput, NAME, DESCRIPTION),
        }
    }
}

#[async_trait::async_trait]
impl Tool for Write {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn access(&self) -> Access {
        Access::Edit
    }

    fn inspect(&self, input: &Value, workspace: &Workspace) -> Result<Invocation, String> {
        let input: WriteInput = parse_input(NAME, input)?;
        Ok(Invocation::file(workspace, &input.file_path))
    }

    async fn call(&self, input: Value, context: &ToolContext) -> ToolOutput {
        let input: WriteInput = match parse_input(NAME, &input) {
            Ok(input) => input,
            Err(reason) => return ToolOutput::error(reason),
        };
        let path = context.file_path(&input.file_path);
        let shown = context.workspace.display(&path);
        let existed = match tokio::fs::metadata(&path).await {
            Ok(meta) if meta.is_dir() => {
                return ToolOutput::error(format!(
                    "{shown} is a directory; cannot write a file there"
                ));
            }
            // Opening a named pipe blocks until someone reads it: the call would hang.
            Ok(meta) if !meta.is_file() => {
                return ToolOutput::error(format!(
                    "{shown} is not a regular file (a pipe, socket or device); Write only writes files"
                ));
            }
            Ok(_) => true,
            Err(_) => false,
        };
        if let Some(parent) = path.parent()
            && let Err(err) = tokio::fs::create_dir_all(parent).await
        {
            return ToolOutput::error(format!(
                "Cannot create the folder {}: {err}",
                context.workspace.display(parent)
            ));
        }
        if let Err(err) = tokio::fs::write(&path, input.content.as_bytes()).await {
            return ToolOutput::error(format!("Cannot write {shown}: {err}"));
        }
        let bytes = input.content.len();
        let verb = if existed { "Updated" } else { "Created" };
        ToolOutput::ok(format!("{verb} {shown} ({bytes} bytes)")).with_effects(Effects {
            files_written: vec![shown],
            bytes: u64::try_from(bytes).ok(),
            ..Effects::default()
        })
    }
}
