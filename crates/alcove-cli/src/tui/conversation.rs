//! One agent's conversation as it streams: finished cells, the text still
//! arriving, and the tool calls still running.
//!
//! The main agent and every child are followed with this same type, built
//! from the same events, so a child's live transcript view shows exactly
//! what the main conversation would.

use std::path::Path;
use std::time::{Duration, Instant};

use alcove_protocol::{ContentBlock, EventKind, Message, Role};
use ratatui::text::Line;

use super::cells::{Cell, NoticeKind, ToolCell, ToolStatus, assistant_lines, thinking_lines};
use super::theme::Theme;
use crate::resume::INTERRUPTED_NOTE;

/// One agent's conversation.
#[derive(Debug, Default)]
pub(crate) struct Conversation {
    /// Finished cells (kept for children; the main agent's go to the scrollback).
    pub(crate) cells: Vec<Cell>,
    /// Assistant text of the current model turn, still streaming.
    pub(crate) streaming: String,
    /// Thinking of the current model turn, still streaming.
    pub(crate) thinking: String,
    /// Calls started and not finished, in start order.
    pub(crate) running: Vec<ToolCell>,
}

impl Conversation {
    /// Applies one event of this agent and returns the cells it finished.
    /// `echo_user` shows the agent's own user messages (a child's task);
    /// the main agent's prompts are shown when they are typed instead.
    pub(crate) fn apply(
        &mut self,
        kind: &EventKind,
        workspace: &Path,
        echo_user: bool,
        now: Instant,
    ) -> Vec<Cell> {
        match kind {
            EventKind::TextDelta { text } => {
                self.streaming.push_str(text);
                Vec::new()
            }
            EventKind::ThinkingDelta { text } => {
                self.thinking.push_str(text);
                Vec::new()
            }
            EventKind::StreamRestarted { reason } => {
                self.streaming.clear();
                self.thinking.clear();
                vec![Cell::Notice(
                    NoticeKind::Warning,
                    format!("The model stream broke ({reason}); asking again."),
                )]
            }
            EventKind::AssistantText { text } => {
                self.streaming.clear();
                let thinking = std::mem::take(&mut self.thinking);
                let mut cells = Vec::new();
                if !thinking.trim().is_empty() {
                    cells.push(Cell::Thinking(thinking));
                }
                if !text.trim().is_empty() {
                    cells.push(Cell::Assistant(text.clone()));
                }
                cells
            }
            EventKind::ToolCallStarted { id, name, input } => {
                self.running
                    .push(ToolCell::started(id, name, input, workspace, now));
                Vec::new()
            }
            EventKind::ToolCallFinished {
                id,
                content,
                is_error,
                duration_ms,
                ..
            } => {
                let Some(idx) = self.running.iter().position(|tool| tool.id == *id) else {
                    return Vec::new();
                };
                let mut tool = self.running.remove(idx);
                tool.status = if *is_error {
                    ToolStatus::Failed
                } else {
                    ToolStatus::Ok
                };
                tool.duration_ms = Some(*duration_ms);
                tool.result = Some(content.to_string());
                vec![Cell::Tool(tool)]
            }
            EventKind::ModelRetry {
                attempt,
                delay_ms,
                reason,
            } => vec![Cell::Notice(
                NoticeKind::Warning,
                format!(
                    "Model request failed (attempt {attempt}): {reason}; retrying in {:.1}s",
                    Duration::from_millis(*delay_ms).as_secs_f64()
                ),
            )],
            EventKind::Warning { message } => {
                vec![Cell::Notice(NoticeKind::Warning, message.clone())]
            }
            EventKind::Compacted {
                trigger,
                tokens_before,
                tokens_after,
                cleared,
                summary,
                ..
            } => {
                let how = match (summary.is_some(), cleared.len()) {
                    (true, 0) => "older messages summarised".to_owned(),
                    (true, n) => format!("{n} old tool results cleared, older messages summarised"),
                    (false, n) => format!("{n} old tool results cleared"),
                };
                vec![Cell::Notice(
                    NoticeKind::Info,
                    format!(
                        "Context compacted ({trigger}): {how}; about {} → {} tokens. The transcript keeps everything.",
                        super::cells::format_tokens(*tokens_before),
                        super::cells::format_tokens(*tokens_after)
                    ),
                )]
            }
            EventKind::Message { message } if echo_user && message.role == Role::User => {
                let text = message.text();
                if text.trim().is_empty() {
                    Vec::new()
                } else {
                    vec![Cell::User(text)]
                }
            }
            _ => Vec::new(),
        }
    }

    /// Ends whatever is still streaming (an interrupted turn), returning
    /// the partial answer as a cell.
    pub(crate) fn cut_short(&mut self) -> Vec<Cell> {
        let text = std::mem::take(&mut self.streaming);
        let thinking = std::mem::take(&mut self.thinking);
        let mut cells = Vec::new();
        if !thinking.trim().is_empty() {
            cells.push(Cell::Thinking(thinking));
        }
        if !text.trim().is_empty() {
            cells.push(Cell::Assistant(text));
        }
        cells
    }

    /// What is still in progress, as lines (without running `Agent` calls
    /// when `hide_agent_calls`).
    pub(crate) fn live_lines(
        &self,
        width: usize,
        theme: Theme,
        now: Instant,
        hide_agent_calls: bool,
    ) -> Vec<Line<'static>> {
        let mut out = Vec::new();
        if !self.thinking.trim().is_empty() {
            out.extend(thinking_lines(&self.thinking, width, theme, 3));
        }
        if !self.streaming.trim().is_empty() {
            out.extend(assistant_lines(&self.streaming, width, theme));
        }
        for tool in &self.running {
            if hide_agent_calls && tool.name == "Agent" {
                continue;
            }
            out.extend(Cell::Tool(tool.clone()).lines(width, theme, now));
        }
        out
    }

    /// Finished cells and what is in progress, as lines.
    pub(crate) fn all_lines(&self, width: usize, theme: Theme, now: Instant) -> Vec<Line<'static>> {
        let mut out = Vec::new();
        let mut previous: Option<&Cell> = None;
        for cell in &self.cells {
            if cell.wants_gap(previous) {
                out.push(Line::default());
            }
            out.extend(cell.lines(width, theme, now));
            previous = Some(cell);
        }
        let live = self.live_lines(width, theme, now, false);
        if !live.is_empty() && previous.is_some() {
            out.push(Line::default());
        }
        out.extend(live);
        out
    }
}

/// The cells of a conversation rebuilt from its messages (a resumed
/// session): prompts, answers, and each tool call with its result.
pub(crate) fn cells_from_history(
    messages: &[Message],
    workspace: &Path,
    now: Instant,
) -> Vec<Cell> {
    let results: std::collections::HashMap<&str, (&str, bool)> = messages
        .iter()
        .flat_map(|message| message.content.iter())
        .filter_map(|block| match block {
            ContentBlock::ToolResult {
                tool_use_id,
                content,
                is_error,
            } => Some((tool_use_id.as_str(), (content.as_str(), *is_error))),
            _ => None,
        })
        .collect();
    let mut cells = Vec::new();
    for message in messages {
        for block in &message.content {
            match (message.role, block) {
                (Role::User, ContentBlock::Text { text }) if !text.trim().is_empty() => {
                    cells.push(Cell::User(text.clone()));
                }
                (Role::Assistant, ContentBlock::Thinking { thinking, .. })
                    if !thinking.trim().is_empty() =>
                {
                    cells.push(Cell::Thinking(thinking.clone()));
                }
                // A Responses reasoning summary is shown as thinking too.
                (Role::Assistant, ContentBlock::Reasoning { summary, .. })
                    if summary.iter().any(|part| !part.trim().is_empty()) =>
                {
                    cells.push(Cell::Thinking(summary.join("\n\n")));
                }
                (Role::Assistant, ContentBlock::Text { text }) if text == INTERRUPTED_NOTE => {
                    cells.push(Cell::Notice(NoticeKind::Warning, "Interrupted.".to_owned()));
                }
                (Role::Assistant, ContentBlock::Text { text }) if !text.trim().is_empty() => {
                    cells.push(Cell::Assistant(text.clone()));
                }
                (Role::Assistant, ContentBlock::ToolUse { id, name, input }) => {
                    let mut tool = ToolCell::started(id, name, input, workspace, now);
                    tool.diff = None;
                    let (content, is_error) =
                        results.get(id.as_str()).copied().unwrap_or(("", true));
                    tool.status = if is_error {
                        ToolStatus::Failed
                    } else {
                        ToolStatus::Ok
                    };
                    tool.result = Some(content.to_owned());
                    cells.push(Cell::Tool(tool));
                }
                _ => {}
            }
        }
    }
    cells
}

#[cfg(test)]
mod thinking_tests {
    use super::*;

    #[test]
    fn streamed_thinking_becomes_a_dimmed_folded_cell_before_the_answer() {
        let mut conversation = Conversation::default();
        let now = Instant::now();
        let workspace = Path::new("/w");
        let text = "one\ntwo\nthree\nfour\nfive";
        for piece in [&text[..6], &text[6..]] {
            let kind = EventKind::ThinkingDelta {
                text: piece.to_owned(),
            };
            assert!(conversation.apply(&kind, workspace, false, now).is_empty());
        }
        let theme = Theme::new(false);
        let live = conversation.live_lines(80, theme, now, false);
        assert_eq!(live[0].to_string(), "✻ Thinking (2 earlier lines folded)");
        let cells = conversation.apply(
            &EventKind::AssistantText {
                text: "Done.".to_owned(),
            },
            workspace,
            false,
            now,
        );
        assert!(
            matches!(&cells[..], [Cell::Thinking(t), Cell::Assistant(a)] if t == text && a == "Done.")
        );
        let lines: Vec<String> = cells[0]
            .lines(80, theme, now)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            lines,
            [
                "✻ Thinking (2 earlier lines folded)",
                "  three",
                "  four",
                "  five"
            ]
        );
        assert!(conversation.thinking.is_empty());
    }
}
