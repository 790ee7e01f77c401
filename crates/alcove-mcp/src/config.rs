//! What a server is: the settings alcove reads from its TOML
//! `[mcp_servers.<name>]` tables (Codex's shape) and from `.mcp.json` files
//! (Claude Code's shape), turned into one [`ServerConfig`] per server.
//!
//! Claude Code's `${VAR}` and `${VAR:-default}` expansion applies to the
//! JSON files' strings, as it does there; TOML values are taken literally
//! (secrets come from `env` and `bearer_token_env`, as in Codex).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Map, Value};

/// How long a server may take to start and list its tools, unless its
/// config says otherwise.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one tool call may take, unless the server's config says otherwise.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(60);

/// One server, ready to start.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// The name in `mcp__<name>__<tool>`.
    pub name: String,
    /// How to reach it.
    pub transport: Transport,
    /// `false` keeps it configured but not started.
    pub enabled: bool,
    /// When set, only these tools are offered.
    pub enabled_tools: Option<Vec<String>>,
    /// Tools never offered.
    pub disabled_tools: Vec<String>,
    /// How long starting (connect, initialize, tools/list) may take.
    pub startup_timeout: Duration,
    /// How long one tool call may take.
    pub tool_timeout: Duration,
    /// Where it was configured (`project /ws/.mcp.json`, …).
    pub source: String,
}

/// How alcove talks to a server.
#[derive(Debug, Clone, PartialEq)]
pub enum Transport {
    /// A child process speaking JSON-RPC on stdin/stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables added to its environment.
        env: BTreeMap<String, String>,
        /// Its working directory (the workspace when unset).
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP.
    Http {
        /// The endpoint, e.g. `http://127.0.0.1:3001/mcp`.
        url: String,
        /// Extra request headers.
        headers: BTreeMap<String, String>,
        /// The environment variable holding a bearer token.
        bearer_token_env: Option<String>,
    },
}

/// A `[mcp_servers.<name>]` table, or a `.mcp.json` entry after conversion.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerEntry {
    /// Claude Code's `type`: `stdio` or `http` (`sse` is not supported).
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// The program of a stdio server.
    pub command: Option<String>,
    /// Its arguments.
    pub args: Vec<String>,
    /// Its extra environment.
    pub env: BTreeMap<String, String>,
    /// Its working directory.
    pub cwd: Option<PathBuf>,
    /// The endpoint of a streamable HTTP server.
    pub url: Option<String>,
    /// HTTP headers (`http_headers` is Codex's name).
    #[serde(alias = "http_headers")]
    pub headers: BTreeMap<String, String>,
    /// The variable holding a bearer token (`bearer_token_env_var` is Codex's name).
    #[serde(alias = "bearer_token_env_var")]
    pub bearer_token_env: Option<String>,
    /// Only these tools are offered.
    pub enabled_tools: Option<Vec<String>>,
    /// These tools are not offered.
    pub disabled_tools: Vec<String>,
    /// Seconds starting may take.
    pub startup_timeout_sec: Option<f64>,
    /// Codex's older spelling of the same, in milliseconds.
    pub startup_timeout_ms: Option<u64>,
    /// Codex: variables passed through to the server. alcove passes its whole
    /// environment to stdio servers, so these are accepted and need nothing.
    pub env_vars: Vec<String>,
    /// Seconds one call may take.
    pub tool_timeout_sec: Option<f64>,
    /// `false` keeps the server configured but stopped.
    pub enabled: Option<bool>,
}

impl ServerEntry {
    /// Reads one entry; the error names the field.
    pub fn from_value(value: Value) -> Result<ServerEntry, String> {
        serde_json::from_value(value).map_err(|err| err.to_string())
    }

    /// The server this entry describes.
    pub fn into_config(self, name: &str, source: &str) -> Result<ServerConfig, String> {
        if !valid_server_name(name) {
            return Err(format!(
                "server name `{name}` may only use letters, digits, `-` and `_`"
            ));
        }
        let transport = match (self.kind.as_deref(), self.command, self.url) {
            (Some("sse"), _, _) => {
                return Err("`type: sse` (the 2024 HTTP+SSE transport) is not supported; use streamable HTTP (`type: http`)".to_owned());
            }
            (Some(kind), _, _) if !matches!(kind, "stdio" | "http" | "streamable-http") => {
                return Err(format!("unknown type `{kind}`; use stdio or http"));
            }
            (_, Some(_), Some(_)) => {
                return Err("give either `command` (stdio) or `url` (HTTP), not both".to_owned());
            }
            (_, Some(command), None) => Transport::Stdio {
                command,
                args: self.args,
                env: self.env,
                cwd: self.cwd,
            },
            (_, None, Some(url)) => Transport::Http {
                url,
                headers: self.headers,
                bearer_token_env: self.bearer_token_env,
            },
            (_, None, None) => return Err("needs `command` (stdio) or `url` (HTTP)".to_owned()),
        };
        let seconds = |value: Option<f64>, default: Duration| {
            value
                .and_then(|secs| Duration::try_from_secs_f64(secs).ok())
                .filter(|duration| !duration.is_zero())
                .unwrap_or(default)
        };
        Ok(ServerConfig {
            name: name.to_owned(),
            transport,
            enabled: self.enabled.unwrap_or(true),
            enabled_tools: self.enabled_tools,
            disabled_tools: self.disabled_tools,
            startup_timeout: seconds(
                self.startup_timeout_sec
                    .or(self.startup_timeout_ms.map(|ms| ms as f64 / 1000.0)),
                DEFAULT_STARTUP_TIMEOUT,
            ),
            tool_timeout: seconds(self.tool_timeout_sec, DEFAULT_TOOL_TIMEOUT),
            source: source.to_owned(),
        })
    }
}

impl ServerConfig {
    /// Whether the config lets the model see tool `tool`.
    pub fn offers(&self, tool: &str) -> bool {
        self.enabled_tools
            .as_ref()
            .is_none_or(|tools| tools.iter().any(|name| name == tool))
            && !self.disabled_tools.iter().any(|name| name == tool)
    }
}

/// Whether `name` can be a server name (it becomes part of tool names).
pub fn valid_server_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// One `.mcp.json` server entry after expansion, or why it cannot be used.
pub type JsonEntry = Result<Value, String>;

/// The servers of a `.mcp.json` file (`{"mcpServers": {name: {...}}}`), as
/// entries in alcove's shape, with `${VAR}` expanded through `lookup`. A
/// server whose entry is bad is returned as an error next to the others.
pub fn parse_mcp_json(
    text: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<(String, JsonEntry)>, String> {
    let root: Value = serde_json::from_str(text).map_err(|err| err.to_string())?;
    let Some(servers) = root.get("mcpServers") else {
        return Ok(Vec::new());
    };
    let Value::Object(servers) = servers else {
        return Err("`mcpServers` must be an object".to_owned());
    };
    // By name, whether or not serde_json keeps the file's order (its
    // `preserve_order` feature, which a dependency of the binary turns on).
    let mut entries: Vec<(String, JsonEntry)> = servers
        .iter()
        .map(|(name, entry)| (name.clone(), expand_value(entry, lookup)))
        .collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(entries)
}

fn expand_value(value: &Value, lookup: &dyn Fn(&str) -> Option<String>) -> Result<Value, String> {
    Ok(match value {
        Value::String(text) => Value::String(expand(text, lookup)?),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| expand_value(item, lookup))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, item)| Ok((key.clone(), expand_value(item, lookup)?)))
                .collect::<Result<Map<_, _>, String>>()?,
        ),
        other => other.clone(),
    })
}

/// Claude Code's expansion: `${VAR}` is the variable's value, `${VAR:-text}`
/// falls back to `text`; a variable that is unset with no fallback is an error.
pub fn expand(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (inner, None),
        };
        match (lookup(name), default) {
            (Some(value), _) => out.push_str(&value),
            (None, Some(default)) => out.push_str(default),
            (None, None) => {
                return Err(format!("environment variable `{name}` is not set"));
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "HOME" => Some("/home/u".to_owned()),
            "TOKEN" => Some("s3cret".to_owned()),
            _ => None,
        }
    }

    #[test]
    fn expansion_follows_claude_code() {
        assert_eq!(expand("${HOME}/x", &env).unwrap(), "/home/u/x");
        assert_eq!(expand("a${MISSING:-d}b", &env).unwrap(), "adb");
        assert_eq!(expand("${TOKEN:-d}", &env).unwrap(), "s3cret");
        assert_eq!(expand("no vars $HOME", &env).unwrap(), "no vars $HOME");
        assert_eq!(expand("open ${HOME", &env).unwrap(), "open ${HOME");
        assert!(expand("${MISSING}", &env).unwrap_err().contains("MISSING"));
    }

    #[test]
    fn mcp_json_entries_become_servers() {
        let text = r#"{"mcpServers": {
            "fs": {"command": "node", "args": ["${HOME}/fs.js"], "env": {"T": "${TOKEN}"}},
            "web": {"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
            "bad": {"command": "x", "args": ["${NOPE}"]}
        }}"#;
        let servers = parse_mcp_json(text, &env).unwrap();
        let configs: Vec<_> = servers
            .into_iter()
            .map(|(name, value)| {
                value.and_then(|value| {
                    ServerEntry::from_value(value)?.into_config(&name, "project .mcp.json")
                })
            })
            .collect();
        assert!(configs[0].as_ref().unwrap_err().contains("NOPE"));
        let fs = configs[1].as_ref().unwrap();
        assert_eq!(
            fs.transport,
            Transport::Stdio {
                command: "node".to_owned(),
                args: vec!["/home/u/fs.js".to_owned()],
                env: BTreeMap::from([("T".to_owned(), "s3cret".to_owned())]),
                cwd: None,
            }
        );
        assert_eq!(fs.startup_timeout, DEFAULT_STARTUP_TIMEOUT);
        let Transport::Http { url, headers, .. } = &configs[2].as_ref().unwrap().transport else {
            panic!("web is HTTP");
        };
        assert_eq!(url, "http://127.0.0.1:1/mcp");
        assert_eq!(headers["Authorization"], "Bearer s3cret");
    }

    #[test]
    fn bad_entries_say_why() {
        let config = |value: Value| {
            ServerEntry::from_value(value).and_then(|entry| entry.into_config("s", "test"))
        };
        assert!(
            config(serde_json::json!({}))
                .unwrap_err()
                .contains("command")
        );
        assert!(
            config(serde_json::json!({"type": "sse", "url": "http://x"}))
                .unwrap_err()
                .contains("not supported")
        );
        assert!(
            config(serde_json::json!({"command": "x", "comand": 1}))
                .unwrap_err()
                .contains("comand")
        );
        let entry = ServerEntry::from_value(serde_json::json!({"command": "x"})).unwrap();
        assert!(
            entry
                .into_config("a b", "test")
                .unwrap_err()
                .contains("a b")
        );
        let timed = config(
            serde_json::json!({"command": "x", "tool_timeout_sec": 1.5, "startup_timeout_sec": -3}),
        )
        .unwrap();
        assert_eq!(timed.tool_timeout, Duration::from_millis(1500));
        assert_eq!(timed.startup_timeout, DEFAULT_STARTUP_TIMEOUT);
    }

    #[test]
    fn tool_lists_filter() {
        let mut config =
            ServerEntry::from_value(serde_json::json!({"command": "x", "disabled_tools": ["rm"]}))
                .unwrap()
                .into_config("s", "t")
                .unwrap();
        assert!(config.offers("ls") && !config.offers("rm"));
        config.enabled_tools = Some(vec!["ls".to_owned()]);
        assert!(config.offers("ls") && !config.offers("cat"));
    }
}
