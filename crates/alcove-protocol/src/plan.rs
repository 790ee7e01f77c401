//! An agent's plan: the list its `TodoWrite` calls keep, in Claude Code's
//! shape (`content`, `status`, `activeForm`), so prompts and agent
//! definitions written for Claude Code that name the tool work unchanged.
//!
//! The plan is data here so the event stream (`plan_updated`), the UI, the
//! evidence footer and resume all read the same thing.

use serde::{Deserialize, Serialize};

/// Where one step of a plan stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    /// Not started.
    Pending,
    /// Being worked on now.
    InProgress,
    /// Done.
    Completed,
}

/// One step of a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Todo {
    /// What the step is, in the imperative ("Run the tests").
    pub content: String,
    /// Where it stands.
    pub status: TodoStatus,
    /// The step while it is being done ("Running the tests").
    #[serde(rename = "activeForm")]
    pub active_form: String,
}

/// How many steps of `todos` are completed.
pub fn completed_count(todos: &[Todo]) -> usize {
    todos
        .iter()
        .filter(|todo| todo.status == TodoStatus::Completed)
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_todo_reads_and_writes_claude_codes_shape() {
        let text = r#"{"content":"Run the tests","status":"in_progress","activeForm":"Running the tests"}"#;
        let todo: Todo = serde_json::from_str(text).unwrap();
        assert_eq!(todo.status, TodoStatus::InProgress);
        assert_eq!(todo.active_form, "Running the tests");
        assert_eq!(serde_json::to_string(&todo).unwrap(), text);
        assert_eq!(completed_count(&[todo]), 0);
    }
}
