//! One reminder to read before answering, for small models.
//!
//! Asked "What is the package name in pyproject.toml?", a 1.5B model on a
//! local server answered from nothing ("your_package_name"), or described
//! the call it would make instead of making it, in most runs (issue 45,
//! rounds 3 and 4); a line in the system prompt saying so did not change
//! that. So where the tool profile is for small models
//! (`Limits::remind_to_read`), a reply that ends the run without a single
//! tool call, to a message naming files in the workspace, is answered
//! once with the call to make: `Read {"file_path": "pyproject.toml"}`.
//! Once per message: the reply after the reminder is the answer, whatever
//! it is. A file a Read deny rule or `sandbox.deny_read` hides is never
//! named.

use std::path::Path;

use crate::{AgentRun, Runtime};

/// How a reminder begins (the transcript shows it as a user message).
const PREFIX: &str = "[alcove: you answered without calling a tool";

/// At most this many files are named.
const MAX_FILES: usize = 3;

/// The reminder for a reply that made no tool call to `asked`, when
/// `asked` names files in the workspace that `run` may read.
pub(crate) fn reminder(runtime: &Runtime, run: &AgentRun, asked: &str) -> Option<String> {
    if !run.tools.iter().any(|tool| tool.spec().name == "Read") {
        return None;
    }
    let workspace = &runtime.workspace;
    let mut files: Vec<&str> = Vec::new();
    for term in named_paths(asked) {
        if files.len() == MAX_FILES || files.contains(&term) {
            continue;
        }
        let resolved = workspace.resolve(term);
        if !resolved.starts_with(workspace.root())
            || run.gate.hides(&resolved, workspace)
            || !std::fs::metadata(&resolved).is_ok_and(|meta| meta.is_file())
        {
            continue;
        }
        files.push(term);
    }
    let first = files.first()?;
    let named = files.join(", ");
    let path = serde_json::Value::from(*first);
    Some(format!(
        "{PREFIX}, and the message names {named}, in the workspace, which you have not read. Do not describe a call or guess what a file holds: call Read {{\"file_path\": {path}}} now, then answer from what it shows.]"
    ))
}

/// The words of `text` that look like file paths (`pyproject.toml`,
/// `src/main.rs`), without the quotes and punctuation around them.
fn named_paths(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| c.is_whitespace() || c == ',')
        .map(|term| {
            let quote = |c: char| "`'\"()[]{}<>?!:;*".contains(c);
            term.trim_start_matches(quote)
                .trim_end_matches(|c: char| quote(c) || c == '.')
        })
        .filter(|term| {
            term.contains('/')
                || Path::new(term)
                    .extension()
                    .and_then(|ext| ext.to_str())
                    .is_some_and(|ext| {
                        ext.len() <= 5 && ext.starts_with(|c: char| c.is_ascii_alphabetic())
                    })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_the_words_with_a_folder_or_an_extension() {
        let found: Vec<&str> = named_paths(
            "What is the package name in pyproject.toml? See `src/lib.rs`, (notes.md). Version 1.2 now.",
        )
        .collect();
        assert_eq!(found, ["pyproject.toml", "src/lib.rs", "notes.md"]);
    }
}
