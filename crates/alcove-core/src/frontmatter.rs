//! Markdown files with YAML front matter: the one parser behind agent
//! definitions, skills (`SKILL.md`) and custom commands, so the three
//! formats Claude Code users already have fail the same way, with the same
//! file-and-line warnings.
//!
//! ```text
//! ---
//! key: value          # YAML; Claude Code's unquoted `a: b: c` values are repaired
//! ---
//! The body.
//! ```

use serde::de::DeserializeOwned;

/// Why a file was skipped: the 1-based line, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DefinitionError {
    /// The line of the file the problem is on.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

/// A file split into its front matter and body.
#[derive(Debug, Clone)]
pub(crate) struct Document<'a> {
    /// The YAML between the `---` lines.
    pub(crate) yaml: String,
    /// The 1-based line of the closing `---`.
    pub(crate) closing_line: usize,
    /// Everything after the closing line, trimmed.
    pub(crate) body: &'a str,
}

impl Document<'_> {
    /// An error about top-level `key`, placed on its line (or on the
    /// closing `---` when the key is absent).
    pub(crate) fn error_at(&self, key: &str, message: &str) -> DefinitionError {
        DefinitionError {
            line: key_line(&self.yaml, key).map_or(self.closing_line, |line| line + 1),
            message: message.to_owned(),
        }
    }
}

/// Splits `text` at its front matter. With `required`, a file without one is
/// an error; otherwise the whole text is the body (custom commands need no
/// front matter).
pub(crate) fn split(text: &str, required: bool) -> Result<Document<'_>, DefinitionError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().unwrap_or_default();
    if first.trim_end() != "---" {
        if !required {
            return Ok(Document {
                yaml: String::new(),
                closing_line: 0,
                body: text.trim(),
            });
        }
        return Err(DefinitionError {
            line: 1,
            message: "no YAML front matter: the file must start with a `---` line".to_owned(),
        });
    }
    let mut yaml = String::new();
    let mut closed_at = None;
    let mut offset = first.len();
    for (idx, line) in lines.enumerate() {
        offset += line.len();
        if line.trim_end() == "---" {
            closed_at = Some(idx + 2);
            break;
        }
        yaml.push_str(line);
    }
    let Some(closing_line) = closed_at else {
        return Err(DefinitionError {
            line: 1,
            message: "the front matter is never closed by a `---` line".to_owned(),
        });
    };
    Ok(Document {
        yaml,
        closing_line,
        body: text[offset..].trim(),
    })
}

/// Reads the front matter into `T` (its default when empty). Claude Code
/// accepts `description: Use when: …` unquoted; strict YAML does not, so
/// such values are quoted and the parse retried before giving up.
pub(crate) fn parse<T: DeserializeOwned + Default>(yaml: &str) -> Result<T, DefinitionError> {
    if yaml.trim().is_empty() {
        return Ok(T::default());
    }
    match yaml_serde::from_str(yaml) {
        Ok(front) => Ok(front),
        Err(err) => quote_colon_values(yaml)
            .and_then(|fixed| yaml_serde::from_str(&fixed).ok())
            .ok_or_else(|| DefinitionError {
                // YAML lines count from the line after the opening `---`.
                line: err.location().map_or(1, |location| location.line() + 1),
                message: strip_location(&err.to_string()),
            }),
    }
}

/// One warning per top-level key of the front matter that `tree` (the
/// front matter type's keys) does not know (other than `quiet` ones, which other tools' files carry), naming
/// its line and the nearest key `T` knows.
pub(crate) fn unknown_keys(
    tree: &crate::known_keys::KeyTree,
    document: &Document<'_>,
    quiet: &[&str],
) -> Vec<String> {
    let mut warnings = Vec::new();
    for (idx, line) in document.yaml.lines().enumerate() {
        if line.starts_with([' ', '\t', '#', '-']) {
            continue;
        }
        let Some((key, _)) = line.split_once(':') else {
            continue;
        };
        let key = key.trim().trim_matches(['"', '\'']);
        if key.is_empty() || quiet.contains(&key) {
            continue;
        }
        if let Some(unknown) = tree.check(&[key]) {
            let hint = unknown
                .suggestion
                .map(|known| format!("; did you mean `{known}`?"))
                .unwrap_or_default();
            // Line 1 is the opening `---`.
            warnings.push(format!(
                "line {}: unknown front matter key `{key}`, ignored{hint}",
                idx + 2
            ));
        }
    }
    warnings
}

/// The 1-based line of the front matter where top-level `key:` is written.
fn key_line(yaml: &str, key: &str) -> Option<usize> {
    yaml.lines()
        .position(|line| {
            line.strip_prefix(key)
                .is_some_and(|rest| rest.trim_start().starts_with(':'))
        })
        .map(|idx| idx + 1)
}

/// The front matter with every top-level plain value that contains `: `
/// single-quoted, or `None` when there is none to quote.
fn quote_colon_values(yaml: &str) -> Option<String> {
    let mut changed = false;
    let lines: Vec<String> = yaml
        .lines()
        .map(|line| {
            let Some((key, value)) = line.split_once(": ") else {
                return line.to_owned();
            };
            let value = value.trim();
            let plain_key = !key.is_empty()
                && key
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            let quoted = value.starts_with(['\'', '"', '[', '{', '|', '>', '&', '*', '!']);
            if plain_key && !quoted && value.contains(": ") {
                changed = true;
                format!("{key}: '{}'", value.replace('\'', "''"))
            } else {
                line.to_owned()
            }
        })
        .collect();
    changed.then(|| lines.join("\n"))
}

/// YAML errors end with " at line L column C" counted inside the front
/// matter; the warning states the file's line instead.
fn strip_location(message: &str) -> String {
    match message.find(" at line ") {
        Some(idx) => message[..idx].to_owned(),
        None => message.to_owned(),
    }
}

/// A string or a list of strings (`tools: Read, Grep` or `tools: [Read, Grep]`).
#[derive(Debug, serde::Deserialize)]
#[serde(untagged)]
pub(crate) enum Names {
    One(String),
    Many(Vec<String>),
}

impl Names {
    /// The names, trimmed, empty ones dropped; a single string is split at
    /// commas.
    pub(crate) fn into_vec(self) -> Vec<String> {
        let items = match self {
            Names::One(text) => text.split(',').map(str::to_owned).collect(),
            Names::Many(items) => items,
        };
        items
            .into_iter()
            .map(|item| item.trim().to_owned())
            .filter(|item| !item.is_empty())
            .collect()
    }
}

/// `$ARGUMENTS` replaced by `arguments`, and `$1` … `$9` by the
/// whitespace-separated words of it (missing ones become empty). Shared by
/// skills and custom commands, as Claude Code substitutes both.
pub fn substitute_arguments(body: &str, arguments: &str) -> String {
    let words: Vec<&str> = arguments.split_whitespace().collect();
    let mut out = String::with_capacity(body.len() + arguments.len());
    let mut rest = body;
    while let Some(idx) = rest.find('$') {
        out.push_str(&rest[..idx]);
        let after = &rest[idx + 1..];
        if let Some(tail) = after.strip_prefix("ARGUMENTS") {
            out.push_str(arguments);
            rest = tail;
        } else if let Some(digit) = after.chars().next().filter(|c| ('1'..='9').contains(c)) {
            let index = usize::from(digit as u8 - b'1');
            out.push_str(words.get(index).copied().unwrap_or_default());
            rest = &after[1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_and_positions_are_substituted() {
        assert_eq!(
            substitute_arguments("Review PR $1 ($ARGUMENTS) by $2$3, cost $5.", "42 alice"),
            "Review PR 42 (42 alice) by alice, cost ."
        );
        assert_eq!(substitute_arguments("$HOME $0 $", "x"), "$HOME $0 $");
    }

    #[test]
    fn only_unquoted_values_with_colons_are_repaired() {
        assert_eq!(quote_colon_values("a: b\nc: [d]"), None);
        assert_eq!(
            quote_colon_values("description: Use when: x").as_deref(),
            Some("description: 'Use when: x'")
        );
    }

    #[test]
    fn a_missing_front_matter_is_an_error_only_when_required() {
        assert_eq!(split("plain", true).unwrap_err().line, 1);
        let document = split("plain text\n", false).unwrap();
        assert_eq!(document.body, "plain text");
        assert!(document.yaml.is_empty());
    }
}
