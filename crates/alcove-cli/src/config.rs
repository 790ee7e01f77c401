//! Configuration: TOML files layered under environment and flags.
//!
//! Layers, later wins: user file (`$ALCOVE_HOME/config.toml`, else
//! `$XDG_CONFIG_HOME/alcove/config.toml`, else `~/.config/alcove/config.toml`)
//! < project file (`.alcove/config.toml` in the workspace) < the
//! environment variables that set keys (`env_settings`) < `-c key=value`
//! flags; dedicated flags (`--model`, …) win over all. A file that does not parse is an error naming the file,
//! line and column. A project file counts only as far as the folder's
//! trust lets it (`trust.rs` filters the layers before they merge).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::Deserialize;

/// The merged configuration.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Config {
    /// `provider/model`.
    pub(crate) model: Option<String>,
    /// The permission mode when no flag says otherwise.
    pub(crate) permission_mode: Option<String>,
    /// The main agent's turn cap.
    pub(crate) max_turns: Option<u32>,
    /// The output token limit of each model request.
    pub(crate) max_tokens: Option<u32>,
    /// The sampling temperature sent to every provider (see `model_options`).
    pub(crate) temperature: Option<f32>,
    /// The reasoning effort every model is asked for, unless
    /// `[model_options]` says otherwise (`docs/thinking-and-images.md`).
    #[serde(deserialize_with = "crate::model_options::effort_setting")]
    pub(crate) effort: Option<String>,
    /// The most tool calls one reply may run (default 32; the rest are
    /// answered with an error saying why).
    pub(crate) max_tool_calls_per_reply: Option<usize>,
    /// `auto` (default: chosen per model), `full`, `local` or `lean`:
    /// which tools the main agent is offered (`agent_setup.rs`; `lean`
    /// leaves out the background-delegation tools unless
    /// `agents.collab = true`).
    pub(crate) tool_profile: Option<String>,
    /// Settings per provider or per `provider/model`.
    pub(crate) model_options: BTreeMap<String, crate::model_options::ModelOptionsEntry>,
    /// Extra providers by id.
    pub(crate) providers: BTreeMap<String, ProviderEntry>,
    /// Retry and timeout settings for model requests.
    pub(crate) retry: RetryEntry,
    /// Delegation limits.
    pub(crate) agents: AgentsEntry,
    /// `[batch]`: `alcove batch` defaults and Slurm options.
    pub(crate) batch: crate::batch_cmd::BatchEntry,
    /// `[hooks]`: command hooks by event, and their settings.
    pub(crate) hooks: crate::hook_setup::HooksEntry,
    /// `[permissions]`: allow / ask / deny rules (they add up across layers:
    /// see `permission_setup`).
    pub(crate) permissions: crate::permission_setup::PermissionsEntry,
    /// `[env]`: which environment variables Bash commands see.
    pub(crate) env: crate::permission_setup::EnvEntry,
    /// `[model_aliases]`: what `model: opus` (etc.) in agent definitions,
    /// skills and commands means (`opus = "anthropic/claude-opus-4-5"`).
    pub(crate) model_aliases: BTreeMap<String, String>,
    /// The session model's context window in tokens (wins over everything).
    pub(crate) model_context_window: Option<u64>,
    /// `[context_windows]`: windows by `"provider/model"` or `"provider"`.
    pub(crate) context_windows: BTreeMap<String, u64>,
    /// When to compact: a fraction of the window (`0.85`) or tokens (`120000`).
    pub(crate) auto_compact_at: Option<toml::Value>,
    /// Send `prompt_cache_key` to OpenAI-compatible servers (default: only
    /// to the built-in `openai` provider); `[providers.<id>]` can say too.
    pub(crate) prompt_cache_key: Option<bool>,
    /// `[pricing."provider/model"]`: prices per million tokens.
    pub(crate) pricing: BTreeMap<String, Price>,
    /// `[telemetry]`: OpenTelemetry traces (off unless a collector is named).
    pub(crate) telemetry: crate::telemetry::TelemetryEntry,
    /// `[web]`: the search service behind `WebSearch`.
    pub(crate) web: WebEntry,
    /// `[background]`: limits of background commands.
    pub(crate) background: BackgroundEntry,
    /// `[projects."<folder>"] trust = "trusted"`: the folders the user
    /// trusts (read from the user's file only, by `trust.rs`).
    pub(crate) projects: BTreeMap<String, toml::Value>,
}

/// `[background]`: `Bash` commands run with `run_in_background`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct BackgroundEntry {
    /// How many may run at once in a session, every agent's together
    /// (default 8).
    pub(crate) max_running: Option<usize>,
    /// KiB of unread output kept per command (default 64); older output
    /// is dropped, and `BashOutput` says how much.
    pub(crate) output_kib: Option<usize>,
}

/// The limits `[background]` sets, over the defaults.
pub(crate) fn background_limits(entry: &BackgroundEntry) -> alcove_tools::BackgroundLimits {
    let defaults = alcove_tools::BackgroundLimits::default();
    alcove_tools::BackgroundLimits {
        max_running: entry.max_running.unwrap_or(defaults.max_running),
        output_bytes: entry
            .output_kib
            .map_or(defaults.output_bytes, |kib| kib.max(1).saturating_mul(1024)),
    }
}

/// `[web]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct WebEntry {
    /// A SearXNG-compatible endpoint (`https://search.example/search`):
    /// `WebSearch` is offered only when it is set.
    pub(crate) search_url: Option<String>,
}

/// `[pricing."provider/model"]`: what a million tokens of each kind cost.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct Price {
    /// Uncached input.
    pub(crate) input: f64,
    /// Output.
    pub(crate) output: f64,
    /// Input read from the cache.
    pub(crate) cache_read: f64,
    /// Input written to the cache.
    pub(crate) cache_write: f64,
}

/// `[agents]`: delegation limits.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct AgentsEntry {
    /// How deep children may nest (default 1: children cannot delegate).
    pub(crate) max_depth: Option<u32>,
    /// A child's turn cap (default 30).
    pub(crate) max_turns: Option<u32>,
    /// How many spawned children may run at once (default 4).
    pub(crate) max_concurrent: Option<usize>,
    /// How many synchronous `Agent` children may run at once (default 16).
    pub(crate) max_parallel: Option<usize>,
    /// A child's wall-clock budget in seconds.
    pub(crate) timeout_secs: Option<f64>,
    /// A child's token budget (input plus output).
    pub(crate) max_tokens: Option<u64>,
    /// What all children together may use, in tokens (input plus output).
    pub(crate) tree_max_tokens: Option<u64>,
    /// What all children together may use, in model turns.
    pub(crate) tree_max_turns: Option<u32>,
    /// Whether `exec` waits for spawned agents still running when the main
    /// agent ends and gives it one more run with their results (default true).
    pub(crate) wait_on_exit: Option<bool>,
    /// Whether spawn_agent / send_input / wait / close_agent / resume_agent are offered (default true).
    pub(crate) collab: Option<bool>,
    /// A shell command that runs each spawned agent's submission (the process runner).
    pub(crate) command: Option<String>,
    /// The shortest wait `wait` accepts, in ms (default 10000).
    pub(crate) wait_min_ms: Option<u64>,
    /// The longest wait `wait` accepts, in ms (default 300000).
    pub(crate) wait_max_ms: Option<u64>,
}

/// `[retry]`: how model requests are retried.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct RetryEntry {
    /// Retries after the first attempt.
    pub(crate) max_retries: Option<u32>,
    /// The first backoff delay.
    pub(crate) base_delay_ms: Option<u64>,
    /// The longest backoff delay (also caps `retry-after`).
    pub(crate) max_delay_ms: Option<u64>,
    /// How long the first byte of an answer may take (a local server reads
    /// the whole prompt first).
    pub(crate) first_byte_timeout_ms: Option<u64>,
    /// How long a started stream may stay silent.
    pub(crate) idle_timeout_ms: Option<u64>,
}

impl Price {
    /// What `usage` costs at this price, in dollars.
    pub(crate) fn cost(&self, usage: &alcove_protocol::Usage) -> f64 {
        (usage.input_tokens as f64 * self.input
            + usage.output_tokens as f64 * self.output
            + usage.cache_read_tokens as f64 * self.cache_read
            + usage.cache_write_tokens as f64 * self.cache_write)
            / 1_000_000.0
    }
}

/// `[providers.<id>]`.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ProviderEntry {
    /// `anthropic`, `openai` (Chat Completions) or `openai-responses`.
    pub(crate) kind: String,
    /// The base URL (with `/v1` for OpenAI-compatible servers).
    pub(crate) base_url: String,
    /// The environment variable holding the key, if one is needed.
    pub(crate) api_key_env: Option<String>,
    /// Whether the server accepts `prompt_cache_key` (OpenAI kind only;
    /// default false: some servers reject fields they do not know).
    pub(crate) prompt_cache_key: Option<bool>,
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

/// Merges the layers (user file < project file < `-c` flags), as a
/// folder's trust left them (`trust.rs`).
pub(crate) fn from_layers(layers: &[crate::config_show::Layer]) -> anyhow::Result<Config> {
    let mut merged = toml::Table::new();
    // One precedence: flags > `-c` > environment > project > user > defaults.
    for layer in layers
        .iter()
        .filter(|layer| layer.kind != crate::config_show::LayerKind::Flag)
    {
        merge(&mut merged, layer.table.clone());
    }
    merge(&mut merged, crate::env_settings::table());
    for layer in layers
        .iter()
        .filter(|layer| layer.kind == crate::config_show::LayerKind::Flag)
    {
        merge(&mut merged, layer.table.clone());
    }
    Config::deserialize(toml::Value::Table(merged)).map_err(|err| {
        // The merged table has no lines: name the file (and line) of a bad
        // value when one file alone shows it.
        layers
            .iter()
            .filter_map(|layer| {
                let path = layer.kind.file()?;
                Some((path, std::fs::read_to_string(path).ok()?))
            })
            .find_map(|(path, text)| {
                let err = toml::from_str::<Config>(&text).err()?;
                Some(anyhow::anyhow!("{}: {err}", path.display()))
            })
            .unwrap_or_else(|| anyhow::Error::new(err).context("invalid configuration"))
    })
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
    fn project_overrides_user_and_flags_override_both() {
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
            "model = \"openai/b\"\n",
        )
        .unwrap();
        let layers =
            crate::config_show::layers(&dirs, &workspace, &["max_turns=9".to_owned()]).unwrap();
        let config = from_layers(&layers).unwrap();
        assert_eq!(config.model.as_deref(), Some("openai/b"));
        assert_eq!(config.max_turns, Some(9));
        assert_eq!(config.providers["local"].base_url, "http://x/v1");
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
            crate::config_show::layers(&dirs, dir.path(), &[]).unwrap_err()
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
