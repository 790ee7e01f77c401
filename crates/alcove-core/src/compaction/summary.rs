//! Summarising: the expensive half of compaction, used only when clearing
//! old tool results was not enough (or the user asked).
//!
//! The oldest messages are sent once more to the model, with the same system
//! prompt and tools (so the request reads the prompt cache), followed by a
//! request for a structured handover note. The history then becomes the
//! first user message (the task, verbatim) with the note appended, followed
//! by the most recent turns verbatim. The split is always just before an
//! assistant message, so no `tool_use` is parted from its `tool_result`.

use std::sync::Arc;

use alcove_model::ModelRequest;
use alcove_protocol::{ContentBlock, EventKind, Message, Role, ToolSpec, Usage};

use super::{ContextLimits, clear, estimate, estimate_all};
use crate::agent_loop::{AgentRun, Runtime};
use crate::deferred;
use crate::plan;

/// What the summary block starts with; also how an earlier summary is told
/// from the task text when compacting again.
pub(crate) const SUMMARY_MARK: &str = "[alcove: the earlier part of this conversation was compacted to save context. The handover note written then follows.]";

/// The request for the handover note (appended to the messages being
/// summarised).
pub(crate) const HANDOVER_PROMPT: &str = "\
[alcove: context compaction] The conversation so far no longer fits the model's context window and is about to be replaced by a handover note that you write now. Do not call any tools; answer with the note only.

Write it so that someone holding nothing but the note and the last few messages can carry on the work without asking anything. Use these headings:

## Goal
What the user asked for, with the constraints and preferences they stated (quote them where the wording matters).
## Decisions
What was decided and why, including approaches tried and given up.
## Files
Every file read, created or changed: its path and what about it matters now.
## Commands
Commands that were run and what they showed: exit status, the key lines of output, errors.
## Facts
Names, numbers, values, identifiers and findings later steps may need. Copy them exactly.
## Open questions
What is still unknown or was asked and not answered.
## Next step
What to do next, concretely.

If the conversation already holds an earlier handover note, carry forward everything in it that still matters: it is the only record of what came before.";

/// Where to split `messages` for a summary: the index of the first message
/// kept verbatim. It is an assistant message after the first message, and
/// the messages from it on take at most `keep_tokens` when that is possible
/// (else only the last assistant message onward are kept). `None` when there
/// is nothing before such a point to summarise.
pub(crate) fn split_point(messages: &[Message], keep_tokens: u64) -> Option<usize> {
    let assistants: Vec<usize> = messages
        .iter()
        .enumerate()
        .skip(2)
        .filter(|(_, message)| message.role == Role::Assistant)
        .map(|(index, _)| index)
        .collect();
    let last = *assistants.last()?;
    let mut kept = 0u64;
    let mut split = last;
    let mut from = messages.len();
    for &index in assistants.iter().rev() {
        kept += messages[index..from].iter().map(estimate).sum::<u64>();
        from = index;
        if kept > keep_tokens {
            break;
        }
        split = index;
    }
    Some(split)
}

/// The messages of the summary request: those before `split`, with the
/// handover request (and the user's focus) appended to the last user
/// message, or as a new one.
pub(crate) fn request_messages(
    messages: &[Message],
    split: usize,
    focus: Option<&str>,
) -> Vec<Message> {
    let mut request: Vec<Message> = messages[..split].to_vec();
    let mut prompt = HANDOVER_PROMPT.to_owned();
    if let Some(focus) = focus.filter(|focus| !focus.trim().is_empty()) {
        prompt.push_str("\n\nThe user asked the note to focus on: ");
        prompt.push_str(focus.trim());
    }
    let block = ContentBlock::Text { text: prompt };
    match request.last_mut() {
        Some(last) if last.role == Role::User => last.content.push(block),
        _ => request.push(Message {
            role: Role::User,
            content: vec![block],
        }),
    }
    request
}

/// The history after a summary: the first message's own text (without an
/// earlier summary) with the note appended, then `messages[split..]`.
pub(crate) fn rebuild(messages: &[Message], split: usize, summary: &str) -> Vec<Message> {
    let mut first: Vec<ContentBlock> = messages
        .first()
        .map(|message| {
            message
                .content
                .iter()
                .filter(|block| {
                    matches!(block, ContentBlock::Text { text }
                        if !text.starts_with(SUMMARY_MARK) && !plan::is_plan_block(text)
                            && !deferred::is_loaded_block(text))
                })
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    first.push(ContentBlock::Text {
        text: format!("{SUMMARY_MARK}\n\n{}", summary.trim()),
    });
    // The plan is kept verbatim, never left to the note: carried here when
    // the messages that hold it are replaced.
    let split = split.min(messages.len());
    if plan::latest_plan(&messages[split..]).is_none()
        && let Some(todos) = plan::latest_plan(&messages[..split])
    {
        first.push(ContentBlock::Text {
            text: plan::plan_block(&todos),
        });
    }
    // So are the tools loaded with ToolSearch (the tail reads its own).
    let loaded = deferred::loaded_in(&messages[..split]);
    if !loaded.is_empty() {
        first.push(ContentBlock::Text {
            text: deferred::loaded_block(&loaded),
        });
    }
    let mut rebuilt = vec![Message {
        role: Role::User,
        content: first,
    }];
    rebuilt.extend(messages[split..].iter().cloned());
    rebuilt
}

/// Asks the model for the handover note about `messages[..split]`.
#[allow(clippy::too_many_arguments)]
pub(super) async fn summarise(
    runtime: &Runtime,
    run: &AgentRun,
    limits: ContextLimits,
    messages: &[Message],
    tools: &Arc<[ToolSpec]>,
    fixed: u64,
    split: usize,
    focus: Option<&str>,
    usage: &mut Usage,
) -> Result<String, String> {
    let mut request_messages = request_messages(messages, split, focus);
    let room = limits
        .window
        .saturating_sub(u64::from(runtime.limits.max_tokens))
        .saturating_sub(fixed);
    if estimate_all(&request_messages) > room {
        // Too big to summarise whole: every result goes, recent ones too.
        let all = clear::clearable(&request_messages, 0, 256);
        clear::clear(&mut request_messages, &all);
    }
    let request = ModelRequest {
        system: run.system_prompt.clone(),
        messages: request_messages,
        tools: tools.clone(),
        max_tokens: runtime.limits.max_tokens,
        effort: run.effort.clone(),
    };
    let on_delta = |_| {};
    let reply = tokio::select! {
        biased;
        () = run.cancel.cancelled() => return Err("cancelled".to_owned()),
        reply = runtime.model.complete(&request, &on_delta) => reply,
    };
    let response = reply.map_err(|error| error.to_string())?;
    usage.add(response.usage);
    runtime.emit(
        &run.path,
        EventKind::Usage {
            usage: response.usage,
        },
    );
    let text = response.message.text();
    if text.trim().is_empty() {
        return Err("the model answered the summary request without text".to_owned());
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn history(turns: usize) -> Vec<Message> {
        let mut messages = vec![Message::user_text("the task")];
        for n in 0..turns {
            messages.push(Message {
                role: Role::Assistant,
                content: vec![ContentBlock::ToolUse {
                    id: format!("t{n}"),
                    name: "Bash".to_owned(),
                    input: json!({"command": "ls"}),
                }],
            });
            messages.push(Message {
                role: Role::User,
                content: vec![ContentBlock::ToolResult {
                    tool_use_id: format!("t{n}"),
                    content: "y".repeat(400).into(),
                    is_error: false,
                }],
            });
        }
        messages
    }

    #[test]
    fn the_split_keeps_whole_turns_within_the_budget() {
        let messages = history(10);
        let split = split_point(&messages, 300).unwrap();
        assert_eq!(messages[split].role, Role::Assistant);
        let kept: u64 = messages[split..].iter().map(estimate).sum();
        assert!(kept <= 300, "{kept}");
        assert!(split < messages.len() - 2);
        // A budget nothing fits still keeps the last turn.
        assert_eq!(split_point(&messages, 0), Some(messages.len() - 2));
        // Nothing to summarise before the only turn.
        assert_eq!(split_point(&history(1), 1000), None);
    }

    #[test]
    fn the_rebuilt_history_starts_with_the_task_and_the_note() {
        let messages = history(4);
        let split = split_point(&messages, 300).unwrap();
        let request = request_messages(&messages, split, Some("the parser"));
        assert_eq!(request.len(), split);
        assert!(
            request
                .last()
                .unwrap()
                .text()
                .contains("The user asked the note to focus on: the parser")
        );
        let rebuilt = rebuild(&messages, split, "NOTE ONE");
        assert_eq!(
            rebuilt[0].text(),
            format!("the task{SUMMARY_MARK}\n\nNOTE ONE")
        );
        assert_eq!(rebuilt[1..], messages[split..]);
        // Compacting again replaces the earlier note, never stacks them.
        let again = rebuild(&rebuilt, 1, "NOTE TWO");
        assert_eq!(again[0].content.len(), 2);
        assert!(again[0].text().ends_with("NOTE TWO"));
    }
}
