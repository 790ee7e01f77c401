//! Clearing old tool results: the cheap half of compaction.
//!
//! A result older than the last few turns and larger than a threshold is
//! replaced by a one-line stub naming the call and the size removed; the
//! call itself stays, so every `tool_use` keeps its one `tool_result`. This
//! needs no model call, and in a session of big reads and command outputs it
//! is often all the room needed.

use std::collections::HashMap;

use alcove_protocol::{ContentBlock, Message, Role};
use serde_json::Value;

/// Where a stub starts, so a result is never cleared twice.
const STUB_MARK: &str = "[alcove cleared this result";

/// The ids of the results to clear: those before the last `keep_turns`
/// assistant messages whose content is longer than `over_bytes` and not a
/// stub already.
pub(crate) fn clearable(messages: &[Message], keep_turns: usize, over_bytes: usize) -> Vec<String> {
    old_results(messages, keep_turns, over_bytes)
        .map(|(id, _)| id.to_owned())
        .collect()
}

/// How many bytes clearing the results [`clearable`] names would free,
/// stubs counted.
pub(crate) fn clearable_bytes(messages: &[Message], keep_turns: usize, over_bytes: usize) -> usize {
    old_results(messages, keep_turns, over_bytes)
        .map(|(_, len)| len.saturating_sub(STUB_BYTES))
        .sum()
}

/// About how long a stub is.
const STUB_BYTES: usize = 300;

/// The id and length of each result [`clearable`] names.
fn old_results(
    messages: &[Message],
    keep_turns: usize,
    over_bytes: usize,
) -> impl Iterator<Item = (&str, usize)> {
    let boundary = messages
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, message)| message.role == Role::Assistant)
        .nth(keep_turns.saturating_sub(1))
        .map_or(0, |(index, _)| index);
    let boundary = if keep_turns == 0 {
        messages.len()
    } else {
        boundary
    };
    // A plan's results stay: the plan is never cleared to a stub; nor is
    // a ToolSearch result, which says what the agent loaded.
    let plans: Vec<&str> = messages
        .iter()
        .flat_map(|message| message.tool_uses())
        .filter(|(_, name, _)| {
            *name == alcove_tools::TODO_WRITE || *name == crate::deferred::TOOL_SEARCH
        })
        .map(|(id, _, _)| id)
        .collect();
    let mut results = Vec::new();
    for message in &messages[..boundary] {
        for (index, block) in message.content.iter().enumerate() {
            if let ContentBlock::ToolResult {
                tool_use_id,
                content,
                ..
            } = block
                && !content.starts_with(STUB_MARK)
                && !plans.contains(&tool_use_id.as_str())
            {
                // A result's images are cleared with it.
                let len = content.len() + images_after(&message.content, index);
                if len > over_bytes {
                    results.push((tool_use_id.as_str(), len));
                }
            }
        }
    }
    results.into_iter()
}

/// The base64 bytes of the images that follow block `index` (a result's
/// images come right after it).
fn images_after(blocks: &[ContentBlock], index: usize) -> usize {
    blocks[index + 1..]
        .iter()
        .map_while(|block| match block {
            ContentBlock::Image { data, .. } => Some(data.len()),
            _ => None,
        })
        .sum()
}

/// Replaces the results of the calls `ids` by stubs. Deterministic, so
/// replaying a transcript's `compacted` events rebuilds the same history.
pub(crate) fn clear(messages: &mut [Message], ids: &[String]) {
    if ids.is_empty() {
        return;
    }
    let calls: HashMap<String, (String, String)> = messages
        .iter()
        .flat_map(|message| message.tool_uses())
        .filter(|(id, _, _)| ids.iter().any(|wanted| wanted == id))
        .map(|(id, name, input)| (id.to_owned(), (name.to_owned(), arguments(input))))
        .collect();
    for message in messages.iter_mut() {
        for block in &mut message.content {
            if let ContentBlock::ToolResult {
                tool_use_id,
                content,
                ..
            } = block
                && ids.iter().any(|id| id == tool_use_id)
                && !content.starts_with(STUB_MARK)
            {
                let (name, args) = calls
                    .get(tool_use_id.as_str())
                    .cloned()
                    .unwrap_or_else(|| ("a tool".to_owned(), String::new()));
                *content = format!(
                    "{STUB_MARK} to save context: {name}({args}) returned {} bytes; re-run the call to see it]",
                    content.len()
                )
                .into();
            }
        }
        // A cleared result's images go with it.
        let mut cleared = false;
        message.content.retain(|block| match block {
            ContentBlock::ToolResult { tool_use_id, .. } => {
                cleared = ids.iter().any(|id| id == tool_use_id);
                true
            }
            ContentBlock::Image { .. } if cleared => false,
            _ => {
                cleared = false;
                true
            }
        });
    }
}

/// A call's arguments on one short line.
fn arguments(input: &Value) -> String {
    let text = match input {
        Value::String(raw) => raw.clone(),
        other => other.to_string(),
    };
    let text = text.replace('\n', " ");
    if text.chars().count() <= 160 {
        return text;
    }
    let cut: String = text.chars().take(160).collect();
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn turn(id: &str, result: &str) -> [Message; 2] {
        [
            Message {
                role: Role::Assistant,
                content: vec![ContentBlock::ToolUse {
                    id: id.to_owned(),
                    name: "Read".to_owned(),
                    input: json!({"path": format!("{id}.txt")}),
                }],
            },
            Message {
                role: Role::User,
                content: vec![ContentBlock::ToolResult {
                    tool_use_id: id.to_owned(),
                    content: result.to_owned().into(),
                    is_error: false,
                }],
            },
        ]
    }

    #[test]
    fn old_big_results_become_stubs_and_recent_ones_stay() {
        let big = "x".repeat(5000);
        let mut messages = vec![Message::user_text("task")];
        for id in ["a", "b", "c", "d"] {
            messages.extend(turn(id, &big));
        }
        messages.extend(turn("e", "small"));
        let ids = clearable(&messages, 2, 1000);
        assert_eq!(ids, vec!["a", "b", "c"]);
        clear(&mut messages, &ids);
        let ContentBlock::ToolResult { content, .. } = &messages[2].content[0] else {
            panic!()
        };
        assert!(
            content.contains("Read({\"path\":\"a.txt\"}) returned 5000 bytes"),
            "{content}"
        );
        assert!(content.contains("re-run"));
        // A stub is never cleared again, and the recent turns are kept.
        assert_eq!(clearable(&messages, 2, 10), Vec::<String>::new());
        let ContentBlock::ToolResult { content, .. } = &messages[8].content[0] else {
            panic!()
        };
        assert_eq!(content.len(), 5000);
    }

    #[test]
    fn an_old_result_with_a_big_image_is_cleared_with_its_image() {
        let mut messages = vec![Message::user_text("task")];
        messages.extend(turn("a", "Image a.png: PNG, 900x900, 800 KB."));
        messages[2].content.push(ContentBlock::Image {
            media_type: "image/png".into(),
            data: "A".repeat(4000),
        });
        messages.extend(turn("b", "small"));
        messages.extend(turn("c", "small"));
        let ids = clearable(&messages, 2, 1000);
        assert_eq!(ids, vec!["a"]);
        clear(&mut messages, &ids);
        assert_eq!(messages[2].content.len(), 1, "{:?}", messages[2].content);
    }
}
