//! An agent's plan, as its history holds it.
//!
//! `TodoWrite` keeps no state of its own: the plan is the arguments of the
//! agent's last successful `TodoWrite` call, so one plan per agent comes
//! for free (each agent has its own history) and a child's plan never
//! enters its parent's. When a summary replaces the messages that hold
//! the last call, the plan is carried into the rebuilt first message
//! verbatim ([`plan_block`]), so compaction never loses it and a resumed
//! session, which replays the same compaction, reads the same plan.

use std::collections::HashSet;

use alcove_protocol::{ContentBlock, Message, Todo, completed_count};
use alcove_tools::{TODO_WRITE, parse_todos};

/// What the block carrying the plan through a summary starts with.
pub(crate) const PLAN_MARK: &str = "[alcove: your plan (TodoWrite) as it stood when the conversation was compacted; keep it current with TodoWrite]";

/// The plan the latest successful `TodoWrite` call in `messages` set (or
/// the plan block a summary carried), `None` when there is none.
pub fn latest_plan(messages: &[Message]) -> Option<Vec<Todo>> {
    let failed: HashSet<&str> = messages
        .iter()
        .flat_map(|message| &message.content)
        .filter_map(|block| match block {
            ContentBlock::ToolResult {
                tool_use_id,
                is_error: true,
                ..
            } => Some(tool_use_id.as_str()),
            _ => None,
        })
        .collect();
    messages
        .iter()
        .rev()
        .flat_map(|message| message.content.iter().rev())
        .find_map(|block| match block {
            ContentBlock::ToolUse { id, name, input }
                if name == TODO_WRITE && !failed.contains(id.as_str()) =>
            {
                parse_todos(input).ok()
            }
            ContentBlock::Text { text } => from_block(text),
            _ => None,
        })
}

/// The text that carries `todos` through a summary: the mark, then the
/// plan as `TodoWrite`'s arguments.
pub(crate) fn plan_block(todos: &[Todo]) -> String {
    let arguments = serde_json::json!({ "todos": todos });
    format!("{PLAN_MARK}\n{arguments}")
}

/// Whether `text` is a plan block.
pub(crate) fn is_plan_block(text: &str) -> bool {
    text.starts_with(PLAN_MARK)
}

fn from_block(text: &str) -> Option<Vec<Todo>> {
    let arguments = text.strip_prefix(PLAN_MARK)?;
    parse_todos(&serde_json::from_str(arguments.trim()).ok()?).ok()
}

/// The evidence footer's part for the plan in `messages`: `plan: 4/5 done`.
pub(crate) fn footer_part(messages: &[Message]) -> Option<String> {
    let todos = latest_plan(messages).filter(|todos| !todos.is_empty())?;
    Some(format!(
        "plan: {}/{} done",
        completed_count(&todos),
        todos.len()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use alcove_protocol::Role;
    use serde_json::json;

    fn call(id: &str, todos: serde_json::Value, failed: bool) -> [Message; 2] {
        [
            Message {
                role: Role::Assistant,
                content: vec![ContentBlock::ToolUse {
                    id: id.to_owned(),
                    name: TODO_WRITE.to_owned(),
                    input: json!({ "todos": todos }),
                }],
            },
            Message {
                role: Role::User,
                content: vec![ContentBlock::ToolResult {
                    tool_use_id: id.to_owned(),
                    content: "ok".to_owned().into(),
                    is_error: failed,
                }],
            },
        ]
    }

    fn step(content: &str, status: &str) -> serde_json::Value {
        json!({"content": content, "status": status, "activeForm": format!("{content}ing")})
    }

    #[test]
    fn the_latest_successful_call_is_the_plan_and_a_block_carries_it() {
        let mut messages = vec![Message::user_text("task")];
        assert_eq!(latest_plan(&messages), None);
        messages.extend(call(
            "a",
            json!([step("read", "completed"), step("fix", "pending")]),
            false,
        ));
        messages.extend(call("b", json!([step("never", "pending")]), true));
        let plan = latest_plan(&messages).unwrap();
        assert_eq!(plan.len(), 2);
        assert_eq!(footer_part(&messages).as_deref(), Some("plan: 1/2 done"));
        let block = plan_block(&plan);
        assert!(is_plan_block(&block));
        let carried = vec![Message::user_text(block)];
        assert_eq!(latest_plan(&carried), Some(plan));
    }
}
