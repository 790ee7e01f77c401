//! The `Edit` tool: exact string replacement in an existing file.
//!
//! The model quotes the text it wants changed; requiring that quote to be
//! unique (unless `replace_all`) keeps an edit from landing somewhere the
//! model did not look. Every refusal says why, so the model can add context
//! and retry.

use std::path::Path;

use alcove_protocol::ToolSpec;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::read::INLINE_READ_BYTES;
use crate::{Access, Effects, FileCall, Invocation, ToolContext, ToolOutput, TypedTool, Workspace};

const NAME: &str = "Edit";
const DESCRIPTION: &str = "Replaces text in a file. old_string must match the file exactly, \
indentation included (without the line numbers Read shows), and occur once unless replace_all \
is true; add surrounding lines to make it unique.";

/// Arguments of `Edit`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct EditInput {
    /// Absolute or workspace-relative path.
    file_path: String,
    /// The exact text to replace.
    old_string: String,
    /// The new text.
    new_string: String,
    /// Replace every occurrence.
    replace_all: Option<bool>,
}

/// The `Edit` tool.
pub struct Edit {
    spec: ToolSpec,
}

impl Default for Edit {
    fn default() -> Self {
        Edit {
            spec: crate::tool_spec!(EditInput, NAME, DESCRIPTION),
        }
    }
}

/// Checks what does not need the file.
fn validate(input: &EditInput) -> Result<(), String> {
    if input.old_string.is_empty() {
        return Err(
            "old_string is empty; quote the text to replace (use Write to create a file)".into(),
        );
    }
    if input.old_string == input.new_string {
        return Err("old_string and new_string are the same; there is nothing to change".into());
    }
    Ok(())
}

#[async_trait::async_trait]
impl TypedTool for Edit {
    type Input = EditInput;
    type Call = FileCall<EditInput>;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn access(&self) -> Access {
        Access::Edit
    }

    fn needs_prior_read(&self) -> bool {
        true
    }

    fn inspect(
        &self,
        input: EditInput,
        workspace: &Workspace,
    ) -> Result<(Invocation, FileCall<EditInput>), String> {
        // What the strings hold is checked when the call runs: an edit of
        // a file not read yet is first told to read it (dispatch).
        let file_path = input.file_path.clone();
        Ok(FileCall::resolve(workspace, &file_path, input))
    }

    async fn call(&self, call: FileCall<EditInput>, context: &ToolContext) -> ToolOutput {
        let FileCall { input, path } = call;
        if let Err(reason) = validate(&input) {
            return ToolOutput::error(reason);
        }
        let shown = context.workspace.display(&path);
        // A small file is edited here: its read and write take microseconds,
        // and three trips to the blocking pool and back (one per step) cost
        // six thread switches. A large one goes to the pool in one trip.
        let meta = std::fs::metadata(&path);
        if meta
            .as_ref()
            .is_err_and(|err| err.kind() == std::io::ErrorKind::NotFound)
        {
            let missing = crate::nearest::missing_file(context, &path).await;
            return ToolOutput::error(format!("{missing} To create a new file, use Write."));
        }
        let small = meta
            .as_ref()
            .is_ok_and(|meta| meta.is_file() && meta.len() <= INLINE_READ_BYTES);
        let edit = move || edit_file(&path, meta, shown, &input);
        let edited = if small {
            Ok(edit())
        } else {
            tokio::task::spawn_blocking(edit).await
        };
        edited.unwrap_or_else(|err| ToolOutput::error(format!("Edit failed: {err}")))
    }
}

/// Reads the file, replaces, and writes it back.
fn edit_file(
    path: &Path,
    meta: std::io::Result<std::fs::Metadata>,
    shown: String,
    input: &EditInput,
) -> ToolOutput {
    // Opening a named pipe blocks until someone writes to it: the call would hang.
    if let Ok(meta) = meta
        && !meta.is_file()
    {
        return ToolOutput::error(format!(
            "{shown} is not a regular file (a directory, pipe, socket or device); Edit only changes files"
        ));
    }
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return ToolOutput::error(format!(
                "File does not exist: {shown} (use Write to create it)"
            ));
        }
        Err(err) => return ToolOutput::error(format!("Cannot read {shown}: {err}")),
    };
    let Ok(text) = String::from_utf8(bytes) else {
        return ToolOutput::error(format!(
            "{shown} is not valid UTF-8 text; Edit only changes text files"
        ));
    };
    let replace_all = input.replace_all.unwrap_or(false);
    let (updated, count) = match replace(&text, &input.old_string, &input.new_string, replace_all) {
        Ok(done) => done,
        Err(reason) => return ToolOutput::error(format!("{reason} in {shown}")),
    };
    if let Err(err) = crate::write::overwrite(path, updated.as_bytes()) {
        return ToolOutput::error(format!("Cannot write {shown}: {err}"));
    }
    let noun = if count == 1 {
        "occurrence"
    } else {
        "occurrences"
    };
    let written = updated.len();
    ToolOutput::ok(format!("Edited {shown}: replaced {count} {noun}")).with_effects(Effects {
        files_written: vec![shown],
        bytes: u64::try_from(written).ok(),
        ..Effects::default()
    })
}

/// Replaces `old` by `new` in `text`; returns the new text and the count.
///
/// When `old` is not found but the file uses CRLF line endings and `old` has
/// bare `\n`s (models usually write `\n`), the CRLF form is tried, and `new`
/// gets CRLF endings too, so the file keeps one line-ending style.
fn replace(text: &str, old: &str, new: &str, replace_all: bool) -> Result<(String, usize), String> {
    let mut count = text.matches(old).count();
    let (mut old, mut new) = (old.to_owned(), new.to_owned());
    if count == 0 && text.contains("\r\n") && old.contains('\n') && !old.contains("\r\n") {
        let crlf_old = old.replace('\n', "\r\n");
        let crlf_count = text.matches(crlf_old.as_str()).count();
        if crlf_count > 0 {
            count = crlf_count;
            old = crlf_old;
            new = new.replace("\r\n", "\n").replace('\n', "\r\n");
        }
    }
    match count {
        0 => Err(
            "old_string not found (it must match exactly, including whitespace and indentation)"
                .into(),
        ),
        1 => Ok((text.replacen(old.as_str(), &new, 1), 1)),
        n if replace_all => Ok((text.replace(old.as_str(), &new), n)),
        n => Err(format!(
            "old_string matches {n} times; add surrounding context to make it unique, or set replace_all to true to replace every occurrence"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replace_counts() {
        assert_eq!(
            replace("a b a", "b", "c", false).unwrap(),
            ("a c a".to_owned(), 1)
        );
        assert!(
            replace("a b a", "a", "c", false)
                .unwrap_err()
                .contains("matches 2 times")
        );
        assert_eq!(
            replace("a b a", "a", "c", true).unwrap(),
            ("c b c".to_owned(), 2)
        );
        assert!(
            replace("a b a", "z", "c", true)
                .unwrap_err()
                .contains("not found")
        );
    }

    #[test]
    fn replace_keeps_crlf() {
        let (out, n) = replace("one\r\ntwo\r\nthree\r\n", "one\ntwo", "1\n2\n2b", false).unwrap();
        assert_eq!(n, 1);
        assert_eq!(out, "1\r\n2\r\n2b\r\nthree\r\n");
    }
}
