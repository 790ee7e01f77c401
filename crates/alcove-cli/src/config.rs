//! The configuration's layers, read and merged: nothing else. What a key
//! means, its default, its environment variable and how it resolves into
//! the values a session uses live in its section's module under
//! `settings/`; this module only knows tables and where they came from.
//!
//! One precedence, later wins, enforced here ([`LayerKind::rank`],
//! [`merged`]): built-in defaults < user file (`$ALCOVE_HOME/config.toml`,
//! else `$XDG_CONFIG_HOME/alcove/config.toml`, else
//! `~/.config/alcove/config.toml`) < project file (`.alcove/config.toml` in
//! the workspace) < the environment variables that set keys (a layer
//! `settings::environment` builds) < `-c key=value` flags; dedicated flags
//! (`--model`, …) win over all, applied by the setting's `resolve`. Claude
//! Code's settings files are layers just below alcove's file of the same
//! kind (`claude_settings.rs`). A file that does not parse is an error
//! naming the file, line and column. A project file counts only as far as
//! the folder's trust lets it (`trust.rs` filters the layers before they
//! merge).

use std::path::{Path, PathBuf};

use anyhow::Context;

/// One config file, one environment variable or one `-c` flag, as a table.
#[derive(Debug, Clone)]
pub(crate) struct Layer {
    /// Whose settings these are: what a folder's trust decides on.
    pub(crate) kind: LayerKind,
    /// `user /path/config.toml`, `project /ws/.alcove/config.toml`,
    /// `env ALCOVE_MODEL`, `-c key=value`.
    pub(crate) source: String,
    pub(crate) table: toml::Table,
}

/// Where a layer came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LayerKind {
    /// The user's own file.
    User(PathBuf),
    /// A file in the workspace: what a cloned repository controls, held
    /// to the folder's trust (`trust.rs`).
    Project(PathBuf),
    /// An environment variable that sets a key.
    Env,
    /// A `-c` flag.
    Flag,
}

impl LayerKind {
    /// The file the layer was read from, if any.
    pub(crate) fn file(&self) -> Option<&Path> {
        match self {
            LayerKind::User(path) | LayerKind::Project(path) => Some(path),
            LayerKind::Env | LayerKind::Flag => None,
        }
    }

    /// Where the kind stands in the one precedence: a higher rank wins.
    pub(crate) fn rank(&self) -> u8 {
        match self {
            LayerKind::User(_) => 0,
            LayerKind::Project(_) => 1,
            LayerKind::Env => 2,
            LayerKind::Flag => 3,
        }
    }
}

/// Where alcove keeps its files.
#[derive(Debug, Clone)]
pub(crate) struct Dirs {
    /// Holds `config.toml`.
    pub(crate) config: PathBuf,
    /// Holds `sessions/`.
    pub(crate) data: PathBuf,
}

impl Dirs {
    /// `ALCOVE_HOME` when set (both), otherwise the XDG locations.
    pub(crate) fn from_env() -> anyhow::Result<Dirs> {
        if let Some(home) = std::env::var_os("ALCOVE_HOME").filter(|home| !home.is_empty()) {
            let home = PathBuf::from(home);
            return Ok(Dirs {
                config: home.clone(),
                data: home,
            });
        }
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let xdg = |var: &str, fallback: &str| -> anyhow::Result<PathBuf> {
            match std::env::var_os(var).filter(|dir| !dir.is_empty()) {
                Some(dir) => Ok(PathBuf::from(dir).join("alcove")),
                None => match &home {
                    Some(home) => Ok(home.join(fallback).join("alcove")),
                    None => {
                        anyhow::bail!("neither ALCOVE_HOME, {var} nor HOME is set; set ALCOVE_HOME")
                    }
                },
            }
        };
        Ok(Dirs {
            config: xdg("XDG_CONFIG_HOME", ".config")?,
            data: xdg("XDG_DATA_HOME", ".local/share")?,
        })
    }
}

/// The file, environment and `-c` layers, lowest first (files that do not
/// exist are skipped): `environment` is the layer of the variables that
/// set keys (`settings::environment`).
pub(crate) fn layers(
    dirs: &Dirs,
    workspace: &Path,
    overrides: &[String],
    environment: Vec<Layer>,
) -> anyhow::Result<Vec<Layer>> {
    let mut layers = Vec::new();
    // Claude Code's settings files sit just below alcove's of the same kind
    // (their warnings are the session's: `claude_settings::warnings`).
    let mut ignored = Vec::new();
    let user = dirs.config.join("config.toml");
    if let Some((path, table)) = crate::claude_settings::user_table(&mut ignored) {
        layers.push(file_layer(LayerKind::User(path), table));
    }
    if let Some(table) = read_table(&user)? {
        layers.push(file_layer(LayerKind::User(user), table));
    }
    for (path, table) in crate::claude_settings::project_tables(workspace, &mut ignored) {
        layers.push(file_layer(LayerKind::Project(path), table));
    }
    let project = workspace.join(".alcove/config.toml");
    if let Some(table) = read_table(&project)? {
        layers.push(file_layer(LayerKind::Project(project), table));
    }
    layers.extend(environment);
    for item in overrides {
        layers.push(Layer {
            kind: LayerKind::Flag,
            source: format!("-c {item}"),
            table: parse_override(item)?,
        });
    }
    in_precedence(&mut layers);
    Ok(layers)
}

fn file_layer(kind: LayerKind, table: toml::Table) -> Layer {
    let whose = match kind {
        LayerKind::User(_) => "user",
        _ => "project",
    };
    let source = match kind.file() {
        Some(path) => format!("{whose} {}", path.display()),
        None => whose.to_owned(),
    };
    Layer {
        kind,
        source,
        table,
    }
}

/// Orders layers lowest first by [`LayerKind::rank`], keeping the order
/// of layers of one kind.
pub(crate) fn in_precedence(layers: &mut [Layer]) {
    layers.sort_by_key(|layer| layer.kind.rank());
}

/// The layers merged into one table, in the one precedence (later wins;
/// tables merge key by key, any other value replaces).
pub(crate) fn merged(layers: &[Layer]) -> toml::Table {
    let mut ordered: Vec<&Layer> = layers.iter().collect();
    ordered.sort_by_key(|layer| layer.kind.rank());
    let mut merged = toml::Table::new();
    for layer in ordered {
        merge(&mut merged, layer.table.clone());
    }
    merged
}

pub(crate) fn read_table(path: &Path) -> anyhow::Result<Option<toml::Table>> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(err).with_context(|| format!("cannot read {}", path.display())),
    };
    let table: toml::Table = text
        .parse()
        .map_err(|err| anyhow::anyhow!("{}: {err}", path.display()))?;
    Ok(Some(table))
}

/// `a.b=value`: the value is read as TOML when it parses as such, otherwise
/// as a plain string.
pub(crate) fn parse_override(item: &str) -> anyhow::Result<toml::Table> {
    let Some((key, raw)) = item.split_once('=') else {
        anyhow::bail!("-c expects key=value, got `{item}`");
    };
    let value = format!("v = {raw}")
        .parse::<toml::Table>()
        .ok()
        .and_then(|mut table| table.remove("v"))
        .unwrap_or_else(|| toml::Value::String(raw.to_owned()));
    let mut table = toml::Table::new();
    let parts: Vec<&str> = key.trim().split('.').collect();
    if parts.iter().any(|part| part.is_empty()) {
        anyhow::bail!("-c key `{key}` is not a dotted key");
    }
    let mut cursor = &mut table;
    for part in &parts[..parts.len() - 1] {
        cursor = match cursor
            .entry(part.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()))
        {
            toml::Value::Table(inner) => inner,
            _ => anyhow::bail!("-c key `{key}` is not a dotted key"),
        };
    }
    cursor.insert(parts[parts.len() - 1].to_owned(), value);
    Ok(table)
}

fn merge(base: &mut toml::Table, layer: toml::Table) {
    for (key, value) in layer {
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(existing)), toml::Value::Table(incoming)) => {
                merge(existing, incoming)
            }
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_precedence_user_project_environment_flags() {
        let dir = tempfile::tempdir().unwrap();
        let dirs = Dirs {
            config: dir.path().join("home"),
            data: dir.path().join("home"),
        };
        let workspace = dir.path().join("ws");
        std::fs::create_dir_all(workspace.join(".alcove")).unwrap();
        std::fs::create_dir_all(&dirs.config).unwrap();
        std::fs::write(
            dirs.config.join("config.toml"),
            "model = \"anthropic/a\"\nmax_turns = 7\n[providers.local]\nkind = \"openai\"\nbase_url = \"http://x/v1\"\n",
        )
        .unwrap();
        std::fs::write(
            workspace.join(".alcove/config.toml"),
            "model = \"openai/b\"\n[agents]\nmax_depth = 2\n",
        )
        .unwrap();
        let environment = vec![Layer {
            kind: LayerKind::Env,
            source: "env ALCOVE_X".to_owned(),
            table: "max_turns = 8\n[agents]\nmax_concurrent = 5\n"
                .parse()
                .unwrap(),
        }];
        let mut layers =
            layers(&dirs, &workspace, &["max_turns=9".to_owned()], environment).unwrap();
        let kinds: Vec<u8> = layers.iter().map(|layer| layer.kind.rank()).collect();
        assert_eq!(kinds, [0, 1, 2, 3]);
        // The order is the kinds', whatever order the layers come in.
        layers.reverse();
        let merged = merged(&layers);
        assert_eq!(merged["model"].as_str(), Some("openai/b"));
        assert_eq!(merged["max_turns"].as_integer(), Some(9));
        assert_eq!(merged["agents"]["max_depth"].as_integer(), Some(2));
        assert_eq!(merged["agents"]["max_concurrent"].as_integer(), Some(5));
        assert_eq!(
            merged["providers"]["local"]["base_url"].as_str(),
            Some("http://x/v1")
        );
    }

    #[test]
    fn a_broken_file_is_named_with_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let dirs = Dirs {
            config: dir.path().to_owned(),
            data: dir.path().to_owned(),
        };
        std::fs::write(
            dir.path().join("config.toml"),
            "model = \"a\"\nmax_turns = = 3\n",
        )
        .unwrap();
        let err = format!(
            "{:#}",
            layers(&dirs, dir.path(), &[], Vec::new()).unwrap_err()
        );
        assert!(
            err.contains("config.toml") && err.contains("line 2"),
            "{err}"
        );
    }

    #[test]
    fn overrides_take_toml_values_or_plain_strings() {
        assert_eq!(
            parse_override("a.b=3").unwrap()["a"]["b"].as_integer(),
            Some(3)
        );
        assert_eq!(
            parse_override("model=openai/x").unwrap()["model"].as_str(),
            Some("openai/x")
        );
        assert!(parse_override("novalue").is_err());
    }
}
