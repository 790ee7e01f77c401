//! Config keys alcove does not know, and values of the wrong type, found
//! in every config file and `-c` flag with their file and line.
//!
//! The known keys come from the settings types themselves
//! ([`alcove_core::known_keys`]), so a new field is known the moment it is
//! added. An unknown key is a warning naming the nearest known one
//! (`max_turn` → `max_turns`); a value of the wrong type is an error.
//! Sessions print the warnings at start-up; `alcove config check` prints
//! every finding, agent definitions' and skills' front matter included,
//! and exits 1 when there is any but a key read under its old name.

use std::path::{Path, PathBuf};

use alcove_core::known_keys::KeyTree;
use serde::Deserialize;

use crate::config::{self, Dirs};
use crate::settings::{self, Config};

/// One thing wrong with the configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Finding {
    /// `/path/config.toml:3` or `-c max_turn=3`.
    pub(crate) place: String,
    /// What is wrong, and what to write instead.
    pub(crate) message: String,
    /// A wrong type (the session does not start), not an ignored key.
    pub(crate) error: bool,
    /// A key still read under its old name: said, but no reason for
    /// `alcove config check` to fail (the key works).
    pub(crate) deprecated: bool,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = if self.error { "error" } else { "warning" };
        write!(f, "{}: {kind}: {}", self.place, self.message)
    }
}

/// Every key a config layer may set (`settings::known_keys`).
pub(crate) fn known_keys() -> KeyTree {
    settings::known_keys()
}

/// The warning for a key still read under its old name, if `path` is one.
fn deprecated(place: String, path: &[String]) -> Option<Finding> {
    let dotted = path.join(".");
    let old = settings::deprecated().find(|key| key.old == dotted)?;
    Some(Finding {
        place,
        message: format!(
            "`{}` is deprecated and still read: write `{}` ({})",
            old.old, old.new, old.why
        ),
        error: false,
        deprecated: true,
    })
}

/// The config files of a workspace, lowest first (as `config::load` reads them).
fn files(dirs: &Dirs, workspace: &Path) -> [PathBuf; 2] {
    [
        dirs.config.join("config.toml"),
        workspace.join(".alcove/config.toml"),
    ]
}

/// Every unknown key and wrong type in the config files and `-c` flags.
/// A file that cannot be read or parsed is left to `config::load`, which
/// reports it.
pub(crate) fn check(dirs: &Dirs, workspace: &Path, overrides: &[String]) -> Vec<Finding> {
    findings(dirs, workspace, overrides, true)
}

/// The unknown keys a session warns about, computed on a thread of their
/// own so that start-up does not wait for them (`config::load` has already
/// refused wrong types).
pub(crate) fn session_warnings(
    dirs: &Dirs,
    workspace: &Path,
    overrides: &[String],
) -> std::thread::JoinHandle<Vec<String>> {
    let (dirs, workspace, overrides) = (dirs.clone(), workspace.to_owned(), overrides.to_vec());
    std::thread::spawn(move || {
        findings(&dirs, &workspace, &overrides, false)
            .into_iter()
            .map(|finding| format!("{}: {}", finding.place, finding.message))
            .collect()
    })
}

fn findings(dirs: &Dirs, workspace: &Path, overrides: &[String], with_types: bool) -> Vec<Finding> {
    let tree = known_keys();
    let mut findings = Vec::new();
    for path in files(dirs, workspace) {
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        findings.extend(check_file(&tree, &path, &text, with_types));
    }
    for item in overrides {
        let Ok(table) = config::parse_override(item) else {
            continue;
        };
        let place = format!("-c {item}");
        let mut path = Vec::new();
        walk_table(&tree, &table, &mut path, &mut |key, _| {
            findings.push(unknown(place.clone(), &key));
        });
        for key in leaves(&table) {
            findings.extend(deprecated(place.clone(), &key));
        }
        if !with_types {
            continue;
        }
        if let Err(err) = Config::deserialize(toml::Value::Table(table)) {
            findings.push(Finding {
                place,
                message: err.message().to_owned(),
                error: true,
                deprecated: false,
            });
        }
    }
    findings
}

/// The findings of one file's text.
fn check_file(tree: &KeyTree, path: &Path, text: &str, with_types: bool) -> Vec<Finding> {
    let mut findings = Vec::new();
    let Ok(document) = toml::de::DeTable::parse(text) else {
        return findings;
    };
    let line = |offset: usize| text[..offset.min(text.len())].matches('\n').count() + 1;
    let mut unknown_keys = Vec::new();
    walk_spanned(
        tree,
        document.get_ref(),
        &mut Vec::new(),
        &mut |key, offset| {
            unknown_keys.push((offset, key));
        },
    );
    let mut old_keys = Vec::new();
    spanned_keys(document.get_ref(), &mut Vec::new(), &mut |key, offset| {
        old_keys.push((offset, key));
    });
    let mut found: Vec<(usize, Finding)> = unknown_keys
        .into_iter()
        .map(|(offset, key)| {
            let place = format!("{}:{}", path.display(), line(offset));
            (offset, unknown(place, &key))
        })
        .collect();
    found.extend(old_keys.into_iter().filter_map(|(offset, key)| {
        let place = format!("{}:{}", path.display(), line(offset));
        Some((offset, deprecated(place, &key)?))
    }));
    found.sort_by_key(|(offset, _)| *offset);
    findings.extend(found.into_iter().map(|(_, finding)| finding));
    if !with_types {
        return findings;
    }
    if let Err(err) = toml::from_str::<Config>(text) {
        let place = match err.span() {
            Some(span) => format!("{}:{}", path.display(), line(span.start)),
            None => path.display().to_string(),
        };
        findings.push(Finding {
            place,
            message: err.message().to_owned(),
            error: true,
            deprecated: false,
        });
    }
    findings
}

fn unknown(place: String, key: &alcove_core::known_keys::UnknownKey) -> Finding {
    let hint = key
        .suggestion
        .as_deref()
        .map(|known| format!("; did you mean `{}`?", name_placeholders(known)))
        .unwrap_or_default();
    Finding {
        place,
        message: format!("unknown key `{}` is ignored{hint}", key.path),
        error: false,
        deprecated: false,
    }
}

/// `model_options.<name>.thinking` → `model_options.<provider>.thinking`:
/// what the free key of each table stands for.
fn name_placeholders(path: &str) -> String {
    let mut out = Vec::new();
    let mut previous = "";
    for part in path.split('.') {
        out.push(if part == "<name>" {
            match previous {
                "model_options" | "providers" => "<provider>",
                "pricing" | "context_windows" => "<provider/model>",
                "model_aliases" => "<alias>",
                "mcp_servers" => "<server>",
                _ => "<name>",
            }
        } else {
            part
        });
        previous = part;
    }
    out.join(".")
}

/// Calls `found` with each unknown key of a parsed file and its offset.
fn walk_spanned(
    tree: &KeyTree,
    table: &toml::de::DeTable<'_>,
    path: &mut Vec<String>,
    found: &mut dyn FnMut(alcove_core::known_keys::UnknownKey, usize),
) {
    for (key, value) in table {
        path.push(key.get_ref().to_string());
        let parts: Vec<&str> = path.iter().map(String::as_str).collect();
        match tree.check(&parts) {
            Some(unknown) => found(unknown, key.span().start),
            None => {
                if let toml::de::DeValue::Table(inner) = value.get_ref() {
                    walk_spanned(tree, inner, path, found);
                }
            }
        }
        path.pop();
    }
}

/// Calls `found` with every key of a parsed file (dotted path) and its offset.
fn spanned_keys(
    table: &toml::de::DeTable<'_>,
    path: &mut Vec<String>,
    found: &mut dyn FnMut(Vec<String>, usize),
) {
    for (key, value) in table {
        path.push(key.get_ref().to_string());
        found(path.clone(), key.span().start);
        if let toml::de::DeValue::Table(inner) = value.get_ref() {
            spanned_keys(inner, path, found);
        }
        path.pop();
    }
}

/// The keys of `table` read under an old name (`config show` notes them).
pub(crate) fn deprecated_in(table: &toml::Table) -> Vec<&'static settings::Deprecated> {
    settings::old_keys_in(table).collect()
}

/// Every key of a table (a `-c` flag's), as paths.
fn leaves(table: &toml::Table) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut stack = vec![(Vec::new(), table)];
    while let Some((prefix, table)) = stack.pop() {
        for (key, value) in table {
            let mut path: Vec<String> = prefix.clone();
            path.push(key.clone());
            if let toml::Value::Table(inner) = value {
                stack.push((path.clone(), inner));
            }
            out.push(path);
        }
    }
    out
}

/// Calls `found` with each unknown key of a table (a `-c` flag's) and its path.
fn walk_table(
    tree: &KeyTree,
    table: &toml::Table,
    path: &mut Vec<String>,
    found: &mut dyn FnMut(alcove_core::known_keys::UnknownKey, &[String]),
) {
    for (key, value) in table {
        path.push(key.clone());
        let parts: Vec<&str> = path.iter().map(String::as_str).collect();
        match tree.check(&parts) {
            Some(unknown) => found(unknown, path),
            None => {
                if let toml::Value::Table(inner) = value {
                    walk_table(tree, inner, path, found);
                }
            }
        }
        path.pop();
    }
}

/// The paths of `table`'s unknown keys (`config show` leaves them out of
/// the settings it lists).
pub(crate) fn unknown_paths(tree: &KeyTree, table: &toml::Table) -> Vec<Vec<String>> {
    let mut keys = Vec::new();
    walk_table(tree, table, &mut Vec::new(), &mut |_, path| {
        keys.push(path.to_vec())
    });
    keys
}

/// `alcove config check`: every finding of the config layers and of the
/// agent definitions' and skills' front matter, as the text to print, and
/// the exit status: 1 when there is any but a key still read under its old
/// name (a lint step must not break on an upgrade for a key that works).
pub(crate) fn run(dirs: &Dirs, workspace: &Path, overrides: &[String]) -> (String, u8) {
    let findings = check(dirs, workspace, overrides);
    let only_deprecated = findings.iter().all(|finding| finding.deprecated);
    let mut lines: Vec<String> = findings.iter().map(ToString::to_string).collect();
    let (_, definition_warnings) = crate::agents_cmd::load(dirs, workspace);
    let (_, _, skill_warnings) = crate::skills_cmd::load(dirs, workspace);
    let front_matter = definition_warnings.len() + skill_warnings.len();
    lines.extend(
        definition_warnings
            .into_iter()
            .chain(skill_warnings)
            .map(|warning| format!("warning: {warning}")),
    );
    if lines.is_empty() {
        return (
            "alcove: the configuration has no unknown keys or wrong values\n".to_owned(),
            0,
        );
    }
    let mut text = lines.join("\n");
    text.push('\n');
    let status = if only_deprecated && front_matter == 0 {
        0
    } else {
        1
    };
    (text, status)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(text: &str) -> Vec<String> {
        check_file(&known_keys(), Path::new("/u/config.toml"), text, true)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn typos_are_named_with_their_line_and_the_nearest_key() {
        let found = messages(
            "model = \"openai/x\"\nmax_turn = 20\n[agents]\nmax_depht = 2\n[sandbox]\nmode = \"off\"\n[mcp_servers.x]\ncommand = \"y\"\n",
        );
        assert_eq!(
            found,
            [
                "/u/config.toml:2: warning: unknown key `max_turn` is ignored; did you mean `max_turns`?",
                "/u/config.toml:4: warning: unknown key `agents.max_depht` is ignored; did you mean `agents.max_depth`?",
            ]
        );
        let found = messages("thinking = 4000\npermision_mode = \"plan\"\n");
        assert!(
            found[0].contains("`model_options.<provider>.thinking`"),
            "{found:?}"
        );
        assert!(found[1].contains("`permission_mode`"), "{found:?}");
    }

    #[test]
    fn an_old_name_is_a_warning_naming_the_new_one() {
        let found = messages("[agents]\nmax_depth = 2\nmax_tokens = 300\n");
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].starts_with("/u/config.toml:3: warning: `agents.max_tokens` is deprecated")
                && found[0].contains("`agents.token_budget`"),
            "{found:?}"
        );
        let flags = findings(
            &Dirs {
                config: "/nonexistent-u".into(),
                data: "/nonexistent-u".into(),
            },
            Path::new("/nonexistent-w"),
            &[
                "agents.max_tokens=300".to_owned(),
                "max_tokens=300".to_owned(),
            ],
            true,
        );
        assert_eq!(flags.len(), 1, "{flags:?}");
        assert_eq!(flags[0].place, "-c agents.max_tokens=300");
    }

    #[test]
    fn a_wrong_type_is_an_error_with_its_line() {
        let found = messages("model = \"a\"\n\nmax_turns = \"many\"\n");
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].starts_with("/u/config.toml:3: error:"),
            "{found:?}"
        );
    }

    #[test]
    fn every_section_of_the_config_is_known() {
        let text = "[model_options.\"openai/gpt-5\"]\nthinking = 2000\n[pricing.\"openai/gpt-4.1\"]\ninput = 1.0\n[hooks]\nmax_stop_continuations = 2\n[[hooks.PreToolUse]]\nmatcher = \"Bash\"\n[limits]\ncpu_secs = 3\n[providers.local]\nkind = \"openai\"\nbase_url = \"http://x\"\n[permissions]\ndeny = [\"Bash\"]\n[env]\nkeep = []\n";
        assert_eq!(messages(text), Vec::<String>::new());
    }
}
