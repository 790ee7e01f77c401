//! `alcove trust [PATH]`: records in the user's own `config.toml` that a
//! folder (and every folder inside it) is trusted, as Codex records it:
//!
//! ```toml
//! [projects."/home/me/src/app"]
//! trust = "trusted"
//! ```
//!
//! The record is appended, so the rest of the file (comments included)
//! stays as it was; only when the file already has a table of that folder
//! is it written again whole. `--list` prints the records, `--revoke`
//! removes one.

use std::path::{Path, PathBuf};

use clap::Args;

use crate::config::{self, Dirs};
use crate::{CommonArgs, UsageError};

/// `alcove trust` arguments.
#[derive(Debug, Args)]
pub(crate) struct TrustArgs {
    /// The folder (default: the workspace, `--cd` or the current folder).
    path: Option<PathBuf>,
    /// Print the folders the user's config records, trusted or not.
    #[arg(long, conflicts_with_all = ["path", "revoke"])]
    list: bool,
    /// Remove the folder's record instead (it is untrusted again).
    #[arg(long)]
    revoke: bool,
}

pub(crate) fn run(common: &CommonArgs, args: &TrustArgs) -> anyhow::Result<u8> {
    let dirs = Dirs::from_env().map_err(|err| UsageError(format!("{err:#}")))?;
    if args.list {
        let file = dirs.config.join("config.toml");
        let table = config::read_table(&file)
            .map_err(|err| UsageError(format!("{err:#}")))?
            .unwrap_or_default();
        for (folder, trusted) in crate::trust::records(&table) {
            let level = if trusted { "trusted" } else { "untrusted" };
            println!("{level}\t{}", folder.display());
        }
        return Ok(0);
    }
    let folder = match &args.path {
        Some(path) => path
            .canonicalize()
            .map_err(|err| UsageError(format!("{}: {err}", path.display())))?,
        None => common.workspace()?.root().to_owned(),
    };
    let file = dirs.config.join("config.toml");
    let changed = update(
        &dirs,
        &folder,
        if args.revoke {
            Level::None
        } else {
            Level::Trusted
        },
    )?;
    if args.revoke
        && let Some(parent) = trusted_through(&dirs, &folder)?
    {
        // Removing its own record would leave it trusted through the
        // folder above; the nearest record decides, so say "untrusted".
        update(&dirs, &folder, Level::Untrusted)?;
        println!(
            "{} was trusted through {}: recorded as untrusted ({}); {} stays trusted",
            folder.display(),
            parent.display(),
            file.display(),
            parent.display()
        );
        return Ok(0);
    }
    match (changed, args.revoke) {
        (true, true) => println!(
            "{} is no longer trusted ({})",
            folder.display(),
            file.display()
        ),
        (true, false) => println!(
            "{} is trusted: its own settings apply ({})",
            folder.display(),
            file.display()
        ),
        (false, true) => println!("{} had no trust record", folder.display()),
        (false, false) => println!("{} is already trusted", folder.display()),
    }
    Ok(0)
}

/// What `update` records for a folder.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Level {
    Trusted,
    Untrusted,
    /// No record of its own.
    None,
}

impl Level {
    fn word(self) -> &'static str {
        match self {
            Level::Trusted => "trusted",
            Level::Untrusted | Level::None => "untrusted",
        }
    }
}

/// The nearest folder above `folder` whose record trusts it, when no
/// record of `folder`'s own says otherwise.
fn trusted_through(dirs: &Dirs, folder: &Path) -> anyhow::Result<Option<std::path::PathBuf>> {
    let table = config::read_table(&dirs.config.join("config.toml"))
        .map_err(|err| UsageError(format!("{err:#}")))?
        .unwrap_or_default();
    let nearest = crate::trust::records(&table)
        .into_iter()
        .filter(|(recorded, _)| folder.starts_with(recorded))
        .max_by_key(|(recorded, _)| recorded.components().count());
    Ok(match nearest {
        Some((recorded, true)) if recorded != folder => Some(recorded),
        _ => None,
    })
}

/// Records `folder` (canonical) at `level` in the user's config
/// (`Level::None` removes its record); whether the file changed.
pub(crate) fn update(dirs: &Dirs, folder: &Path, level: Level) -> anyhow::Result<bool> {
    let file = dirs.config.join("config.toml");
    let table = config::read_table(&file)
        .map_err(|err| UsageError(format!("{err:#}")))?
        .unwrap_or_default();
    let key = folder
        .to_str()
        .ok_or_else(|| UsageError(format!("{} is not UTF-8", folder.display())))?;
    let text = match std::fs::read_to_string(&file) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(err) => return Err(UsageError(format!("{}: {err}", file.display())).into()),
    };
    let updated = match level {
        Level::None => revoked(&text, &table, key),
        level => recorded_as(&text, &table, key, level.word()),
    }
    .map_err(|err| UsageError(format!("cannot rewrite {}: {err}", file.display())))?;
    match updated {
        Some(updated) => {
            write(&file, &updated)?;
            Ok(true)
        }
        None => Ok(false),
    }
}

/// The `[projects."<key>"]` header, the key quoted as TOML quotes it.
fn header(key: &str) -> String {
    format!("[projects.{}]", toml::Value::String(key.to_owned()))
}

/// The file with `key` recorded at `level` ("trusted" or "untrusted"), or
/// `None` when it already is.
fn recorded_as(
    text: &str,
    table: &toml::Table,
    key: &str,
    level: &str,
) -> Result<Option<String>, toml::ser::Error> {
    let existing = table.get("projects").and_then(|projects| projects.get(key));
    if existing
        .and_then(|entry| entry.get("trust"))
        .and_then(toml::Value::as_str)
        == Some(level)
    {
        return Ok(None);
    }
    if existing.is_none() {
        let mut appended = text.to_owned();
        if !appended.is_empty() && !appended.ends_with('\n') {
            appended.push('\n');
        }
        if !appended.is_empty() {
            appended.push('\n');
        }
        appended.push_str(&format!("{}\ntrust = \"{level}\"\n", header(key)));
        // Appending a table is safe unless `projects` was written inline.
        if appended.parse::<toml::Table>().is_ok() {
            return Ok(Some(appended));
        }
    }
    let mut table = table.clone();
    let projects = table
        .entry("projects")
        .or_insert_with(|| toml::Value::Table(toml::Table::new()));
    if !projects.is_table() {
        *projects = toml::Value::Table(toml::Table::new());
    }
    let Some(projects) = projects.as_table_mut() else {
        return Ok(None);
    };
    let entry = projects
        .entry(key.to_owned())
        .or_insert_with(|| toml::Value::Table(toml::Table::new()));
    if let toml::Value::Table(entry) = entry {
        entry.insert("trust".to_owned(), level.into());
        entry.remove("trust_level");
    }
    toml::to_string(&table).map(Some)
}

/// The file without `key`'s record, or `None` when it has none.
fn revoked(text: &str, table: &toml::Table, key: &str) -> Result<Option<String>, toml::ser::Error> {
    if table
        .get("projects")
        .and_then(|projects| projects.get(key))
        .is_none()
    {
        return Ok(None);
    }
    // The two lines `alcove trust` appends, removed as they were written.
    let blocks =
        ["trusted", "untrusted"].map(|level| format!("{}\ntrust = \"{level}\"\n", header(key)));
    if let Some((at, block)) = blocks
        .iter()
        .find_map(|block| text.find(block.as_str()).map(|at| (at, block)))
    {
        let mut without = text.to_owned();
        without.replace_range(at..at + block.len(), "");
        let still = without
            .parse::<toml::Table>()
            .ok()
            .is_some_and(|parsed| parsed.get("projects").and_then(|p| p.get(key)).is_none());
        if still {
            return Ok(Some(without));
        }
    }
    let mut table = table.clone();
    if let Some(toml::Value::Table(projects)) = table.get_mut("projects") {
        projects.remove(key);
    }
    toml::to_string(&table).map(Some)
}

/// Writes the file, creating its folder.
fn write(file: &Path, text: &str) -> anyhow::Result<()> {
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|err| UsageError(format!("cannot create {}: {err}", dir.display())))?;
    }
    std::fs::write(file, text)
        .map_err(|err| UsageError(format!("cannot write {}: {err}", file.display())).into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_appended_and_removed_keeping_the_rest() {
        let text = "# my settings\nmodel = \"a/b\" # mine\n";
        let table: toml::Table = text.parse().unwrap();
        let key = "/home/u/src/\"odd\" app";
        let added = recorded_as(text, &table, key, "trusted").unwrap().unwrap();
        assert!(added.starts_with(text), "{added}");
        let parsed: toml::Table = added.parse().unwrap();
        assert_eq!(parsed["projects"][key]["trust"].as_str(), Some("trusted"));
        assert_eq!(recorded_as(&added, &parsed, key, "trusted").unwrap(), None);
        let removed = revoked(&added, &parsed, key).unwrap().unwrap();
        assert_eq!(removed.trim_end(), text.trim_end());
        assert_eq!(revoked(text, &table, key).unwrap(), None);
    }

    #[test]
    fn an_existing_table_of_the_folder_is_rewritten() {
        let text = "[projects.\"/w\"]\ntrust = \"untrusted\"\nnote = 1\n";
        let table: toml::Table = text.parse().unwrap();
        let added: toml::Table = recorded_as(text, &table, "/w", "trusted")
            .unwrap()
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(added["projects"]["/w"]["trust"].as_str(), Some("trusted"));
        assert_eq!(added["projects"]["/w"]["note"].as_integer(), Some(1));
    }
}
