//! The pieces of a conversation as the user sees them — a prompt, an answer,
//! a tool call, a notice — and how each becomes lines.
//!
//! A tool call is one compact line (icon, tool, key argument, duration)
//! with, below it, a diff for `Edit`/`Write`, a few lines of output for
//! `Bash` and `Agent`, or the start of the error when it failed.

use std::path::Path;
use std::time::{Duration, Instant};

use ratatui::text::{Line, Span};
use serde_json::Value;

use super::diff::{self, FileDiff};
use super::markdown;
use super::theme::Theme;
use super::wrap::{truncate, wrap_line};

const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
/// Diff rows shown under a finished Edit/Write.
const DIFF_ROWS: usize = 16;

/// Where a tool call is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ToolStatus {
    Running,
    Ok,
    Failed,
}

/// One tool call.
#[derive(Debug, Clone)]
pub(crate) struct ToolCell {
    pub(crate) id: String,
    pub(crate) name: String,
    /// The argument that says what the call does (command, file, pattern).
    pub(crate) arg: String,
    pub(crate) status: ToolStatus,
    pub(crate) started: Instant,
    pub(crate) duration_ms: Option<u64>,
    /// For Edit/Write, what the call changes.
    pub(crate) diff: Option<FileDiff>,
    /// The result text, once finished.
    pub(crate) result: Option<String>,
}

impl ToolCell {
    /// A call that just started.
    pub(crate) fn started(
        id: &str,
        name: &str,
        input: &Value,
        workspace: &Path,
        now: Instant,
    ) -> ToolCell {
        ToolCell {
            id: id.to_owned(),
            name: name.to_owned(),
            arg: key_argument(name, input, workspace),
            status: ToolStatus::Running,
            started: now,
            duration_ms: None,
            diff: diff::for_tool(name, input, workspace),
            result: None,
        }
    }
}

/// How serious a notice is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NoticeKind {
    Info,
    Warning,
    Error,
}

/// One piece of a conversation.
#[derive(Debug, Clone)]
pub(crate) enum Cell {
    User(String),
    Assistant(String),
    /// The model's thinking before an answer, shown dimmed and folded.
    Thinking(String),
    Tool(ToolCell),
    Notice(NoticeKind, String),
    /// Lines rendered elsewhere (command output, agent summaries).
    Lines(Vec<Line<'static>>),
}

impl Cell {
    /// Whether a blank line separates this cell from the one before.
    pub(crate) fn wants_gap(&self, previous: Option<&Cell>) -> bool {
        match self {
            Cell::Tool(_) => !matches!(previous, Some(Cell::Tool(_))),
            _ => previous.is_some(),
        }
    }

    /// The cell as lines `width` wide.
    pub(crate) fn lines(&self, width: usize, theme: Theme, now: Instant) -> Vec<Line<'static>> {
        match self {
            Cell::User(text) => {
                let mut out = Vec::new();
                for (idx, line) in text.lines().enumerate() {
                    let lead = if idx == 0 { "› " } else { "  " };
                    let line = Line::from(vec![
                        Span::styled(lead, theme.user()),
                        Span::styled(line.to_owned(), theme.user()),
                    ]);
                    out.extend(wrap_line(&line, width, "  "));
                }
                out
            }
            Cell::Assistant(text) => assistant_lines(text, width, theme),
            Cell::Thinking(text) => thinking_lines(text, width, theme, THINKING_LINES),
            Cell::Tool(tool) => tool_lines(tool, width, theme, now),
            Cell::Notice(kind, text) => {
                let (lead, style) = match kind {
                    NoticeKind::Info => ("· ", theme.dim()),
                    NoticeKind::Warning => ("! ", theme.warn()),
                    NoticeKind::Error => ("✗ ", theme.error()),
                };
                text.lines()
                    .enumerate()
                    .flat_map(|(idx, line)| {
                        let lead = if idx == 0 { lead } else { "  " };
                        wrap_line(&Line::styled(format!("{lead}{line}"), style), width, "  ")
                    })
                    .collect()
            }
            Cell::Lines(lines) => lines.clone(),
        }
    }
}

/// Lines of a finished thinking cell shown before it is folded.
const THINKING_LINES: usize = 3;

/// Thinking, dimmed behind a `✻` marker: its last `keep` lines, with a
/// count of those folded away (the transcript holds all of it).
pub(crate) fn thinking_lines(
    text: &str,
    width: usize,
    theme: Theme,
    keep: usize,
) -> Vec<Line<'static>> {
    let wrapped: Vec<Line<'static>> = text
        .trim()
        .lines()
        .filter(|line| !line.trim().is_empty())
        .flat_map(|line| {
            wrap_line(
                &Line::styled(line.to_owned(), theme.dim()),
                width.saturating_sub(2).max(1),
                "",
            )
        })
        .collect();
    let folded = wrapped.len().saturating_sub(keep);
    let mut out = vec![Line::styled(
        match folded {
            0 => "✻ Thinking".to_owned(),
            n => format!("✻ Thinking ({n} earlier lines folded)"),
        },
        theme.dim(),
    )];
    for line in wrapped.into_iter().skip(folded) {
        let mut spans = vec![Span::raw("  ")];
        spans.extend(line.spans);
        out.push(Line::from(spans).style(theme.dim()));
    }
    out
}

/// Assistant text as Markdown behind a `●` marker.
pub(crate) fn assistant_lines(text: &str, width: usize, theme: Theme) -> Vec<Line<'static>> {
    let body = markdown::render(text.trim_end(), width.saturating_sub(2).max(1), theme);
    body.into_iter()
        .enumerate()
        .map(|(idx, line)| {
            let lead = if idx == 0 {
                Span::styled("● ", theme.accent())
            } else {
                Span::raw("  ")
            };
            let mut spans = vec![lead];
            spans.extend(line.spans);
            Line::from(spans).style(line.style)
        })
        .collect()
}

fn tool_lines(tool: &ToolCell, width: usize, theme: Theme, now: Instant) -> Vec<Line<'static>> {
    let (icon, icon_style) = match tool.status {
        ToolStatus::Running => (spinner(tool.started, now), theme.accent()),
        ToolStatus::Ok => ("✓", theme.ok()),
        ToolStatus::Failed => ("✗", theme.error()),
    };
    let elapsed = match (tool.status, tool.duration_ms) {
        (ToolStatus::Running, _) => Some(now.saturating_duration_since(tool.started)),
        (_, Some(ms)) => Some(Duration::from_millis(ms)),
        // A call replayed from a transcript: its duration is not recorded there.
        (_, None) => None,
    };
    let time = elapsed.map_or_else(String::new, |elapsed| {
        format!("  {}", format_duration(elapsed))
    });
    let fixed = 2 + tool.name.chars().count() + 2 + time.chars().count();
    let arg = truncate(&tool.arg, width.saturating_sub(fixed));
    let mut out = vec![Line::from(vec![
        Span::styled(format!("{icon} "), icon_style),
        Span::styled(tool.name.clone(), theme.strong()),
        Span::styled(format!("({arg})"), theme.text()),
        Span::styled(time, theme.dim()),
    ])];
    if let (Some(diff), ToolStatus::Ok) = (&tool.diff, tool.status) {
        out.push(Line::styled(
            format!("  ⎿ {} added, {} removed", diff.added, diff.removed),
            theme.dim(),
        ));
        out.extend(diff::render(diff, width, DIFF_ROWS, theme));
        return out;
    }
    let Some(result) = &tool.result else {
        return out;
    };
    let (rows, style) = match (tool.status, tool.name.as_str()) {
        (ToolStatus::Failed, _) => (2, theme.error()),
        (_, "Bash") => (3, theme.dim()),
        (_, "Agent") => (2, theme.dim()),
        _ => (0, theme.dim()),
    };
    let lines: Vec<&str> = result
        .lines()
        .filter(|line| !line.trim().is_empty())
        .collect();
    for (idx, line) in lines.iter().take(rows).enumerate() {
        let lead = if idx == 0 { "  ⎿ " } else { "    " };
        out.push(Line::styled(
            format!("{lead}{}", truncate(line, width.saturating_sub(4))),
            style,
        ));
    }
    if rows > 0 && lines.len() > rows {
        out.push(Line::styled(
            format!("    … +{} lines", lines.len() - rows),
            theme.dim(),
        ));
    }
    out
}

/// The spinner frame for work started at `started`.
pub(crate) fn spinner(started: Instant, now: Instant) -> &'static str {
    let tick = now.saturating_duration_since(started).as_millis() / 100;
    SPINNER[usize::try_from(tick % 10).unwrap_or(0)]
}

/// The argument that says what a call does.
pub(crate) fn key_argument(name: &str, input: &Value, workspace: &Path) -> String {
    let field = |key: &str| input.get(key).and_then(Value::as_str).map(str::to_owned);
    let relative = |path: String| {
        Path::new(&path)
            .strip_prefix(workspace)
            .map(|rel| rel.display().to_string())
            .unwrap_or(path)
    };
    let text = match name {
        "Bash" => field("command"),
        "Read" | "Write" | "Edit" => field("file_path").map(relative),
        "Glob" => field("pattern"),
        "Grep" => field("pattern").map(|pattern| match field("path") {
            Some(path) => format!("{pattern} in {}", relative(path)),
            None => pattern,
        }),
        "Agent" => field("description"),
        _ => None,
    };
    let text = text.unwrap_or_else(|| match input {
        Value::Object(map) => map
            .values()
            .find_map(Value::as_str)
            .map_or_else(|| input.to_string(), str::to_owned),
        Value::String(raw) => raw.clone(),
        other => other.to_string(),
    });
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `40ms`, `12.0s`, `3m05s`.
pub(crate) fn format_duration(duration: Duration) -> String {
    let secs = duration.as_secs();
    if duration < Duration::from_millis(100) {
        format!("{}ms", duration.as_millis())
    } else if secs < 60 {
        format!("{:.1}s", duration.as_secs_f64())
    } else {
        format!("{}m{:02}s", secs / 60, secs % 60)
    }
}

/// `850`, `1.2k`, `3.4M`.
pub(crate) fn format_tokens(tokens: u64) -> String {
    match tokens {
        0..1000 => tokens.to_string(),
        1000..1_000_000 => format!("{:.1}k", tokens as f64 / 1000.0),
        _ => format!("{:.1}M", tokens as f64 / 1_000_000.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_arguments_are_short_and_relative() {
        let root = Path::new("/w");
        assert_eq!(
            key_argument("Read", &json!({"file_path": "/w/src/a.rs"}), root),
            "src/a.rs"
        );
        assert_eq!(
            key_argument("Bash", &json!({"command": "ls\n-la"}), root),
            "ls -la"
        );
        assert_eq!(
            key_argument("Other", &json!({"x": 1, "q": "find"}), root),
            "find"
        );
        assert_eq!(format_tokens(1234), "1.2k");
        assert_eq!(format_duration(Duration::from_secs(185)), "3m05s");
    }
}
