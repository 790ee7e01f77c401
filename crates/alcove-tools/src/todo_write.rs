//! `TodoWrite`: the agent's plan, in Claude Code's input shape.
//!
//! The tool changes nothing in the workspace: it checks the list and hands
//! it back as [`Effects::plan`], which dispatch sends on as a
//! `plan_updated` event (the UI draws it, transcripts keep it). The plan
//! itself lives in the history, in the calls' arguments, so compaction,
//! resume and the evidence footer read it from there
//! (`alcove_core::plan`). One plan per agent: each agent's calls are in its
//! own history.

use alcove_protocol::{Todo, TodoStatus, ToolSpec, completed_count};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::{
    Access, Effects, Invocation, ToolContext, ToolOutput, TypedTool, Workspace, parse_input,
};

/// The tool's name, which prompts written for Claude Code use.
pub const TODO_WRITE: &str = "TodoWrite";

const DESCRIPTION: &str = "Keep your plan for this task, which the user sees: the whole list each time, every step pending, in_progress or completed, one in_progress at a time. Use it for work of 3 or more steps; mark a step completed as soon as it is done.";

/// The most steps a plan may have.
const MAX_TODOS: usize = 100;
/// The longest step text, in characters.
const MAX_TEXT: usize = 1_000;

/// Arguments of `TodoWrite`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct TodoWriteInput {
    /// The whole plan, in order.
    todos: Vec<TodoInput>,
}

/// One step.
#[derive(Debug, Deserialize, JsonSchema)]
struct TodoInput {
    /// The step, imperative ("Run the tests").
    content: String,
    status: StatusInput,
    /// The step while being done ("Running the tests").
    #[serde(rename = "activeForm")]
    active_form: String,
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum StatusInput {
    Pending,
    InProgress,
    Completed,
}

/// The `TodoWrite` tool.
pub struct TodoWrite {
    spec: ToolSpec,
}

impl Default for TodoWrite {
    fn default() -> TodoWrite {
        TodoWrite {
            spec: crate::tool_spec!(TodoWriteInput, TODO_WRITE, DESCRIPTION),
        }
    }
}

/// The plan a `TodoWrite` call's arguments hold, or why they are refused.
pub fn parse_todos(input: &Value) -> Result<Vec<Todo>, String> {
    checked_todos(parse_input(TODO_WRITE, input)?)
}

/// The plan, once its steps are checked.
fn checked_todos(input: TodoWriteInput) -> Result<Vec<Todo>, String> {
    if input.todos.len() > MAX_TODOS {
        return Err(format!(
            "a plan has at most {MAX_TODOS} steps; this one has {}. Group smaller steps together.",
            input.todos.len()
        ));
    }
    input
        .todos
        .into_iter()
        .enumerate()
        .map(|(index, todo)| {
            for (field, text) in [
                ("content", &todo.content),
                ("activeForm", &todo.active_form),
            ] {
                if text.trim().is_empty() {
                    return Err(format!("todos[{index}].{field} is empty"));
                }
                if text.chars().count() > MAX_TEXT {
                    return Err(format!(
                        "todos[{index}].{field} is longer than {MAX_TEXT} characters"
                    ));
                }
            }
            Ok(Todo {
                content: todo.content,
                status: match todo.status {
                    StatusInput::Pending => TodoStatus::Pending,
                    StatusInput::InProgress => TodoStatus::InProgress,
                    StatusInput::Completed => TodoStatus::Completed,
                },
                active_form: todo.active_form,
            })
        })
        .collect()
}

#[async_trait::async_trait]
impl TypedTool for TodoWrite {
    type Input = TodoWriteInput;
    type Call = Vec<Todo>;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn access(&self) -> Access {
        // It changes the agent's own plan, nothing the gate guards.
        Access::ReadOnly
    }

    fn concurrency_safe(&self) -> bool {
        // Two plans in one reply are applied in order.
        false
    }

    fn inspect(
        &self,
        input: TodoWriteInput,
        _workspace: &Workspace,
    ) -> Result<(Invocation, Vec<Todo>), String> {
        let todos = checked_todos(input)?;
        let invocation = Invocation {
            summary: format!("{}/{} done", completed_count(&todos), todos.len()),
            paths: Vec::new(),
            command: None,
        };
        Ok((invocation, todos))
    }

    async fn call(&self, todos: Vec<Todo>, _context: &ToolContext) -> ToolOutput {
        let now = todos
            .iter()
            .find(|todo| todo.status == TodoStatus::InProgress)
            .map(|todo| format!("; now: {}", todo.active_form))
            .unwrap_or_default();
        let text = format!(
            "Plan updated: {}/{} completed{now}. Keep it current as you work.",
            completed_count(&todos),
            todos.len()
        );
        ToolOutput::ok(text).with_effects(Effects {
            plan: Some(todos.into_boxed_slice()),
            ..Effects::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_claude_code_plan_is_read_and_bad_ones_are_refused_with_the_field() {
        let plan = json!({"todos": [
            {"content": "Read the code", "status": "completed", "activeForm": "Reading the code"},
            {"content": "Fix it", "status": "in_progress", "activeForm": "Fixing it"},
        ]});
        let todos = parse_todos(&plan).unwrap();
        assert_eq!(todos.len(), 2);
        assert_eq!(todos[1].status, TodoStatus::InProgress);
        let bad = json!({"todos": [{"content": "x", "status": "doing", "activeForm": "x"}]});
        let err = parse_todos(&bad).unwrap_err();
        assert!(err.contains("todos[0].status"), "{err}");
        let empty = json!({"todos": [{"content": " ", "status": "pending", "activeForm": "x"}]});
        assert_eq!(
            parse_todos(&empty).unwrap_err(),
            "todos[0].content is empty"
        );
        // An empty plan clears it.
        assert_eq!(parse_todos(&json!({"todos": []})).unwrap(), vec![]);
    }
}
