//! Agent definitions from Markdown files with YAML front matter, so the
//! `.claude/agents/*.md` files users already have work unchanged.
//!
//! ```text
//! ---
//! name: reviewer
//! description: Reviews a diff for bugs; read-only.
//! tools: Read, Grep, Glob          # or a YAML list
//! disallowedTools: [Bash]
//! model: anthropic/claude-sonnet-4-5   # provider/name, sonnet/opus/haiku, or inherit
//! permissionMode: plan
//! maxTurns: 20
//! effort: high                     # low / medium / high / max: how hard it thinks
//! timeout: 5m                      # seconds, or 90s / 5m / 1h
//! skills: [release-notes]          # skills whose bodies are preloaded
//! permissions:                     # alcove's own key
//!   allow: ["Bash(cargo test:*)"]
//!   deny: ["Edit"]
//! sandbox: read-only               # workspace-write | read-only | off (never looser than the parent's)
//! network: true                    # commands may use the network (if the parent's may)
//! isolation: worktree              # work in a git worktree of its own
//! leaveSpawned: true               # agents it spawns outlive it (default: closed at its end)
//! ---
//! The body is the system prompt.
//! ```
//!
//! Folders are given lowest precedence first (this crate never reads the
//! environment, so the CLI finds them); a later folder's definition replaces
//! an earlier one of the same name, built-ins included. A file that cannot be
//! read or parsed is skipped with a warning naming the file and line; the
//! rest load. Unknown keys (Claude Code's `color`, `hooks`, …) are
//! ignored.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use super::definitions::{AgentDefinition, AgentPermissions, Definitions};
pub use crate::frontmatter::DefinitionError;
use crate::frontmatter::{self, Document, Names};

/// Claude Code's old name for the delegation tool is `Task`.
fn tool_names(names: Names) -> Vec<String> {
    names
        .into_vec()
        .into_iter()
        .map(|item| {
            if item == "Task" {
                "Agent".to_owned()
            } else {
                item
            }
        })
        .collect()
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
    effort: Option<String>,
    timeout: Option<Timeout>,
    permissions: Option<Rules>,
    skills: Option<Names>,
    sandbox: Option<String>,
    network: Option<bool>,
    isolation: Option<String>,
    #[serde(alias = "leave_spawned")]
    leave_spawned: Option<bool>,
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
    let document = frontmatter::split(text, true)?;
    let front: FrontMatter = frontmatter::parse(&document.yaml)?;
    let closing_line = document.closing_line;
    let body = document.body.to_owned();
    let at = |key: &str| DefinitionErrorAt {
        document: &document,
        key: key.to_owned(),
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
    let sandbox = match &front.sandbox {
        None => None,
        Some(text) => Some(alcove_tools::SandboxMode::parse(text).ok_or_else(|| {
            at("sandbox").error(&format!(
                "unknown sandbox `{text}`; use workspace-write, read-only or off"
            ))
        })?),
    };
    let worktree = match front.isolation.as_deref().map(str::trim) {
        None | Some("" | "none") => false,
        Some("worktree") => true,
        Some(other) => {
            return Err(at("isolation").error(&format!(
                "unknown isolation `{other}`; use worktree (or leave it out)"
            )));
        }
    };
    let effort = match front.effort.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(effort) => {
            Some(alcove_model::parse_effort(effort).map_err(|reason| at("effort").error(&reason))?)
        }
    };
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

    // `inherit` is the parent's model; a family alias (`sonnet`, `opus`,
    // `haiku`) is kept as written and resolved per session (the provider
    // decides what it means: see the CLI's `model_aliases`).
    // Claude Code's `color` only colours its own UI.
    static KNOWN: std::sync::OnceLock<crate::known_keys::KeyTree> = std::sync::OnceLock::new();
    let known = KNOWN.get_or_init(crate::known_keys::KeyTree::of::<FrontMatter>);
    let notes = frontmatter::unknown_keys(known, &document, &["color"]);
    let model = front
        .model
        .map(|model| model.trim().to_owned())
        .filter(|model| !model.is_empty() && model != "inherit");
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
        tools: front.tools.map(tool_names),
        disallowed_tools: front.disallowed_tools.map(tool_names).unwrap_or_default(),
        model,
        max_turns: front.max_turns,
        effort,
        permission_mode: front.permission_mode,
        permissions: AgentPermissions {
            allow: rules.allow,
            ask: rules.ask,
            deny: rules.deny,
        },
        timeout,
        skills: front.skills.map(Names::into_vec).unwrap_or_default(),
        sandbox,
        network: front.network,
        worktree,
        leave_spawned: front.leave_spawned.unwrap_or(false),
        source: None,
    };
    Ok((definition, notes))
}

struct DefinitionErrorAt<'a> {
    document: &'a Document<'a>,
    key: String,
}

impl DefinitionErrorAt<'_> {
    fn error(&self, message: &str) -> DefinitionError {
        self.document.error_at(&self.key, message)
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
