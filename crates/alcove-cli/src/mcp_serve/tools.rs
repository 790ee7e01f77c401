//! The tools `alcove mcp serve` offers a client, as the client's model
//! reads them (name, description, input and output schema), and the
//! reading of a `delegate` call's arguments into a child's options. A bad
//! argument is a message naming it, which the server returns as a tool
//! error.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde::Deserialize;
use serde_json::{Value, json};

use super::children::ChildOptions;

/// The name of the one-child-to-its-end tool.
pub(crate) const DELEGATE: &str = "delegate";

/// The asynchronous face: alcove's own collab and batch tools, served as
/// they are (`wait` and `close_agent` take batch ids too). A tool of the
/// top agent named here is offered with its own schema and called on the
/// one dispatch path. `Workflow` is served where the server's top agent has
/// it (the full tool profile): it returns a run id at once, and `wait`
/// takes it as for a batch.
pub(crate) const ASYNC_TOOLS: [&str; 7] = [
    "spawn_agent",
    "send_input",
    "wait",
    "close_agent",
    "spawn_batch",
    "retry_batch",
    "Workflow",
];

/// What a client's model is told about the asynchronous tools beyond what
/// alcove's own model reads.
const ASYNC_NOTE: &str = " (alcove MCP server: the agent runs in the server's folder under its \
    rules, sandbox and budgets; its ids live as long as the server.)";

/// The asynchronous tools from their alcove specs.
pub(crate) fn async_tools(specs: Vec<alcove_protocol::ToolSpec>) -> Vec<Tool> {
    specs
        .into_iter()
        .map(|spec| {
            let description = format!("{}{ASYNC_NOTE}", spec.description);
            Tool::new(spec.name, description, object(spec.input_schema.to_value()))
        })
        .collect()
}

/// The tools, in the order they are listed.
pub(crate) fn tool_list(agent_types: &str) -> Vec<Tool> {
    let description = format!(
        "Hands a self-contained task to an alcove child agent and waits for it to finish. The \
         child works in this server's folder with its own fresh conversation, under the server's \
         permission rules, command sandbox and budgets, and returns its report: its own summary, \
         then an evidence footer the harness wrote from what it observed (tool calls, files read \
         and written, commands with exit codes, tokens, turns, transcript). The same facts come \
         as structured content. Several calls may run at once. Write the prompt as for a capable \
         colleague who has not seen your conversation: the goal, where to look, what to report.\n\
         Agent types:\n{agent_types}"
    );
    vec![
        Tool::new(DELEGATE, description, object(delegate_input_schema()))
            .with_title("Delegate a task to an alcove agent")
            .with_raw_output_schema(object(end_record_schema()))
            .with_annotations(
                ToolAnnotations::new()
                    .read_only(false)
                    .destructive(true)
                    .idempotent(false)
                    .open_world(true),
            ),
    ]
}

fn object(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(JsonObject::new()),
    }
}

fn delegate_input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "prompt": {"type": "string", "description": "The task: the goal, the scope, what to report back."},
            "description": {"type": "string", "description": "3-5 words naming the task (shown in progress and in the report)."},
            "agent_type": {"type": "string", "description": "The kind of agent (default \"general-purpose\"); see the tool's description for the list."},
            "model": {"type": "string", "description": "Another model for this child, written provider/name (default: the server's)."},
            "effort": {"type": "string", "enum": ["low", "medium", "high", "max"], "description": "How hard the child thinks."},
            "tools": {"type": "array", "items": {"type": "string"}, "description": "Only these of the server's tools (e.g. [\"Read\", \"Grep\"])."},
            "isolation": {"type": "string", "enum": ["worktree"], "description": "\"worktree\": the child works in its own git worktree of the folder's current files; its changes come back as a branch to merge (`alcove merge`)."},
            "max_turns": {"type": "integer", "minimum": 1, "description": "The most model requests the child may make (within the server's cap)."},
            "max_tokens": {"type": "integer", "minimum": 1, "description": "The most tokens the child may use (within the server's cap)."},
            "timeout_secs": {"type": "integer", "minimum": 1, "description": "Wall-clock limit in seconds; the child is stopped and reports what it did."}
        },
        "required": ["prompt"],
        "additionalProperties": false
    })
}

fn end_record_schema() -> Value {
    let strings = json!({"type": "array", "items": {"type": "string"}});
    let optional_string = json!({"type": ["string", "null"]});
    json!({
        "type": "object",
        "description": "How the child ended, as the harness observed it.",
        "properties": {
            "agent": {"type": "string", "description": "The child's path in the server's agent tree."},
            "status": {"type": "string", "enum": ["completed", "max_turns", "budget", "failed", "cancelled"]},
            "usage": {
                "type": "object",
                "properties": {
                    "input_tokens": {"type": "integer"},
                    "output_tokens": {"type": "integer"},
                    "cache_read_tokens": {"type": "integer"},
                    "cache_write_tokens": {"type": "integer"},
                    "budget_tokens": {"type": "integer"}
                },
                "required": ["input_tokens", "output_tokens", "budget_tokens"]
            },
            "turns": {"type": "integer"},
            "tool_calls": {"type": "integer"},
            "files_read": strings,
            "files_written": strings,
            "commands": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "command": {"type": "string"},
                        "result": {"type": "string", "description": "exit N, killed, not run, or ran"}
                    },
                    "required": ["command", "result"]
                }
            },
            "transcript": optional_string,
            "worktree_branch": optional_string,
            "error": optional_string,
            "report": {"type": "string", "description": "The child's own summary, then the harness's evidence footer (the same as the text content)."}
        },
        "required": ["agent", "status", "usage", "turns", "tool_calls", "files_read", "files_written", "commands", "report"]
    })
}

/// A `delegate` call's arguments, as the schema above says.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DelegateArgs {
    prompt: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    agent_type: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    effort: Option<String>,
    #[serde(default)]
    tools: Option<Vec<String>>,
    #[serde(default)]
    isolation: Option<String>,
    #[serde(default)]
    max_turns: Option<u32>,
    #[serde(default)]
    max_tokens: Option<u64>,
    #[serde(default)]
    timeout_secs: Option<u64>,
}

/// Reads a `delegate` call's arguments; the error names the bad one.
pub(crate) fn delegate_options(arguments: Option<JsonObject>) -> Result<ChildOptions, String> {
    let arguments = Value::Object(arguments.unwrap_or_default());
    let args: DelegateArgs = serde_json::from_value(arguments)
        .map_err(|err| format!("invalid arguments for delegate: {err}"))?;
    if args.timeout_secs == Some(0) {
        return Err("invalid arguments for delegate: `timeout_secs` must be at least 1".to_owned());
    }
    Ok(ChildOptions {
        prompt: args.prompt,
        description: args.description,
        agent_type: args.agent_type,
        tool_names: args.tools,
        model: args.model,
        effort: args.effort,
        isolation: args.isolation,
        max_turns: args.max_turns,
        max_tokens: args.max_tokens,
        wall: args.timeout_secs.map(Duration::from_secs),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(value: Value) -> Option<JsonObject> {
        match value {
            Value::Object(map) => Some(map),
            _ => None,
        }
    }

    #[test]
    fn a_bad_argument_is_named() {
        let missing = delegate_options(args(json!({"description": "x"}))).unwrap_err();
        assert!(missing.contains("prompt"), "{missing}");
        let wrong =
            delegate_options(args(json!({"prompt": "p", "max_turns": "many"}))).unwrap_err();
        assert!(wrong.contains("invalid type"), "{wrong}");
        let unknown = delegate_options(args(json!({"prompt": "p", "turns": 3}))).unwrap_err();
        assert!(unknown.contains("turns"), "{unknown}");
        let zero = delegate_options(args(json!({"prompt": "p", "timeout_secs": 0}))).unwrap_err();
        assert!(zero.contains("timeout_secs"), "{zero}");
    }

    #[test]
    fn every_argument_reaches_the_options() {
        let options = delegate_options(args(json!({
            "prompt": "p", "description": "d", "agent_type": "explore", "model": "m/x",
            "effort": "high", "tools": ["Read"], "isolation": "worktree",
            "max_turns": 3, "max_tokens": 1000, "timeout_secs": 9
        })))
        .unwrap();
        assert_eq!(options.agent_type.as_deref(), Some("explore"));
        assert_eq!(options.tool_names, Some(vec!["Read".to_owned()]));
        assert_eq!(options.wall, Some(Duration::from_secs(9)));
        assert_eq!(
            (options.max_turns, options.max_tokens),
            (Some(3), Some(1000))
        );
    }
}
