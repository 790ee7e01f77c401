//! Agent definitions from Markdown files with YAML front matter, so the
//! `.claude/agents/*.md` files users already have work unchanged.
//!
//! ```text
//! ---
//! name: reviewer
//! description: Reviews a diff for bugs; read-only.
//! tools: Read, Grep, Glob          # or a YAML list
//! disallowedTools: [Bash]
//! model: anthropic/claude-sonnet-4-5   # provider/name; `inherit` = the parent's
//! permissionMode: plan
//! maxTurns: 20
//! timeout: 5m                      # seconds, or 90s / 5m / 1h
//! permissions:                     # alcove's own key
//!   allow: ["Bash(cargo test:*)"]
//!   deny: ["Edit"]
//! ---
//! The body is the system prompt.
//! ```
//!
//! Folders are given lowest precedence first (this crate never reads the
//! environment, so the CLI finds them); a later folder's definition replaces
//! an earlier one of the same name, built-ins included. A file that cannot be
//! read or parsed is skipped with a warning naming the file and line; the
//! rest load. Unknown keys (Claude Code's `color`, `skills`, `hooks`, …) are
//! ignored.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use super::definitions::{AgentDefinition, AgentPermissions, Definitions};

/// A string or a list of strings (`tools: Read, Grep` or `tools: [Read, Grep]`).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Names {
    One(String),
    Many(Vec<String>),
}

impl Names {
    fn into_vec(self) -> Vec<String> {
        let items = match self {
            Names::One(text) => text.split(',').map(str::to_owned).collect(),
            Names::Many(items) => items,
        };
        items
            .into_iter()
            .map(|item| item.trim().to_owned())
            .filter(|item| !item.is_empty())
            // Claude Code's old name for the delegation tool.
            .map(|item| {
                if item == "Task" {
                    "Agent".to_owned()
                } else {
                    item
                }
            })
            .collect()
    }
}

/// `timeout: 90` (seconds) or `timeout: 90s` / `5m` / `1h` / `500ms`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Timeout {
    Seconds(f64),
    Text(String),
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Rules {
    allow: Vec<String>,
    ask: Vec<String>,
    deny: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct FrontMatter {
    name: Option<String>,
    description: Option<String>,
    tools: Option<Names>,
    #[serde(alias = "disallowed_tools")]
    disallowed_tools: Option<Names>,
    model: Option<String>,
    #[serde(alias = "permission_mode")]
    permission_mode: Option<String>,
    #[serde(alias = "max_turns")]
    max_turns: Option<u32>,
    timeout: Option<Timeout>,
    permissions: Option<Rules>,
}

/// Why a file was skipped: the 1-based line, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DefinitionError {
    /// The line of the file the problem is on.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

const MODES: [&str; 5] = [
    "default",
    "acceptEdits",
    "plan",
    "bypassPermissions",
    "dontAsk",
];

/// Parses one definition file's text. `stem` names it when the front matter
/// has no `name`. Returns the definition and notes worth a warning (values
/// that were ignored).
pub fn parse_definition(
    text: &str,
    stem: &str,
) -> Result<(AgentDefinition, Vec<String>), DefinitionError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().unwrap_or_default();
    if first.trim_end() != "---" {
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
    let body = text[offset..].trim().to_owned();

    let front: FrontMatter = if yaml.trim().is_empty() {
        FrontMatter::default()
    } else {
        let strict = yaml_serde::from_str(&yaml);
        // Claude Code accepts `description: Use when: …` unquoted; strict
        // YAML does not. Retry with such values quoted before giving up.
        let repaired =
            || quote_colon_values(&yaml).and_then(|fixed| yaml_serde::from_str(&fixed).ok());
        match strict {
            Ok(front) => front,
            Err(err) => repaired().ok_or_else(|| DefinitionError {
                // YAML lines count from the line after the opening `---`.
                line: err.location().map_or(1, |location| location.line() + 1),
                message: strip_location(&err.to_string()),
            })?,
        }
    };
    let at = |key: &str| DefinitionErrorAt {
        line: key_line(&yaml, key).map_or(closing_line, |line| line + 1),
    };

    let name = front
        .name
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| stem.to_owned());
    let description = front
        .description
        .map(|text| text.trim().to_owned())
        .filter(|text| !text.is_empty())
        .ok_or_else(|| at("description").error("`description` is missing or empty"))?;
    if body.is_empty() {
        return Err(DefinitionError {
            line: closing_line,
            message: "the body (the system prompt) after the front matter is empty".to_owned(),
        });
    }
    if let Some(mode) = &front.permission_mode
        && !MODES.contains(&mode.as_str())
    {
        return Err(at("permissionMode").error(&format!(
            "unknown permissionMode `{mode}`; use {}",
            MODES.join(", ")
        )));
    }
    if front.max_turns == Some(0) {
        return Err(at("maxTurns").error("maxTurns must be at least 1"));
    }
    let timeout = match front.timeout {
        None => None,
        Some(Timeout::Seconds(secs)) => Some(positive_duration(secs).ok_or_else(|| {
            at("timeout").error(&format!(
                "timeout must be positive (and below 2^64 seconds), not {secs}"
            ))
        })?),
        Some(Timeout::Text(text)) => Some(parse_duration(&text).ok_or_else(|| {
            at("timeout").error(&format!(
                "timeout `{text}` is not a duration (seconds, or e.g. 90s, 5m, 1h)"
            ))
        })?),
    };

    let mut notes = Vec::new();
    let model = match front.model.map(|model| model.trim().to_owned()) {
        None => None,
        Some(model) if model.is_empty() || model == "inherit" => None,
        Some(model) if model.contains('/') => Some(model),
        Some(model) => {
            notes.push(format!(
                "model `{model}` is not written provider/name; the parent's model is used"
            ));
            None
        }
    };
    let rules = front.permissions.unwrap_or_default();
    // A rule that does not parse would fail every child of this type: skip now.
    for text in rules.allow.iter().chain(&rules.ask).chain(&rules.deny) {
        crate::Rule::parse(text, "permissions")
            .map_err(|err| at("permissions").error(&err.to_string()))?;
    }
    let definition = AgentDefinition {
        name,
        description,
        system_prompt: body,
        tools: front.tools.map(Names::into_vec),
        disallowed_tools: front
            .disallowed_tools
            .map(Names::into_vec)
            .unwrap_or_default(),
        model,
        max_turns: front.max_turns,
        permission_mode: front.permission_mode,
        permissions: AgentPermissions {
            allow: rules.allow,
            ask: rules.ask,
            deny: rules.deny,
        },
        timeout,
        source: None,
    };
    Ok((definition, notes))
}

struct DefinitionErrorAt {
    line: usize,
}

impl DefinitionErrorAt {
    fn error(&self, message: &str) -> DefinitionError {
        DefinitionError {
            line: self.line,
            message: message.to_owned(),
        }
    }
}

/// The 1-based line of the file where top-level `key:` is written (the
/// front matter starts on the file's second line).
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

fn parse_duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let seconds = match unit.trim() {
        "" | "s" | "sec" | "secs" => number,
        "ms" => number / 1000.0,
        "m" | "min" | "mins" => number * 60.0,
        "h" => number * 3600.0,
        _ => return None,
    };
    positive_duration(seconds)
}

/// `seconds` as a duration when it is one that is not zero: not negative,
/// NaN, infinite, rounded to nothing, or past `Duration`'s range (where
/// `Duration::from_secs_f64` panics: `timeout: 1e30` crashed the loader,
/// found by fuzzing).
fn positive_duration(seconds: f64) -> Option<Duration> {
    Duration::try_from_secs_f64(seconds)
        .ok()
        .filter(|duration| !duration.is_zero())
}

/// Loads the `*.md` definitions of `dirs`, lowest precedence first, on top
/// of the built-ins. Folders that do not exist are skipped silently. Returns
/// the registry and one warning per skipped file or ignored value, each
/// naming the file (and line, for parse errors).
pub fn load_definitions(dirs: &[PathBuf]) -> (Definitions, Vec<String>) {
    let mut definitions = Definitions::default();
    let mut warnings = Vec::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "md") && path.is_file())
            .collect();
        files.sort();
        for path in files {
            match load_file(&path) {
                Ok((definition, notes)) => {
                    for note in notes {
                        warnings.push(format!("{}: {note}", path.display()));
                    }
                    definitions.insert(definition);
                }
                Err(warning) => warnings.push(warning),
            }
        }
    }
    (definitions, warnings)
}

fn load_file(path: &Path) -> Result<(AgentDefinition, Vec<String>), String> {
    let text = std::fs::read_to_string(path).map_err(|err| {
        format!(
            "{}: cannot read the agent definition: {err}",
            path.display()
        )
    })?;
    let stem = path
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_default();
    let (mut definition, notes) = parse_definition(&text, &stem).map_err(|err| {
        format!(
            "{}:{}: agent definition skipped: {}",
            path.display(),
            err.line,
            err.message
        )
    })?;
    definition.source = Some(path.to_owned());
    Ok((definition, notes))
}

#[cfg(test)]
#[path = "loader_tests.rs"]
mod tests;
