//! Diffs of `Edit` and `Write` calls, shown in approval prompts and under
//! finished calls.
//!
//! The diff is computed from the call's arguments and the file as it is
//! when the call is seen (before it runs), so it shows exactly what the call
//! will change, with the file's line numbers.

use std::path::Path;
use std::time::Duration;

use ratatui::text::{Line, Span};
use serde_json::Value;
use similar::{ChangeTag, TextDiff};

use super::theme::Theme;
use super::wrap::truncate;

/// Files larger than this are not read for context; the diff then shows the
/// edited text alone.
const READ_CAP: u64 = 1024 * 1024;
/// Lines of unchanged context around each change.
const CONTEXT: usize = 2;

/// What one diff line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DiffKind {
    Context,
    Added,
    Removed,
    /// Unchanged lines left out between two hunks.
    Gap,
}

/// One line of a diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DiffLine {
    pub(crate) kind: DiffKind,
    /// The 1-based line number (old for removed lines, new otherwise).
    pub(crate) number: Option<usize>,
    pub(crate) text: String,
}

/// The diff of one call.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct FileDiff {
    pub(crate) lines: Vec<DiffLine>,
    pub(crate) added: usize,
    pub(crate) removed: usize,
}

/// The diff an `Edit` or `Write` call with `input` would make, or `None`
/// for other tools and unreadable arguments.
pub(crate) fn for_tool(tool: &str, input: &Value, workspace: &Path) -> Option<FileDiff> {
    let path = input.get("file_path")?.as_str()?;
    let path = workspace.join(path);
    let current = std::fs::metadata(&path)
        .ok()
        .filter(|meta| meta.len() <= READ_CAP)
        .and_then(|_| std::fs::read_to_string(&path).ok());
    match tool {
        "Write" => {
            let content = input.get("content")?.as_str()?;
            Some(diff_texts(current.as_deref().unwrap_or(""), content, true))
        }
        "Edit" => {
            let old = input.get("old_string")?.as_str()?;
            let new = input.get("new_string")?.as_str()?;
            let replace_all = input
                .get("replace_all")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            match current.filter(|text| !old.is_empty() && text.contains(old)) {
                Some(before) => {
                    let after = if replace_all {
                        before.replace(old, new)
                    } else {
                        before.replacen(old, new, 1)
                    };
                    Some(diff_texts(&before, &after, true))
                }
                None => Some(diff_texts(old, new, false)),
            }
        }
        _ => None,
    }
}

/// A line diff of two texts with a little context; `numbered` says whether
/// the line numbers mean anything (they do not when `old` is a fragment).
pub(crate) fn diff_texts(old: &str, new: &str, numbered: bool) -> FileDiff {
    let diff = TextDiff::configure()
        .timeout(Duration::from_millis(200))
        .diff_lines(old, new);
    let mut out = FileDiff::default();
    for (idx, group) in diff.grouped_ops(CONTEXT).iter().enumerate() {
        if idx > 0 {
            out.lines.push(DiffLine {
                kind: DiffKind::Gap,
                number: None,
                text: String::new(),
            });
        }
        for op in group {
            for change in diff.iter_changes(op) {
                let (kind, number) = match change.tag() {
                    ChangeTag::Equal => (DiffKind::Context, change.new_index()),
                    ChangeTag::Insert => {
                        out.added += 1;
                        (DiffKind::Added, change.new_index())
                    }
                    ChangeTag::Delete => {
                        out.removed += 1;
                        (DiffKind::Removed, change.old_index())
                    }
                };
                out.lines.push(DiffLine {
                    kind,
                    number: number.filter(|_| numbered).map(|n| n + 1),
                    text: change.value().trim_end_matches(['\n', '\r']).to_owned(),
                });
            }
        }
    }
    out
}

/// The diff as lines at most `width` wide, cut to `max_lines` rows.
pub(crate) fn render(
    diff: &FileDiff,
    width: usize,
    max_lines: usize,
    theme: Theme,
) -> Vec<Line<'static>> {
    let digits = diff
        .lines
        .iter()
        .filter_map(|line| line.number)
        .max()
        .map_or(0, |n| n.to_string().len());
    let mut out = Vec::new();
    for line in &diff.lines {
        if out.len() + 1 >= max_lines && out.len() + 1 < diff.lines.len() {
            let left = diff.lines.len() - out.len();
            out.push(Line::styled(
                format!("    … {left} more lines"),
                theme.dim(),
            ));
            break;
        }
        let number = match line.number {
            Some(n) => format!("{n:>digits$}"),
            None => " ".repeat(digits),
        };
        let (sign, style) = match line.kind {
            DiffKind::Context => (" ", theme.dim()),
            DiffKind::Added => ("+", theme.added()),
            DiffKind::Removed => ("-", theme.removed()),
            DiffKind::Gap => {
                out.push(Line::styled(format!("    {:>digits$}", "⋮"), theme.dim()));
                continue;
            }
        };
        let prefix = format!("    {number} {sign} ");
        let room = width.saturating_sub(prefix.chars().count());
        out.push(Line::from(vec![
            Span::styled(prefix, style),
            Span::styled(truncate(&line.text, room), style),
        ]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_edit_is_diffed_against_the_file_with_line_numbers() {
        let dir = tempfile::tempdir().unwrap();
        let text: String = (1..=10).map(|n| format!("line {n}\n")).collect();
        std::fs::write(dir.path().join("a.txt"), text).unwrap();
        let input = json!({"file_path": "a.txt", "old_string": "line 5\n", "new_string": "five\n"});
        let diff = for_tool("Edit", &input, dir.path()).unwrap();
        assert_eq!((diff.added, diff.removed), (1, 1));
        let removed = diff
            .lines
            .iter()
            .find(|l| l.kind == DiffKind::Removed)
            .unwrap();
        assert_eq!((removed.number, removed.text.as_str()), (Some(5), "line 5"));
        assert_eq!(diff.lines.len(), 6, "two lines of context each side");
    }

    #[test]
    fn a_new_file_is_all_additions_and_long_diffs_are_cut() {
        let dir = tempfile::tempdir().unwrap();
        let input = json!({"file_path": "new.txt", "content": "a\nb\nc\nd\n"});
        let diff = for_tool("Write", &input, dir.path()).unwrap();
        assert_eq!((diff.added, diff.removed), (4, 0));
        let lines = render(&diff, 40, 3, Theme::new(false));
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[2].to_string(), "    … 2 more lines");
        assert!(for_tool("Bash", &json!({"command": "ls"}), dir.path()).is_none());
    }
}
