//! Which MCP servers a session has: alcove's TOML `[mcp_servers.<name>]`
//! (Codex's shape) and the workspace's `.mcp.json` / `.alcove/mcp.json`
//! (Claude Code's shape), layered like the rest of the config.
//!
//! Layers, later wins per server name: user `config.toml` < `.mcp.json` <
//! `.alcove/mcp.json` < project `.alcove/config.toml` < `-c
//! mcp_servers.<name>.<key>=…`. A TOML layer's keys merge into the server
//! an earlier layer defined (so `-c mcp_servers.fs.enabled=false` turns one
//! off); a JSON file's entry replaces it. A server whose entry is invalid is
//! a warning, never the session's end. The workspace's own files count
//! only in a trusted folder (`trust.rs`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use alcove_mcp::{ServerConfig, ServerEntry};
use serde_json::{Map, Value};

/// One layer's view of the servers.
struct Found {
    source: String,
    entry: Map<String, Value>,
}

/// The configured servers (disabled ones included) and a warning per
/// entry that could not be used, from the layers as the folder's trust
/// left them; the workspace's JSON files are read only from `files_root`
/// (a trusted folder).
pub(crate) fn configs_from(
    layers: Vec<crate::config::Layer>,
    files_root: Option<&Path>,
) -> (Vec<ServerConfig>, Vec<String>) {
    let mut warnings = Vec::new();
    let mut found: BTreeMap<String, Result<Found, String>> = BTreeMap::new();
    let (lower, upper): (Vec<_>, Vec<_>) = layers
        .into_iter()
        .partition(|layer| matches!(layer.kind, crate::config::LayerKind::User(_)));
    for layer in &lower {
        merge_toml(&mut found, &layer.source, &layer.table);
    }
    for path in files_root.map(json_files).into_iter().flatten() {
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => continue,
            Err(err) => {
                warnings.push(format!("cannot read {}: {err}", path.display()));
                continue;
            }
        };
        let source = format!("project {}", path.display());
        let lookup = |name: &str| std::env::var(name).ok();
        match alcove_mcp::config::parse_mcp_json(&text, &lookup) {
            Ok(servers) => {
                for (name, entry) in servers {
                    let entry = entry.and_then(|value| match value {
                        Value::Object(entry) => Ok(Found {
                            source: source.clone(),
                            entry,
                        }),
                        _ => Err("the entry must be an object".to_owned()),
                    });
                    found.insert(name, entry.map_err(|err| format!("{source}: {err}")));
                }
            }
            Err(err) => warnings.push(format!(
                "{}: {err}; its servers are ignored",
                path.display()
            )),
        }
    }
    for layer in &upper {
        merge_toml(&mut found, &layer.source, &layer.table);
    }
    let mut servers = Vec::new();
    for (name, found) in found {
        let config = found.and_then(|found| {
            ServerEntry::from_value(Value::Object(found.entry))
                .and_then(|entry| entry.into_config(&name, &found.source))
                .map_err(|err| format!("{}: {err}", found.source))
        });
        match config {
            Ok(config) => servers.push(config),
            Err(err) => warnings.push(format!("MCP server `{name}` is ignored: {err}")),
        }
    }
    (servers, warnings)
}

/// `.mcp.json` and `.alcove/mcp.json`, lowest first.
pub(crate) fn json_files(workspace: &Path) -> [PathBuf; 2] {
    [
        workspace.join(".mcp.json"),
        workspace.join(".alcove/mcp.json"),
    ]
}

fn merge_toml(
    found: &mut BTreeMap<String, Result<Found, String>>,
    source: &str,
    table: &toml::Table,
) {
    let Some(servers) = table.get("mcp_servers") else {
        return;
    };
    let Some(servers) = servers.as_table() else {
        found.insert(
            "mcp_servers".to_owned(),
            Err(format!("{source}: `mcp_servers` must be a table")),
        );
        return;
    };
    for (name, value) in servers {
        let entry = match serde_json::to_value(value) {
            Ok(Value::Object(entry)) => entry,
            _ => {
                found.insert(
                    name.clone(),
                    Err(format!("{source}: `mcp_servers.{name}` must be a table")),
                );
                continue;
            }
        };
        match found.get_mut(name) {
            Some(Ok(existing)) => {
                existing.entry.extend(entry);
                existing.source = source.to_owned();
            }
            _ => {
                found.insert(
                    name.clone(),
                    Ok(Found {
                        source: source.to_owned(),
                        entry,
                    }),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Dirs;

    #[test]
    fn layers_merge_toml_and_replace_with_json() {
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
            "[mcp_servers.a]\ncommand = \"user-a\"\n[mcp_servers.b]\ncommand = \"user-b\"\ntool_timeout_sec = 5\n",
        )
        .unwrap();
        std::fs::write(
            workspace.join(".mcp.json"),
            r#"{"mcpServers": {"a": {"command": "json-a", "args": ["${ALCOVE_TEST_UNSET_VAR:-x}"]}, "c": {"type": "http", "url": "http://127.0.0.1:9/mcp"}}}"#,
        )
        .unwrap();
        std::fs::write(
            workspace.join(".alcove/config.toml"),
            "[mcp_servers.b]\nenabled = false\n[mcp_servers.d]\nargs = [\"no command\"]\n",
        )
        .unwrap();
        let layers = crate::config::layers(
            &dirs,
            &workspace,
            &["mcp_servers.c.enabled=false".to_owned()],
            Vec::new(),
        )
        .unwrap();
        let (servers, warnings) = configs_from(layers, Some(&workspace));
        let by_name: BTreeMap<_, _> = servers
            .iter()
            .map(|server| (server.name.as_str(), server))
            .collect();
        assert!(
            by_name["a"].source.ends_with(".mcp.json"),
            "{:?}",
            by_name["a"]
        );
        assert!(
            matches!(&by_name["a"].transport, alcove_mcp::Transport::Stdio { command, args, .. } if command == "json-a" && args == &["x"])
        );
        assert!(!by_name["b"].enabled);
        assert_eq!(by_name["b"].tool_timeout, std::time::Duration::from_secs(5));
        assert!(!by_name["c"].enabled);
        assert!(!by_name.contains_key("d"));
        assert!(
            warnings.iter().any(|warning| warning.contains("`d`")),
            "{warnings:?}"
        );
    }
}
