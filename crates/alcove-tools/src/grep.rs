//! The `Grep` tool (stub, being written).

use alcove_protocol::ToolSpec;
use serde_json::Value;

use crate::{Access, Invocation, Tool, ToolContext, ToolOutput, Workspace};

/// The `Grep` tool.
pub struct Grep {
    spec: ToolSpec,
}

impl Default for Grep {
    fn default() -> Self {
        Grep {
            spec: ToolSpec {
                name: "Grep".into(),
                description: String::new(),
                input_schema: serde_json::json!({"type": "object"}),
            },
        }
    }
}

#[async_trait::async_trait]
impl Tool for Grep {
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
