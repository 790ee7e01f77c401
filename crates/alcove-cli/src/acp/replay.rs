//! `session/load` and `session/list` from alcove's transcripts.
//!
//! A loaded session replays its conversation (the history `resume.rs`
//! rebuilds from the transcript, compactions applied) as the updates a
//! client would have seen live: the user's messages, the agent's thinking
//! and text, and each tool call with its result. (The plan comes as the
//! `plan_updated` event resuming emits, before the history.) The list is
//! `resume.rs`'s, newest first.

use std::collections::HashMap;
use std::time::{SystemTime, UNIX_EPOCH};

use agent_client_protocol::v1::schema::{
    ContentBlock as AcpBlock, ContentChunk, SessionInfo, SessionUpdate, TextContent, ToolCall,
    ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
};
use alcove_protocol::{ContentBlock, Message, Role};

use super::tool_calls;
use super::updates::{Updates, message_chunk, thought_chunk};

/// Sends `history` as updates on the session's main stream.
pub(crate) fn replay(updates: &Updates, history: &[Message], workspace: &std::path::Path) {
    let session = updates.top().to_owned();
    let mut names: HashMap<String, String> = HashMap::new();
    for message in history {
        for block in &message.content {
            match (message.role, block) {
                (Role::User, ContentBlock::Text { text }) => updates.send(
                    &session,
                    SessionUpdate::UserMessageChunk(ContentChunk::new(AcpBlock::Text(
                        TextContent::new(text.clone()),
                    ))),
                ),
                (Role::Assistant, ContentBlock::Text { text }) => {
                    updates.send(&session, message_chunk(text));
                }
                (Role::Assistant, ContentBlock::Thinking { thinking, .. }) => {
                    updates.send(&session, thought_chunk(thinking));
                }
                (_, ContentBlock::ToolUse { id, name, input }) => {
                    names.insert(id.clone(), name.clone());
                    let mut call = ToolCall::new(id.clone(), tool_calls::title(name, input))
                        .kind(tool_calls::kind(name))
                        .status(ToolCallStatus::InProgress)
                        .locations(tool_calls::locations(name, input, workspace))
                        .raw_input(input.clone());
                    if matches!(name.as_str(), "Write" | "Edit") {
                        // The file has changed since: show what the call asked.
                        call = call.content(vec![tool_calls::text(
                            serde_json::to_string_pretty(input).unwrap_or_default(),
                        )]);
                    }
                    updates.send(&session, SessionUpdate::ToolCall(call));
                }
                (
                    _,
                    ContentBlock::ToolResult {
                        tool_use_id,
                        content,
                        is_error,
                    },
                ) => {
                    let name = names.get(tool_use_id).cloned().unwrap_or_default();
                    let status = if *is_error {
                        ToolCallStatus::Failed
                    } else {
                        ToolCallStatus::Completed
                    };
                    updates.send(
                        &session,
                        SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                            tool_use_id.clone(),
                            ToolCallUpdateFields::new()
                                .status(status)
                                .content(vec![tool_calls::result(&name, content.as_str())]),
                        )),
                    );
                }
                // Other blocks (redacted thinking, images) are not replayed.
                #[allow(unreachable_patterns)]
                _ => {}
            }
        }
    }
}

/// alcove's sessions as `session/list` entries, those of `cwd` when given.
pub(crate) fn list(data: &std::path::Path, cwd: Option<&std::path::Path>) -> Vec<SessionInfo> {
    crate::resume::list_sessions(data, cwd)
        .into_iter()
        .map(|info| {
            SessionInfo::new(info.id, std::path::PathBuf::from(&info.workspace))
                .title(Some(info.title).filter(|title| !title.is_empty()))
                .updated_at(iso_8601(info.modified))
        })
        .collect()
}

/// A time as `YYYY-MM-DDTHH:MM:SSZ` (UTC).
fn iso_8601(time: SystemTime) -> String {
    let secs = time
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| elapsed.as_secs())
        .unwrap_or_default();
    let days = i64::try_from(secs / 86_400).unwrap_or_default();
    let rest = secs % 86_400;
    // Howard Hinnant's days-to-civil.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn times_are_utc_iso_8601() {
        assert_eq!(iso_8601(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        let time = UNIX_EPOCH + Duration::from_secs(1_796_300_000);
        assert_eq!(iso_8601(time), "2026-12-03T12:13:20Z");
    }
}
