//! How one alcove tool call looks to an ACP client: its `kind`, title,
//! `locations`, and content (a diff for Write and Edit, a command's output
//! for Bash). Pure functions of the call's name, arguments and result, so
//! the live stream and the replay of a loaded session show the same thing.

use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema::{
    ContentBlock, Diff, TextContent, ToolCallContent, ToolCallLocation, ToolKind,
};
use serde_json::Value;

/// Files bigger than this are not read to show a diff.
const DIFF_READ_CAP: u64 = 1024 * 1024;

/// The ACP kind of a tool (the editor picks an icon and a layout from it).
pub(crate) fn kind(tool: &str) -> ToolKind {
    match tool {
        "Read" | "ListMcpResources" | "ReadMcpResource" => ToolKind::Read,
        "Write" | "Edit" => ToolKind::Edit,
        "Glob" | "Grep" => ToolKind::Search,
        "Bash" | "BashOutput" | "KillShell" => ToolKind::Execute,
        "WebFetch" | "WebSearch" => ToolKind::Fetch,
        // Delegation and planning: the agent thinking through others.
        "Agent" | "spawn_agent" | "send_input" | "wait" | "resume_agent" | "spawn_batch"
        | "retry_batch" | "Workflow" | "TodoWrite" => ToolKind::Think,
        _ => ToolKind::Other,
    }
}

fn text_arg<'a>(input: &'a Value, key: &str) -> Option<&'a str> {
    input.get(key).and_then(Value::as_str)
}

/// A one-line title: what the call does.
pub(crate) fn title(tool: &str, input: &Value) -> String {
    let detail = match tool {
        "Read" | "Write" | "Edit" => text_arg(input, "file_path").map(str::to_owned),
        "Bash" => text_arg(input, "command").map(|command| {
            let first = command.lines().next().unwrap_or_default();
            if command.lines().nth(1).is_some() {
                format!("{first} …")
            } else {
                first.to_owned()
            }
        }),
        "Glob" | "Grep" => text_arg(input, "pattern").map(str::to_owned),
        "Agent" | "spawn_agent" => text_arg(input, "description").map(str::to_owned),
        "WebFetch" => text_arg(input, "url").map(str::to_owned),
        _ => None,
    };
    match detail {
        Some(detail) if !detail.is_empty() => format!("{tool} {detail}"),
        _ => tool.to_owned(),
    }
}

/// `path` made absolute against the workspace (ACP paths are absolute).
pub(crate) fn absolute(workspace: &Path, path: &str) -> PathBuf {
    let path = Path::new(path);
    if path.is_absolute() {
        path.to_owned()
    } else {
        workspace.join(path)
    }
}

/// The files (and lines) the call touches, so the editor can follow along.
pub(crate) fn locations(tool: &str, input: &Value, workspace: &Path) -> Vec<ToolCallLocation> {
    let Some(file) = text_arg(input, "file_path") else {
        return match (tool, text_arg(input, "path")) {
            ("Glob" | "Grep", Some(path)) => vec![ToolCallLocation::new(absolute(workspace, path))],
            _ => Vec::new(),
        };
    };
    let path = absolute(workspace, file);
    let line = match tool {
        "Read" => input
            .get("offset")
            .and_then(Value::as_u64)
            .and_then(|line| u32::try_from(line).ok()),
        "Edit" => text_arg(input, "old_string").and_then(|old| line_of(&path, old)),
        _ => None,
    };
    vec![ToolCallLocation::new(path).line(line)]
}

/// The 1-based line where `needle` first occurs in the file.
fn line_of(path: &Path, needle: &str) -> Option<u32> {
    if needle.is_empty() {
        return None;
    }
    let text = read_small(path)?;
    let at = text.find(needle)?;
    u32::try_from(text[..at].matches('\n').count() + 1).ok()
}

fn read_small(path: &Path) -> Option<String> {
    std::fs::metadata(path)
        .ok()
        .filter(|meta| meta.len() <= DIFF_READ_CAP)
        .and_then(|_| std::fs::read_to_string(path).ok())
}

/// The diff a Write or Edit is about to make, read from the file as it is
/// before the call runs (`None` for other tools, or arguments it cannot read).
pub(crate) fn diff(tool: &str, input: &Value, workspace: &Path) -> Option<ToolCallContent> {
    let path = absolute(workspace, text_arg(input, "file_path")?);
    let before = read_small(&path);
    let after = match tool {
        "Write" => text_arg(input, "content")?.to_owned(),
        "Edit" => {
            let old = text_arg(input, "old_string")?;
            let new = text_arg(input, "new_string")?;
            let all = input
                .get("replace_all")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            match before.as_deref() {
                Some(text) if !old.is_empty() && text.contains(old) => {
                    if all {
                        text.replace(old, new)
                    } else {
                        text.replacen(old, new, 1)
                    }
                }
                // The edit will fail; show what it meant.
                _ => {
                    return Some(ToolCallContent::Diff(
                        Diff::new(path, new).old_text(old.to_owned()),
                    ));
                }
            }
        }
        _ => return None,
    };
    Some(ToolCallContent::Diff(
        Diff::new(path, after).old_text(before),
    ))
}

/// Text as tool call content.
pub(crate) fn text(text: impl Into<String>) -> ToolCallContent {
    ToolCallContent::from(ContentBlock::Text(TextContent::new(text)))
}

/// What a finished call shows: a command's output in a fenced block, other
/// results as their text (a Write or Edit keeps its diff, given by the caller).
pub(crate) fn result(tool: &str, content: &str) -> ToolCallContent {
    match tool {
        "Bash" | "BashOutput" => text(format!("```\n{}\n```", content.trim_end())),
        _ => text(content.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_kind_the_issue_names_is_reached() {
        let kinds: Vec<ToolKind> = [
            "Read",
            "Edit",
            "Grep",
            "Bash",
            "WebFetch",
            "Agent",
            "mcp__x__y",
        ]
        .iter()
        .map(|tool| kind(tool))
        .collect();
        assert_eq!(
            kinds,
            vec![
                ToolKind::Read,
                ToolKind::Edit,
                ToolKind::Search,
                ToolKind::Execute,
                ToolKind::Fetch,
                ToolKind::Think,
                ToolKind::Other
            ]
        );
    }

    #[test]
    fn an_edit_shows_the_whole_file_before_and_after_and_the_line_it_starts_on() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "one\ntwo\nthree\n").unwrap();
        let input = json!({"file_path": "a.txt", "old_string": "two", "new_string": "2"});
        let Some(ToolCallContent::Diff(diff)) = diff("Edit", &input, dir.path()) else {
            panic!("no diff");
        };
        assert_eq!(diff.path, dir.path().join("a.txt"));
        assert_eq!(diff.old_text.as_deref(), Some("one\ntwo\nthree\n"));
        assert_eq!(diff.new_text, "one\n2\nthree\n");
        let located = locations("Edit", &input, dir.path());
        assert_eq!(located[0].line, Some(2));
    }

    #[test]
    fn a_write_of_a_new_file_has_no_old_text() {
        let dir = tempfile::tempdir().unwrap();
        let input = json!({"file_path": "new.txt", "content": "hi\n"});
        let Some(ToolCallContent::Diff(diff)) = diff("Write", &input, dir.path()) else {
            panic!("no diff");
        };
        assert_eq!(diff.old_text, None);
        assert_eq!(diff.new_text, "hi\n");
    }
}
