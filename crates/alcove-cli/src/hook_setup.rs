//! A session's hooks: `[hooks]` in alcove's TOML config, plus the `hooks`
//! key of the workspace's `.claude/settings.json` (read-only compatibility)
//! and `.alcove/settings.json`, all in the Claude Code command-hook format,
//! so hook scripts written for Claude Code work unchanged.
//!
//! ```toml
//! [hooks]
//! max_stop_continuations = 3      # how often Stop/SubagentStop may send an agent back
//!
//! [[hooks.PreToolUse]]
//! matcher = "Bash"
//! command = "./scripts/check-command.sh"
//! timeout = 60
//! ```
//!
//! Entries from every source add up: unlike other config lists, a
//! project's `[[hooks.X]]` do not replace the user's. A broken
//! `.alcove/settings.json` is a configuration error; a broken
//! `.claude/settings.json` (someone else's file) is a warning and is skipped.
//! The settings files are read only in a trusted folder (`trust.rs`).

use std::path::Path;
use std::sync::Arc;

use alcove_core::{CommandHooks, EventSink, HookConfig, HookSession, Hooks, NoHooks};

use crate::UsageError;
use crate::config::Layer;

/// Every hook configured for a session by the config `layers` and the
/// settings files of `files_root` (a trusted workspace; `None` reads
/// none), and warnings about entries that were dropped.
pub(crate) fn load(
    layers: &[Layer],
    files_root: Option<&Path>,
) -> Result<(HookConfig, Vec<String>), UsageError> {
    let mut config = HookConfig::default();
    let mut warnings = Vec::new();
    for layer in layers {
        let Some(entry) = crate::settings::hooks::of_layer(layer)? else {
            continue;
        };
        for (event, entries) in &entry.events {
            warnings.extend(config.add(event, entries, &layer.source));
        }
    }
    let Some(workspace) = files_root else {
        return Ok((config, warnings));
    };
    for (relative, required) in [
        (".claude/settings.json", false),
        (".alcove/settings.json", true),
    ] {
        let path = workspace.join(relative);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => continue,
            Err(err) => {
                let message = format!("cannot read {}: {err}", path.display());
                if required {
                    return Err(UsageError(message));
                }
                warnings.push(message);
                continue;
            }
        };
        match config.add_settings_json(&text, &path.display().to_string()) {
            Ok(more) => warnings.extend(more),
            Err(message) if required => return Err(UsageError(message)),
            Err(message) => warnings.push(format!("{message}; its hooks were skipped")),
        }
    }
    Ok((config, warnings))
}

/// The hooks a session runs with: [`NoHooks`] when none are configured.
pub(crate) fn build(
    config: HookConfig,
    session: HookSession,
    events: Arc<dyn EventSink>,
) -> Arc<dyn Hooks> {
    if config.is_empty() {
        Arc::new(NoHooks)
    } else {
        Arc::new(CommandHooks::new(config, session, events))
    }
}

#[cfg(test)]
mod tests {
    use alcove_core::HookEvent;

    use super::*;

    #[test]
    fn toml_entries_and_settings_files_add_up() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".claude")).unwrap();
        std::fs::create_dir_all(dir.path().join(".alcove")).unwrap();
        std::fs::write(
            dir.path().join(".claude/settings.json"),
            r#"{"hooks": {"PreToolUse": [{"matcher": "Edit", "hooks": [{"type": "command", "command": "claude.sh"}]}]}}"#,
        )
        .unwrap();
        std::fs::write(
            dir.path().join(".alcove/settings.json"),
            r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "stop.sh"}]}]}}"#,
        )
        .unwrap();
        let layer = |source: &str, text: &str| Layer {
            kind: crate::config::LayerKind::Flag,
            source: source.to_owned(),
            table: toml::from_str(text).unwrap(),
        };
        let layers = [
            layer(
                "user",
                "[hooks]\nmax_stop_continuations = 5\n[[hooks.PreToolUse]]\nmatcher = \"Bash\"\ncommand = \"a.sh\"\ntimeout = 60\n",
            ),
            layer("project", "[[hooks.PreToolUse]]\ncommand = \"b.sh\"\n"),
            layer("-c max_turns=3", "max_turns = 3\n"),
        ];
        let (config, warnings) = load(&layers, Some(dir.path())).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(config.count(HookEvent::PreToolUse), 3);
        assert_eq!(config.count(HookEvent::Stop), 1);
    }

    #[test]
    fn a_broken_claude_file_warns_and_a_broken_alcove_file_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".claude")).unwrap();
        std::fs::write(dir.path().join(".claude/settings.json"), "{\n oops").unwrap();
        let (_, warnings) = load(&[], Some(dir.path())).unwrap();
        assert!(
            warnings[0].contains(".claude/settings.json"),
            "{warnings:?}"
        );
        std::fs::create_dir_all(dir.path().join(".alcove")).unwrap();
        std::fs::write(dir.path().join(".alcove/settings.json"), "{\n oops").unwrap();
        let err = load(&[], Some(dir.path())).unwrap_err();
        assert!(
            err.0.contains(".alcove/settings.json") && err.0.contains("line 2"),
            "{}",
            err.0
        );
    }
}
