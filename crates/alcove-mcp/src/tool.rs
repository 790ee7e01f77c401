//! The adapter that makes a server's tool an alcove [`Tool`]: its name
//! (`mcp__<server>__<tool>`), description and schema made acceptable to
//! providers, its access (`Execute` unless the server marks it read-only),
//! and its result turned into text. It is thin on purpose: the gate, hooks,
//! approvals and the result cap are the dispatch path's, as for any tool.

use std::sync::Arc;

use alcove_protocol::ToolSpec;
use alcove_tools::{Access, Invocation, ToolContext, ToolOutput, TypedTool, Workspace};
use rmcp::model::CallToolResult;
use serde_json::{Map, Value};

use crate::names::{WRAPPED_KEY, input_schema, tool_name};
use crate::server::{CallError, RemoteTool, Server};

/// One tool of one server.
pub struct McpTool {
    server: Arc<Server>,
    remote: String,
    spec: ToolSpec,
    read_only: bool,
    wrapped: bool,
}

impl McpTool {
    /// The alcove tool for `remote`, a tool of `server`.
    pub fn new(server: Arc<Server>, remote: &RemoteTool) -> McpTool {
        let (schema, wrapped) = input_schema(&remote.input_schema);
        let spec = ToolSpec {
            name: tool_name(&server.config().name, &remote.name),
            description: if remote.description.is_empty() {
                format!(
                    "Tool `{}` of MCP server `{}`.",
                    remote.name,
                    server.config().name
                )
            } else {
                remote.description.clone()
            },
            input_schema: schema.into(),
        };
        McpTool {
            server,
            remote: remote.name.clone(),
            spec,
            read_only: remote.read_only,
            wrapped,
        }
    }
}

#[async_trait::async_trait]
impl TypedTool for McpTool {
    type Input = Value;
    type Call = Map<String, Value>;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn access(&self) -> Access {
        if self.read_only {
            Access::ReadOnly
        } else {
            Access::Execute
        }
    }

    fn inspect(
        &self,
        input: Value,
        _workspace: &Workspace,
    ) -> Result<(Invocation, Map<String, Value>), String> {
        let arguments = arguments(input, self.wrapped, &self.spec.name)?;
        let invocation = Invocation {
            summary: format!("{} {}", self.server.config().name, self.remote),
            paths: Vec::new(),
            command: None,
        };
        Ok((invocation, arguments))
    }

    async fn call(&self, arguments: Map<String, Value>, context: &ToolContext) -> ToolOutput {
        match self
            .server
            .call_tool(&self.remote, arguments, &context.cancel)
            .await
        {
            Ok(result) => {
                // What a server answers is data from it, never instructions.
                let mut output = output(&result);
                output.content = alcove_tools::frame_untrusted(
                    &format!("MCP server {}", self.server.config().name),
                    &output.content,
                );
                output
            }
            Err(err) => call_error(&self.server, err),
        }
    }
}

/// A failed call as the model reads it.
pub(crate) fn call_error(server: &Server, err: CallError) -> ToolOutput {
    match err {
        CallError::Failed(reason) => ToolOutput::error(reason),
        CallError::TimedOut(limit) => ToolOutput::error(format!(
            "MCP server `{}` did not answer within {}s (tool_timeout_sec); the call was cancelled.",
            server.config().name,
            limit.as_secs_f64()
        )),
        CallError::Cancelled => ToolOutput::error("Cancelled: the MCP call was interrupted."),
    }
}

fn arguments(input: Value, wrapped: bool, tool: &str) -> Result<Map<String, Value>, String> {
    match input {
        Value::Object(mut map) if wrapped => match map.remove(WRAPPED_KEY) {
            // The server's own schema is not an object: send the value as the arguments.
            Some(Value::Object(inner)) => Ok(inner),
            Some(other) => {
                map.insert(WRAPPED_KEY.to_owned(), other);
                Ok(map)
            }
            None => Ok(map),
        },
        Value::Object(map) => Ok(map),
        Value::Null => Ok(Map::new()),
        _ => Err(format!(
            "invalid arguments for {tool}: expected a JSON object"
        )),
    }
}

/// A result as text and images: text blocks as they are, structured
/// content as JSON when no text says it, images passed on (made to fit the
/// model APIs' limits, as Read's are) with a line saying what they are,
/// audio as a note, resources by their text or URI. `isError` makes an
/// error result.
pub(crate) fn output(result: &CallToolResult) -> ToolOutput {
    let mut parts = Vec::new();
    let mut images = Vec::new();
    let mut has_text = false;
    for block in &result.content {
        let block = serde_json::to_value(block).unwrap_or(Value::Null);
        let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
        let text = |key: &str| block.get(key).and_then(Value::as_str).unwrap_or("");
        match kind {
            "text" => {
                has_text = true;
                parts.push(text("text").to_owned());
            }
            "image" => match alcove_tools::image::prepare_base64(text("data")) {
                Ok(prepared) => {
                    parts.push(format!(
                        "[image from the MCP tool: {}]",
                        prepared.description
                    ));
                    images.push(prepared.image);
                }
                Err(reason) => parts.push(format!(
                    "[image from the MCP tool ({}) not shown: {reason}]",
                    text("mimeType")
                )),
            },
            "audio" => parts.push(format!(
                "[{kind} from the MCP tool: {}, {} bytes base64; not shown, tool results are text]",
                text("mimeType"),
                text("data").len()
            )),
            "resource" => {
                let resource = block.get("resource").cloned().unwrap_or(Value::Null);
                let uri = resource.get("uri").and_then(Value::as_str).unwrap_or("");
                match resource.get("text").and_then(Value::as_str) {
                    Some(body) => {
                        has_text = true;
                        parts.push(format!("[resource {uri}]\n{body}"));
                    }
                    None => parts.push(format!("[binary resource {uri}; not shown]")),
                }
            }
            "resource_link" => {
                parts.push(format!("[resource link: {} {}]", text("uri"), text("name")))
            }
            _ => parts.push(block.to_string()),
        }
    }
    if let Some(structured) = &result.structured_content
        && !has_text
    {
        parts.push(structured.to_string());
    }
    let content = parts.join("\n");
    let output = if result.is_error == Some(true) {
        ToolOutput::error(content)
    } else {
        ToolOutput::ok(content)
    };
    output.with_images(images)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(json: Value) -> CallToolResult {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn results_become_text() {
        let out = output(&result(serde_json::json!({
            "content": [
                {"type": "text", "text": "Echo: hi"},
                {"type": "image", "data": "AAAA", "mimeType": "image/png"}
            ]
        })));
        assert!(!out.is_error);
        assert!(
            out.content
                .starts_with("Echo: hi\n[image from the MCP tool (image/png) not shown:"),
            "{}",
            out.content
        );
        assert!(out.images.is_empty());
        let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
        let shown = output(&result(serde_json::json!({
            "content": [{"type": "image", "data": png, "mimeType": "image/png"}]
        })));
        assert_eq!(shown.content, "[image from the MCP tool: PNG, 1x1, 1 KB]");
        assert_eq!(shown.images[0].data, png);
        assert_eq!(shown.images[0].media_type, "image/png");
        let structured = output(&result(serde_json::json!({
            "content": [], "structuredContent": {"result": 42}
        })));
        assert_eq!(structured.content, r#"{"result":42}"#);
        let failed = output(&result(serde_json::json!({
            "content": [{"type": "text", "text": "no such file"}], "isError": true
        })));
        assert!(failed.is_error && failed.content == "no such file");
    }

    #[test]
    fn arguments_must_be_objects() {
        assert!(arguments(Value::from(3), false, "t").is_err());
        assert_eq!(arguments(Value::Null, false, "t").unwrap(), Map::new());
        let wrapped = serde_json::json!({"value": {"a": 1}});
        assert_eq!(arguments(wrapped, true, "t").unwrap()["a"], 1);
    }
}
