//! Folder trust: a workspace's own settings (a cloned repository's
//! `.alcove/config.toml`, the hooks of its `.claude/settings.json` and
//! `.alcove/settings.json`, its `.mcp.json` / `.alcove/mcp.json`) can run
//! code, widen permissions and send credentials away, so they count only
//! in a folder its user trusts.
//!
//! A folder is trusted when the user's own config records it, or a folder
//! above it, as Codex records it (`[projects."<absolute path>"] trust =
//! "trusted"`, written by `alcove trust`; the nearest record wins, so
//! `"untrusted"` below a trusted folder holds), or for one run with
//! `--trust` (`ALCOVE_TRUST=1`). The decision is made once, here, when the
//! layers are read: every consumer (the merged config, rules, hooks, MCP
//! servers, sandbox, telemetry, providers) gets layers already filtered.
//! In an untrusted folder a project layer keeps only what cannot run code,
//! widen permissions or move data (each section's `UNTRUSTED`; deny and ask rules
//! among them), the project's hook and MCP files are not read, and
//! [`ProjectSettings::notice`] names what was ignored in one line.

use std::path::{Path, PathBuf};

use crate::config::{self, Dirs, Layer, LayerKind};
use crate::settings::{Config, Untrusted};

/// Whether the user trusts the workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Trust {
    /// Recorded in the user's config (for it or a folder above), or `--trust`.
    Trusted,
    /// Its own settings count only where they narrow.
    Untrusted,
}

/// The config layers as the folder's trust leaves them.
pub(crate) struct ProjectSettings {
    /// User file < project file (filtered when untrusted) < environment
    /// < `-c` flags.
    pub(crate) layers: Vec<Layer>,
    pub(crate) trust: Trust,
    workspace: PathBuf,
    /// What an untrusted folder's settings asked for and did not get.
    ignored: Vec<String>,
}

impl ProjectSettings {
    /// Reads the layers of `workspace` and decides its trust: `flag` is
    /// `--trust` (or `ALCOVE_TRUST`).
    pub(crate) fn read(
        dirs: &Dirs,
        workspace: &Path,
        overrides: &[String],
        flag: bool,
    ) -> anyhow::Result<ProjectSettings> {
        let layers = config::layers(dirs, workspace, overrides, crate::settings::environment())?;
        let trust = if flag {
            Trust::Trusted
        } else {
            recorded(&layers, workspace)
        };
        Ok(ProjectSettings::with_trust(layers, workspace, trust))
    }

    /// [`ProjectSettings::read`] with a command's `-c` and `--trust`.
    pub(crate) fn of(
        common: &crate::CommonArgs,
        dirs: &Dirs,
        workspace: &Path,
    ) -> anyhow::Result<ProjectSettings> {
        ProjectSettings::read(dirs, workspace, &common.overrides, common.trust)
    }

    /// The layers held to `trust`.
    pub(crate) fn with_trust(
        mut layers: Vec<Layer>,
        workspace: &Path,
        trust: Trust,
    ) -> ProjectSettings {
        let mut ignored = Vec::new();
        if trust == Trust::Untrusted {
            for layer in &mut layers {
                if let LayerKind::Project(path) = &layer.kind {
                    let dropped = restrict(&mut layer.table);
                    if !dropped.is_empty() {
                        ignored.push(format!(
                            "{} in {}",
                            dropped.join(", "),
                            shown(path, workspace)
                        ));
                    }
                }
            }
            ignored.extend(project_files(workspace));
        }
        ProjectSettings {
            layers,
            trust,
            workspace: workspace.to_owned(),
            ignored,
        }
    }

    /// The merged configuration.
    pub(crate) fn config(&self) -> anyhow::Result<Config> {
        Config::merged(&self.layers)
    }

    /// The folder whose own hook and MCP files are read: `None` when it is
    /// not trusted.
    pub(crate) fn files_root(&self) -> Option<&Path> {
        (self.trust == Trust::Trusted).then_some(self.workspace.as_path())
    }

    /// Whether an untrusted folder had settings that were ignored.
    pub(crate) fn ignored_any(&self) -> bool {
        !self.ignored.is_empty()
    }

    /// One line naming what was ignored and how to trust the folder, when
    /// something was.
    pub(crate) fn notice(&self) -> Option<String> {
        if self.ignored.is_empty() {
            return None;
        }
        Some(format!(
            "{} is not a trusted folder, so its own settings that run code, widen permissions \
             or send data were ignored: {}. Trust it with `alcove trust` (or `--trust` for one run).",
            self.workspace.display(),
            self.ignored.join("; ")
        ))
    }
}

/// Whether the user's config trusts `workspace`: the nearest record of it
/// or a folder above it.
fn recorded(layers: &[Layer], workspace: &Path) -> Trust {
    let mut nearest: Option<(usize, bool)> = None;
    for layer in layers {
        if !matches!(layer.kind, LayerKind::User(_)) {
            continue;
        }
        for (folder, trusted) in records(&layer.table) {
            if workspace.starts_with(&folder) {
                let depth = folder.components().count();
                if nearest.is_none_or(|(best, _)| depth >= best) {
                    nearest = Some((depth, trusted));
                }
            }
        }
    }
    match nearest {
        Some((_, true)) => Trust::Trusted,
        _ => Trust::Untrusted,
    }
}

/// The folders a config's `[projects]` names, each with whether it is
/// trusted (`trust`, or Codex's `trust_level`, equal to `"trusted"`).
/// A relative name is no record: it would resolve against whatever folder
/// alcove was started in, so `"."` would trust every folder.
pub(crate) fn records(table: &toml::Table) -> Vec<(PathBuf, bool)> {
    let Some(projects) = table.get("projects").and_then(toml::Value::as_table) else {
        return Vec::new();
    };
    projects
        .iter()
        .filter_map(|(folder, entry)| {
            let entry = entry.as_table()?;
            let level = entry
                .get("trust")
                .or_else(|| entry.get("trust_level"))?
                .as_str()?;
            let folder = PathBuf::from(folder);
            if !folder.is_absolute() {
                return None;
            }
            let folder = folder.canonicalize().unwrap_or(folder);
            Some((folder, level == "trusted"))
        })
        .collect()
}

/// Drops from a project table what an untrusted folder may not set (each
/// section says what it keeps: `settings::kept_untrusted`), and names it.
fn restrict(table: &mut toml::Table) -> Vec<String> {
    let mut dropped: Vec<String> = Vec::new();
    let policy = |key: &str| {
        crate::settings::kept_untrusted()
            .find(|(kept, _)| *kept == key)
            .map(|(_, policy)| *policy)
    };
    table.retain(|key, _| {
        let keep = policy(key).is_some();
        if !keep {
            dropped.push(key.to_owned());
        }
        keep
    });
    for (outer, value) in table.iter_mut() {
        let (Some(rule), toml::Value::Table(entry)) = (policy(outer), value) else {
            continue;
        };
        entry.retain(|key, _| {
            let keep = match rule {
                Untrusted::Kept => true,
                Untrusted::KeptBut(dropped) => !dropped.contains(&key),
                Untrusted::Only(kept) => kept.contains(&key),
            };
            if !keep {
                dropped.push(format!("{outer}.{key}"));
            }
            keep
        });
    }
    dropped
}

/// The project's hook and MCP files that an untrusted folder does not
/// read, each named with what it holds.
fn project_files(workspace: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for relative in [".claude/settings.json", ".alcove/settings.json"] {
        let has_hooks = std::fs::read_to_string(workspace.join(relative))
            .ok()
            .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
            .is_some_and(|value| value.get("hooks").is_some());
        if has_hooks {
            found.push(format!("hooks in {relative}"));
        }
    }
    for path in crate::mcp_setup::json_files(workspace) {
        if path.exists() {
            found.push(format!("MCP servers in {}", shown(&path, workspace)));
        }
    }
    for relative in [".alcove/workflows", ".claude/workflows"] {
        let scripts = std::fs::read_dir(workspace.join(relative)).map_or(0, |entries| {
            entries
                .filter_map(Result::ok)
                .filter(|entry| entry.path().extension().is_some_and(|ext| ext == "js"))
                .count()
        });
        if scripts > 0 {
            found.push(format!("saved workflows in {relative}"));
        }
    }
    found
}

/// `path` relative to the workspace when inside it.
fn shown(path: &Path, workspace: &Path) -> String {
    path.strip_prefix(workspace)
        .unwrap_or(path)
        .display()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer(kind: LayerKind, text: &str) -> Layer {
        Layer {
            source: format!("{kind:?}"),
            kind,
            table: text.parse().unwrap(),
        }
    }

    #[test]
    fn an_untrusted_project_keeps_only_what_narrows() {
        let project = layer(
            LayerKind::Project("/w/.alcove/config.toml".into()),
            "model = \"x/y\"\npermission_mode = \"bypassPermissions\"\nmax_turns = 3\n\
             [permissions]\nallow = [\"Bash\"]\ndeny = [\"Write\"]\nask = [\"Edit\"]\n\
             [agents]\ncommand = \"sh run.sh\"\nmax_depth = 2\n\
             [sandbox]\nmode = \"read-only\"\nwritable_roots = [\"/\"]\n\
             [env]\nscrub = false\n[telemetry]\nendpoint = \"http://x\"\n",
        );
        let user = layer(
            LayerKind::User("/u/config.toml".into()),
            "model = \"a/b\"\n[env]\nscrub = true\n",
        );
        let settings = ProjectSettings::with_trust(
            vec![user, project],
            Path::new("/nonexistent-w"),
            Trust::Untrusted,
        );
        let table = &settings.layers[1].table;
        assert_eq!(table["max_turns"].as_integer(), Some(3));
        assert!(table.get("model").is_none() && table.get("env").is_none());
        assert!(table["permissions"].get("allow").is_none());
        assert!(table["permissions"].get("deny").is_some());
        assert!(table["permissions"].get("ask").is_some());
        assert!(table["agents"].get("command").is_none());
        assert_eq!(table["agents"]["max_depth"].as_integer(), Some(2));
        assert!(table["sandbox"].get("writable_roots").is_none());
        let notice = settings.notice().unwrap();
        for name in [
            "model",
            "permission_mode",
            "env",
            "telemetry",
            "permissions.allow",
            "agents.command",
            "sandbox.writable_roots",
            "alcove trust",
            "--trust",
        ] {
            assert!(notice.contains(name), "{name}: {notice}");
        }
        // The user's layer is untouched.
        assert_eq!(settings.layers[0].table["model"].as_str(), Some("a/b"));
        assert_eq!(settings.config().unwrap().model.as_deref(), Some("a/b"));
    }

    /// What the sections keep together is exactly what an untrusted
    /// project was allowed before they said it themselves.
    #[test]
    fn the_sections_keep_what_an_untrusted_project_kept() {
        let mut kept: Vec<(&str, Untrusted)> = crate::settings::kept_untrusted().copied().collect();
        kept.sort_by_key(|(key, _)| *key);
        let mut expected = vec![
            ("max_turns", Untrusted::Kept),
            ("max_tokens", Untrusted::Kept),
            ("temperature", Untrusted::Kept),
            ("effort", Untrusted::Kept),
            ("max_tool_calls_per_reply", Untrusted::Kept),
            ("tool_profile", Untrusted::Kept),
            ("model_options", Untrusted::Kept),
            ("retry", Untrusted::Kept),
            ("agents", Untrusted::KeptBut(&["command"])),
            ("model_context_window", Untrusted::Kept),
            ("context_windows", Untrusted::Kept),
            ("auto_compact_at", Untrusted::Kept),
            ("prompt_cache_key", Untrusted::Kept),
            ("pricing", Untrusted::Kept),
            ("background", Untrusted::Kept),
            ("permissions", Untrusted::Only(&["deny", "ask"])),
            ("sandbox", Untrusted::Only(&["mode"])),
        ];
        expected.sort_by_key(|(key, _)| *key);
        assert_eq!(kept, expected);
    }

    #[test]
    fn the_nearest_record_decides_and_a_project_cannot_trust_itself() {
        let user = layer(
            LayerKind::User("/u/config.toml".into()),
            "[projects.\"/nonexistent-a\"]\ntrust = \"trusted\"\n\
             [projects.\"/nonexistent-a/b\"]\ntrust = \"untrusted\"\n\
             [projects.\"/nonexistent-c\"]\ntrust_level = \"trusted\"\n",
        );
        let project = layer(
            LayerKind::Project("/nonexistent-d/.alcove/config.toml".into()),
            "[projects.\"/nonexistent-d\"]\ntrust = \"trusted\"\n",
        );
        let layers = [user, project];
        let trust = |folder: &str| recorded(&layers, Path::new(folder));
        assert_eq!(trust("/nonexistent-a"), Trust::Trusted);
        assert_eq!(trust("/nonexistent-a/x/y"), Trust::Trusted);
        assert_eq!(trust("/nonexistent-a/b/c"), Trust::Untrusted);
        assert_eq!(trust("/nonexistent-ab"), Trust::Untrusted);
        assert_eq!(trust("/nonexistent-c"), Trust::Trusted);
        assert_eq!(trust("/nonexistent-d"), Trust::Untrusted);
    }

    #[test]
    fn a_relative_record_trusts_no_folder() {
        let cwd = std::env::current_dir().unwrap().canonicalize().unwrap();
        let user = layer(
            LayerKind::User("/u/config.toml".into()),
            "[projects.\".\"]\ntrust = \"trusted\"\n[projects.\"src\"]\ntrust = \"trusted\"\n",
        );
        let layers = [user];
        assert_eq!(recorded(&layers, &cwd), Trust::Untrusted);
        assert_eq!(recorded(&layers, &cwd.join("src")), Trust::Untrusted);
    }
}
