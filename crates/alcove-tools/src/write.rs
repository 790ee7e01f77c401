//! The `Write` tool (stub, being written).

use alcove_protocol::ToolSpec;
use serde_json::Value;

use crate::{Access, Invocation, Tool, ToolContext, ToolOutput, Workspace};

/// The `Write` tool.
pub struct Write {
    spec: ToolSpec,
}

impl Default for Write {
    fn default() -> Self {
        Write {
            spec: ToolSpec {
                name: "Write".into(),
                description: String::new(),
                input_schema: serde_json::json!({"type": "object"}),
            },
        }
    }
}

#[async_trait::async_trait]
impl Tool for Write {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    fn access(&self) -> Access {
        Access::ReadOnly
    }
    fn inspect(&self, _input: &Value, _workspace: &Workspace) -> Result<Invocation, String> {
        Err("not implemented".into())
    }
    async fn call(&self, _input: Value, _context: &ToolContext) -> ToolOutput {
        ToolOutput::error("not implemented")
    }
}
