//! `ListMcpResources` and `ReadMcpResource`: the servers' resources, offered
//! only when a server has some (Claude Code's two tools, same names).

use std::sync::Arc;

use alcove_protocol::ToolSpec;
use alcove_tools::{Access, Invocation, ToolContext, ToolOutput, TypedTool, Workspace};
use serde::Deserialize;
use serde_json::Value;

use crate::manager::McpManager;
use crate::tool::call_error;

/// Lists resources of one server or all.
pub(crate) struct ListMcpResources {
    manager: Arc<McpManager>,
    spec: ToolSpec,
}

/// Reads one resource.
pub(crate) struct ReadMcpResource {
    manager: Arc<McpManager>,
    spec: ToolSpec,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListInput {
    /// The server whose resources to list (all servers when omitted).
    server: Option<String>,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReadInput {
    /// The server.
    server: String,
    /// The resource's URI.
    uri: String,
}

impl ListMcpResources {
    pub(crate) fn new(manager: Arc<McpManager>) -> ListMcpResources {
        ListMcpResources {
            manager,
            spec: alcove_tools::tool_spec!(
                ListInput,
                "ListMcpResources",
                "Lists the resources MCP servers offer (URI, name, description).",
            ),
        }
    }
}

impl ReadMcpResource {
    pub(crate) fn new(manager: Arc<McpManager>) -> ReadMcpResource {
        ReadMcpResource {
            manager,
            spec: alcove_tools::tool_spec!(
                ReadInput,
                "ReadMcpResource",
                "Reads one resource of an MCP server by its URI.",
            ),
        }
    }
}

#[async_trait::async_trait]
impl TypedTool for ListMcpResources {
    type Input = ListInput;
    type Call = ListInput;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn access(&self) -> Access {
        Access::ReadOnly
    }

    fn inspect(
        &self,
        input: ListInput,
        _workspace: &Workspace,
    ) -> Result<(Invocation, ListInput), String> {
        let invocation = Invocation {
            summary: input
                .server
                .clone()
                .unwrap_or_else(|| "all servers".to_owned()),
            paths: Vec::new(),
            command: None,
        };
        Ok((invocation, input))
    }

    async fn call(&self, input: ListInput, context: &ToolContext) -> ToolOutput {
        let servers = self.manager.resource_servers();
        let mut lines = Vec::new();
        for server in servers.iter().filter(|server| {
            input
                .server
                .as_ref()
                .is_none_or(|name| *name == server.config().name)
        }) {
            match server.list_resources(&context.cancel).await {
                Ok(resources) => {
                    for resource in resources.as_array().into_iter().flatten() {
                        lines.push(format!("{} {resource}", server.config().name));
                    }
                }
                Err(err) => return call_error(server, err),
            }
        }
        if lines.is_empty() {
            return ToolOutput::ok("No resources.");
        }
        ToolOutput::ok(lines.join("\n"))
    }
}

#[async_trait::async_trait]
impl TypedTool for ReadMcpResource {
    type Input = ReadInput;
    type Call = ReadInput;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn access(&self) -> Access {
        Access::ReadOnly
    }

    fn inspect(
        &self,
        input: ReadInput,
        _workspace: &Workspace,
    ) -> Result<(Invocation, ReadInput), String> {
        let invocation = Invocation {
            summary: format!("{} {}", input.server, input.uri),
            paths: Vec::new(),
            command: None,
        };
        Ok((invocation, input))
    }

    async fn call(&self, input: ReadInput, context: &ToolContext) -> ToolOutput {
        let Some(server) = self.manager.server(&input.server) else {
            return ToolOutput::error(format!("No MCP server `{}`.", input.server));
        };
        match server.read_resource(&input.uri, &context.cancel).await {
            Ok(result) => {
                let contents = result.get("contents").and_then(Value::as_array);
                let parts: Vec<String> = contents
                    .into_iter()
                    .flatten()
                    .map(
                        |content| match content.get("text").and_then(Value::as_str) {
                            Some(text) => text.to_owned(),
                            None => format!(
                                "[binary resource {}; not shown]",
                                content.get("uri").and_then(Value::as_str).unwrap_or("")
                            ),
                        },
                    )
                    .collect();
                ToolOutput::ok(parts.join("\n"))
            }
            Err(err) => call_error(server, err),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kept_schemas_are_the_input_types() {
        // A debug build stops on a kept schema that is not the type's.
        let list = alcove_tools::tool_spec!(ListInput, "ListMcpResources", "");
        let read = alcove_tools::tool_spec!(ReadInput, "ReadMcpResource", "");
        assert_eq!(list.input_schema.to_value()["type"], "object");
        assert_eq!(
            read.input_schema.to_value()["required"],
            serde_json::json!(["server", "uri"])
        );
    }
}
