//! Noticing a model stuck on one failing call.
//!
//! Small models repeat a call that fails — the same `Edit` with the same
//! wrong `old_string`, turn after turn — until the turn cap. A call whose
//! name, arguments and error are the same as in the turns just before it is
//! on a streak. At [`NOTE_AFTER`] turns in a row its result gets one note
//! telling the model to change course; at [`STOP_AFTER`] the run stops as
//! failed, saying which call it was. A turn without that failure ends the
//! streak.

use std::collections::{HashMap, HashSet};
use std::hash::{DefaultHasher, Hash, Hasher};

use alcove_protocol::ContentBlock;

use crate::ToolCall;

/// Turns in a row after which the failing call's result gets a note.
pub(crate) const NOTE_AFTER: u32 = 3;
/// Turns in a row after which the run stops.
pub(crate) const STOP_AFTER: u32 = 6;

/// The streaks of failing calls, by call and error.
#[derive(Debug, Default)]
pub(crate) struct Repeats {
    streaks: HashMap<u64, u32>,
}

impl Repeats {
    /// Looks at one turn's calls and their results (same order), adds the
    /// note to a result whose streak reached [`NOTE_AFTER`], and returns why
    /// the run must stop when a streak reached [`STOP_AFTER`].
    pub(crate) fn observe(
        &mut self,
        calls: &[ToolCall],
        results: &mut [ContentBlock],
    ) -> Option<String> {
        let mut streaks = HashMap::new();
        let mut seen = HashSet::new();
        let mut stop = None;
        let results = results
            .iter_mut()
            .filter(|block| matches!(block, ContentBlock::ToolResult { .. }));
        for (call, result) in calls.iter().zip(results) {
            let name = &call.name;
            let ContentBlock::ToolResult {
                content,
                is_error: true,
                ..
            } = result
            else {
                continue;
            };
            let mut hasher = DefaultHasher::new();
            (name, call.input_value().to_string(), content.as_str()).hash(&mut hasher);
            let signature = hasher.finish();
            if !seen.insert(signature) {
                continue;
            }
            let streak = self.streaks.get(&signature).copied().unwrap_or(0) + 1;
            streaks.insert(signature, streak);
            if streak == NOTE_AFTER {
                *content = format!(
                    "{content}\n\n[alcove] This exact call has failed the same way {streak} turns in a row. Do not repeat it: change the arguments, read the file again, or try another approach."
                )
                .into();
            }
            if streak >= STOP_AFTER && stop.is_none() {
                let first_line = content.lines().next().unwrap_or("");
                stop = Some(format!(
                    "stopped: the model made the same failing {name} call {streak} turns in a row ({first_line})"
                ));
            }
        }
        self.streaks = streaks;
        stop
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn edit(input: Value) -> Vec<ToolCall> {
        vec![ToolCall::from_use("c", "Edit", &input)]
    }

    fn failing(content: &str) -> ContentBlock {
        ContentBlock::ToolResult {
            tool_use_id: "c".into(),
            content: content.into(),
            is_error: true,
        }
    }

    fn text(block: &ContentBlock) -> &str {
        match block {
            ContentBlock::ToolResult { content, .. } => content,
            _ => "",
        }
    }

    #[test]
    fn a_streak_gets_one_note_then_stops_the_run() {
        let calls = edit(json!({"path": "a"}));
        let mut repeats = Repeats::default();
        for turn in 1..=STOP_AFTER {
            let mut results = vec![failing("old_string not found")];
            let stop = repeats.observe(&calls, &mut results);
            assert_eq!(
                text(&results[0]).contains("[alcove]"),
                turn == NOTE_AFTER,
                "turn {turn}"
            );
            assert_eq!(stop.is_some(), turn == STOP_AFTER, "turn {turn}");
            if let Some(reason) = stop {
                assert!(reason.contains("Edit call 6 turns in a row"), "{reason}");
                assert!(reason.contains("old_string not found"), "{reason}");
            }
        }
    }

    #[test]
    fn a_success_other_arguments_or_another_error_break_the_streak() {
        let calls = edit(json!({"path": "a"}));
        let other = edit(json!({"path": "b"}));
        let mut repeats = Repeats::default();
        for _ in 0..NOTE_AFTER - 1 {
            assert!(repeats.observe(&calls, &mut [failing("x")]).is_none());
        }
        let mut ok = [ContentBlock::ToolResult {
            tool_use_id: "c".into(),
            content: "done".into(),
            is_error: false,
        }];
        assert!(repeats.observe(&calls, &mut ok).is_none());
        assert!(repeats.observe(&other, &mut [failing("x")]).is_none());
        assert!(repeats.observe(&calls, &mut [failing("y")]).is_none());
        let mut results = [failing("y")];
        repeats.observe(&calls, &mut results);
        assert!(!text(&results[0]).contains("[alcove]"));
    }
}
