//! Claude Code's settings files as config layers: the `permissions` of
//! `~/.claude/settings.json` (or `$CLAUDE_CONFIG_DIR/settings.json`),
//! `.claude/settings.json` and `.claude/settings.local.json` apply as if
//! they were written in alcove's own config files, so a Claude Code user's
//! rules hold on the first day.
//!
//! ```json
//! {"permissions": {"allow": ["Bash(npm test:*)"], "deny": ["Read(./secrets/**)"],
//!   "ask": ["Bash(git push:*)"], "additionalDirectories": ["../shared"],
//!   "defaultMode": "acceptEdits"}}
//! ```
//!
//! Each file becomes one table that `config.rs` makes a layer of the same
//! kind as the alcove file beside it (`user …` or `project …`), just
//! below it: `allow` / `ask` /
//! `deny` become `[permissions]`, `defaultMode` becomes `permission_mode`
//! and `additionalDirectories` becomes `sandbox.writable_roots` (which a
//! project layer may not widen). A rule alcove cannot read, or a file that
//! is not JSON, is a warning and is skipped: the file is Claude Code's.
//! Other keys of these files are Claude Code's own and are not checked.

use std::path::{Path, PathBuf};

use alcove_core::{PermissionMode, Rule};
use serde::Deserialize;

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct SettingsFile {
    permissions: Option<PermissionsSection>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct PermissionsSection {
    allow: Vec<String>,
    ask: Vec<String>,
    deny: Vec<String>,
    additional_directories: Vec<String>,
    default_mode: Option<String>,
}

/// Claude Code's user settings file.
fn user_file() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("CLAUDE_CONFIG_DIR").filter(|dir| !dir.is_empty()) {
        return Some(PathBuf::from(dir).join("settings.json"));
    }
    std::env::var_os("HOME")
        .filter(|home| !home.is_empty())
        .map(|home| PathBuf::from(home).join(".claude/settings.json"))
}

/// The user file (`~/.claude/settings.json`) and its table, if the file
/// has permissions.
pub(crate) fn user_table(warnings: &mut Vec<String>) -> Option<(PathBuf, toml::Table)> {
    let path = user_file()?;
    table("user", &path, warnings).map(|table| (path, table))
}

/// The project files and their tables (`.claude/settings.json`, then
/// `.claude/settings.local.json`, which wins).
pub(crate) fn project_tables(
    workspace: &Path,
    warnings: &mut Vec<String>,
) -> Vec<(PathBuf, toml::Table)> {
    [".claude/settings.json", ".claude/settings.local.json"]
        .iter()
        .filter_map(|relative| {
            let path = workspace.join(relative);
            table("project", &path, warnings).map(|table| (path, table))
        })
        .collect()
}

/// What is wrong in the Claude Code settings files a session reads.
pub(crate) fn warnings(workspace: &Path) -> Vec<String> {
    let mut warnings = Vec::new();
    user_table(&mut warnings);
    project_tables(workspace, &mut warnings);
    warnings
}

/// One file's `permissions` as a config table.
fn table(whose: &str, path: &Path, warnings: &mut Vec<String>) -> Option<toml::Table> {
    let text = std::fs::read_to_string(path).ok()?;
    let file: SettingsFile = match serde_json::from_str(&text) {
        Ok(file) => file,
        Err(err) => {
            warnings.push(format!(
                "{}: {err}; its permissions were skipped",
                path.display()
            ));
            return None;
        }
    };
    let permissions = file.permissions?;
    let source = format!("{whose} {}", path.display());
    let mut table = toml::Table::new();
    let mut rules = toml::Table::new();
    for (key, texts) in [
        ("allow", permissions.allow),
        ("ask", permissions.ask),
        ("deny", permissions.deny),
    ] {
        let mut kept = Vec::new();
        for text in texts {
            match Rule::parse(&text, &source) {
                Ok(_) => kept.push(toml::Value::String(text)),
                Err(err) => warnings.push(format!("{err}; the rule was skipped")),
            }
        }
        if !kept.is_empty() {
            rules.insert(key.to_owned(), toml::Value::Array(kept));
        }
    }
    if !rules.is_empty() {
        table.insert("permissions".to_owned(), toml::Value::Table(rules));
    }
    if let Some(mode) = permissions.default_mode {
        if PermissionMode::parse(&mode).is_some() {
            table.insert("permission_mode".to_owned(), toml::Value::String(mode));
        } else {
            warnings.push(format!(
                "{}: defaultMode `{mode}` is not one alcove has; it was skipped",
                path.display()
            ));
        }
    }
    if !permissions.additional_directories.is_empty() {
        let base = path.parent().and_then(Path::parent).unwrap_or(path);
        let roots = permissions
            .additional_directories
            .iter()
            .map(|dir| {
                let dir = Path::new(dir);
                let absolute = if dir.is_absolute() || dir.starts_with("~") {
                    dir.to_owned()
                } else {
                    base.join(dir)
                };
                toml::Value::String(absolute.display().to_string())
            })
            .collect();
        let mut sandbox = toml::Table::new();
        sandbox.insert("writable_roots".to_owned(), toml::Value::Array(roots));
        table.insert("sandbox".to_owned(), toml::Value::Table(sandbox));
    }
    (!table.is_empty()).then_some(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permissions_become_a_layer_and_bad_rules_warn() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".claude")).unwrap();
        std::fs::write(
            dir.path().join(".claude/settings.json"),
            r#"{"permissions": {"deny": ["Read(./secrets/**)", "Bash(oops"], "allow": ["Bash(ls:*)"],
               "defaultMode": "acceptEdits", "additionalDirectories": ["../shared"]},
               "hooks": {}}"#,
        )
        .unwrap();
        std::fs::write(dir.path().join(".claude/settings.local.json"), "{ not json").unwrap();
        let mut warnings = Vec::new();
        let tables = project_tables(dir.path(), &mut warnings);
        assert_eq!(tables.len(), 1);
        let (path, table) = &tables[0];
        assert!(path.ends_with(".claude/settings.json"), "{path:?}");
        assert_eq!(table["permissions"]["deny"].as_array().unwrap().len(), 1);
        assert_eq!(table["permission_mode"].as_str(), Some("acceptEdits"));
        assert!(
            table["sandbox"]["writable_roots"][0]
                .as_str()
                .unwrap()
                .ends_with("/../shared")
        );
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].contains("Bash(oops"), "{warnings:?}");
        assert!(warnings[1].contains("settings.local.json"), "{warnings:?}");
    }
}
