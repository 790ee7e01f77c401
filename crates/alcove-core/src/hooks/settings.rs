//! Hook configuration: which commands run for which event and matcher.
//!
//! Two spellings decode to the same [`HookConfig`], so existing Claude Code
//! settings work unchanged:
//!
//! - alcove's flat TOML entries, `[[hooks.PreToolUse]] matcher = "Bash"
//!   command = "…" timeout = 60`;
//! - Claude Code's nested shape, `{"PreToolUse": [{"matcher": "Bash",
//!   "hooks": [{"type": "command", "command": "…", "timeout": 60}]}]}`,
//!   from the `hooks` key of a settings.json (also accepted in TOML).
//!
//! Problems that leave the rest usable (an unknown event, a handler type
//! other than `command`, a matcher that is not a valid regex) are warnings;
//! the entry is dropped and everything else loads.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

use super::matcher::Matcher;

/// How long a hook command may run unless its entry says otherwise.
pub const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(60);

/// The events hooks can be attached to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HookEvent {
    /// A session began (matcher: the source, `startup`).
    SessionStart,
    /// The user submitted a prompt (no matcher).
    UserPromptSubmit,
    /// Before a tool call (matcher: the tool name).
    PreToolUse,
    /// After a tool call (matcher: the tool name).
    PostToolUse,
    /// The main agent is about to finish (no matcher).
    Stop,
    /// A child agent starts (matcher: the agent type).
    SubagentStart,
    /// A child agent is about to finish (matcher: the agent type).
    SubagentStop,
    /// The session ends (matcher: the reason).
    SessionEnd,
    /// An agent's history is about to be compacted (matcher: `auto` or
    /// `manual`).
    PreCompact,
}

impl HookEvent {
    /// Every event, in a stable order.
    pub const ALL: [HookEvent; 9] = [
        HookEvent::SessionStart,
        HookEvent::UserPromptSubmit,
        HookEvent::PreToolUse,
        HookEvent::PostToolUse,
        HookEvent::Stop,
        HookEvent::SubagentStart,
        HookEvent::SubagentStop,
        HookEvent::SessionEnd,
        HookEvent::PreCompact,
    ];

    /// The name used in config and in `hook_event_name`.
    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::SessionStart => "SessionStart",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::Stop => "Stop",
            HookEvent::SubagentStart => "SubagentStart",
            HookEvent::SubagentStop => "SubagentStop",
            HookEvent::SessionEnd => "SessionEnd",
            HookEvent::PreCompact => "PreCompact",
        }
    }

    /// The event called `name`, exactly as Claude Code spells it.
    pub fn parse(name: &str) -> Option<HookEvent> {
        HookEvent::ALL
            .into_iter()
            .find(|event| event.as_str() == name)
    }

    /// Whether the event's entries are filtered by their matcher.
    pub(crate) fn uses_matcher(self) -> bool {
        !matches!(self, HookEvent::UserPromptSubmit | HookEvent::Stop)
    }
}

/// One configured entry, in either spelling.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct HookEntry {
    /// Tool name, `A|B`, a regex, or `*` / empty for all.
    pub matcher: Option<String>,
    /// Flat spelling: the handler type (only `command` is supported).
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// Flat spelling: the shell command.
    pub command: Option<String>,
    /// Flat spelling: the timeout in seconds.
    pub timeout: Option<f64>,
    /// Nested spelling: the handlers.
    pub hooks: Vec<HookHandler>,
}

/// One handler of the nested spelling.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct HookHandler {
    /// The handler type (only `command` is supported).
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// The shell command.
    pub command: Option<String>,
    /// The timeout in seconds.
    pub timeout: Option<f64>,
}

/// One command to run.
#[derive(Debug, Clone, PartialEq)]
pub struct HookCommand {
    /// Run with `sh -c` in the workspace.
    pub command: String,
    /// Killed (with its process group) after this long.
    pub timeout: Duration,
    /// Where it was configured, for messages.
    pub origin: String,
}

#[derive(Debug, Clone)]
pub(crate) struct HookGroup {
    pub(crate) matcher: Matcher,
    pub(crate) commands: Vec<HookCommand>,
}

/// Every configured hook of a session, by event.
#[derive(Debug, Clone, Default)]
pub struct HookConfig {
    groups: BTreeMap<HookEvent, Vec<HookGroup>>,
}

/// The `hooks` key of a Claude Code style settings.json; other keys are
/// someone else's business.
#[derive(Debug, Default, Deserialize)]
struct SettingsFile {
    #[serde(default)]
    hooks: BTreeMap<String, Vec<HookEntry>>,
}

impl HookConfig {
    /// Adds the entries configured for the event called `event`; `origin`
    /// (a file or "config") is named in messages. Returns warnings about
    /// entries that were dropped.
    pub fn add(&mut self, event: &str, entries: &[HookEntry], origin: &str) -> Vec<String> {
        let Some(parsed) = HookEvent::parse(event) else {
            let known: Vec<&str> = HookEvent::ALL.iter().map(|event| event.as_str()).collect();
            return vec![format!(
                "{origin}: unknown hook event `{event}` ignored (known: {})",
                known.join(", ")
            )];
        };
        let mut warnings = Vec::new();
        for entry in entries {
            let matcher_text = entry.matcher.as_deref().unwrap_or("");
            let matcher = match Matcher::parse(matcher_text) {
                Ok(matcher) => matcher,
                Err(reason) => {
                    warnings.push(format!(
                        "{origin}: {event} matcher `{matcher_text}` ignored with its hooks: {reason}"
                    ));
                    continue;
                }
            };
            let flat = entry.command.as_ref().map(|command| HookHandler {
                kind: entry.kind.clone(),
                command: Some(command.clone()),
                timeout: entry.timeout,
            });
            let mut commands = Vec::new();
            for handler in flat.iter().chain(&entry.hooks) {
                match command_of(handler, origin) {
                    Ok(command) => commands.push(command),
                    Err(reason) => {
                        warnings.push(format!("{origin}: {event} hook ignored: {reason}"))
                    }
                }
            }
            if !commands.is_empty() {
                self.groups
                    .entry(parsed)
                    .or_default()
                    .push(HookGroup { matcher, commands });
            }
        }
        warnings
    }

    /// Adds the `hooks` key of a settings.json (other keys are ignored).
    /// A file that is not valid JSON is an error naming its line.
    pub fn add_settings_json(&mut self, text: &str, origin: &str) -> Result<Vec<String>, String> {
        let settings: SettingsFile =
            serde_json::from_str(text).map_err(|err| format!("{origin}: {err}"))?;
        let mut warnings = Vec::new();
        for (event, entries) in &settings.hooks {
            warnings.extend(self.add(event, entries, origin));
        }
        Ok(warnings)
    }

    /// No hook is configured.
    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// How many commands are configured for `event`.
    pub fn count(&self, event: HookEvent) -> usize {
        self.groups.get(&event).map_or(0, |groups| {
            groups.iter().map(|group| group.commands.len()).sum()
        })
    }

    /// The commands for `event` whose matcher accepts `target` (the tool
    /// name, agent type, source or reason), each command once.
    pub(crate) fn matching(&self, event: HookEvent, target: &str) -> Vec<&HookCommand> {
        let mut found: Vec<&HookCommand> = Vec::new();
        for group in self.groups.get(&event).into_iter().flatten() {
            if event.uses_matcher() && !group.matcher.matches(target) {
                continue;
            }
            for command in &group.commands {
                if !found.iter().any(|seen| seen.command == command.command) {
                    found.push(command);
                }
            }
        }
        found
    }
}

fn command_of(handler: &HookHandler, origin: &str) -> Result<HookCommand, String> {
    let kind = handler.kind.as_deref().unwrap_or("command");
    if kind != "command" {
        return Err(format!(
            "handler type `{kind}` is not supported (only `command`)"
        ));
    }
    let command = handler
        .command
        .as_deref()
        .map(str::trim)
        .filter(|command| !command.is_empty())
        .ok_or_else(|| "an entry has no `command`".to_owned())?;
    let timeout = match handler.timeout {
        None => DEFAULT_HOOK_TIMEOUT,
        Some(secs) => match Duration::try_from_secs_f64(secs) {
            Ok(timeout) if !timeout.is_zero() => timeout,
            // Negative, NaN, infinite, rounded to nothing, or past `Duration`'s
            // range, where `from_secs_f64` panicked (`"timeout": 1e30`).
            _ => return Err(format!("timeout {secs} of `{command}` must be positive")),
        },
    };
    Ok(HookCommand {
        command: command.to_owned(),
        timeout,
        origin: origin.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_spellings_decode_to_the_same_commands() {
        let mut config = HookConfig::default();
        let flat = HookEntry {
            matcher: Some("Bash".to_owned()),
            command: Some("flat.sh".to_owned()),
            timeout: Some(5.0),
            ..HookEntry::default()
        };
        assert!(config.add("PreToolUse", &[flat], "config").is_empty());
        let warnings = config
            .add_settings_json(
                r#"{"permissions": {}, "hooks": {"PreToolUse": [{"matcher": "Edit|Write",
                    "hooks": [{"type": "command", "command": "nested.sh"}]}]}}"#,
                ".claude/settings.json",
            )
            .unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        let bash = config.matching(HookEvent::PreToolUse, "Bash");
        assert_eq!(bash.len(), 1);
        assert_eq!(bash[0].command, "flat.sh");
        assert_eq!(bash[0].timeout, Duration::from_secs(5));
        let write = config.matching(HookEvent::PreToolUse, "Write");
        assert_eq!(write[0].command, "nested.sh");
        assert_eq!(write[0].timeout, DEFAULT_HOOK_TIMEOUT);
        assert!(config.matching(HookEvent::PostToolUse, "Bash").is_empty());
        assert_eq!(config.count(HookEvent::PreToolUse), 2);
    }

    #[test]
    fn problems_are_warnings_and_the_rest_loads() {
        let mut config = HookConfig::default();
        let warnings = config
            .add_settings_json(
                r#"{"hooks": {
                    "PreToolUze": [{"hooks": [{"command": "a"}]}],
                    "PostToolUse": [
                        {"matcher": "(", "hooks": [{"command": "b"}]},
                        {"hooks": [{"type": "http", "command": "c"}, {"command": "d"}]}
                    ]}}"#,
                "s.json",
            )
            .unwrap();
        assert_eq!(warnings.len(), 3, "{warnings:?}");
        assert!(
            warnings
                .iter()
                .any(|warning| warning.contains("unknown hook event `PreToolUze`")),
            "{warnings:?}"
        );
        let post = config.matching(HookEvent::PostToolUse, "Read");
        assert_eq!(post.len(), 1);
        assert_eq!(post[0].command, "d");
        let err = config
            .add_settings_json("{\n  \"hooks\": [", "s.json")
            .unwrap_err();
        assert!(err.contains("s.json") && err.contains("line"), "{err}");
    }

    /// A timeout past `Duration`'s range panicked while settings loaded (the
    /// class of bug fuzzing found in agent definitions); it is a warning.
    #[test]
    fn timeouts_that_are_no_duration_are_warnings_not_panics() {
        let mut config = HookConfig::default();
        let warnings = config
            .add_settings_json(
                r#"{"hooks": {"PreToolUse": [{"hooks": [
                    {"command": "huge", "timeout": 1e30},
                    {"command": "tiny", "timeout": 1e-12},
                    {"command": "fine", "timeout": 1e9}]}]}}"#,
                "s.json",
            )
            .unwrap();
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(
            warnings.iter().all(|w| w.contains("must be positive")),
            "{warnings:?}"
        );
        let loaded = config.matching(HookEvent::PreToolUse, "Bash");
        assert_eq!(loaded.len(), 1);
        assert_eq!(loaded[0].timeout, Duration::from_secs(1_000_000_000));
    }

    #[test]
    fn stop_and_prompt_hooks_ignore_their_matcher_and_duplicates_run_once() {
        let mut config = HookConfig::default();
        let entry = |matcher: &str, command: &str| HookEntry {
            matcher: Some(matcher.to_owned()),
            command: Some(command.to_owned()),
            ..HookEntry::default()
        };
        config.add("Stop", &[entry("Nothing", "s.sh"), entry("*", "s.sh")], "c");
        assert_eq!(config.matching(HookEvent::Stop, "").len(), 1);
        config.add("SubagentStop", &[entry("reviewer", "r.sh")], "c");
        assert_eq!(
            config.matching(HookEvent::SubagentStop, "reviewer").len(),
            1
        );
        assert!(
            config
                .matching(HookEvent::SubagentStop, "explore")
                .is_empty()
        );
    }
}
