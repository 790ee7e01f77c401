//! Every setting alcove reads, one module per config section, so a
//! setting lives in one room: its entry type (what the TOML may say), its
//! default, how it layers, its environment variable, `resolve` into the
//! value the session uses and `describe` for `alcove config show`.
//!
//! A module is named after its key (`[agents]` → `agents.rs`); the
//! top-level keys of one concern share one (`max_turns`,
//! `max_tool_calls_per_reply`, `tool_profile` → `turns.rs`). Settings
//! depend only on `config.rs` (the layers) and the library crates:
//! consumers import from here, never the reverse (a unit test below reads
//! these sources and fails on any other `crate::` import). `config.rs`
//! reads and merges the layers in the one precedence; [`Config::merged`]
//! turns the merged table into these types.

pub(crate) mod agents;
pub(crate) mod background;
pub(crate) mod batch;
pub(crate) mod compaction;
pub(crate) mod hooks;
pub(crate) mod mcp;
pub(crate) mod model;
pub(crate) mod permissions;
pub(crate) mod sandbox;
pub(crate) mod telemetry;
pub(crate) mod turns;
pub(crate) mod web;

#[cfg(test)]
mod layering_tests;

use std::collections::BTreeMap;

use alcove_core::known_keys::KeyTree;
use serde::Deserialize;

use crate::config::{Layer, LayerKind};

/// The merged configuration: every section's entry, as the layers set it
/// (nothing resolved yet: `None` is "not set").
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
    #[serde(deserialize_with = "model::effort_setting")]
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
    pub(crate) model_options: BTreeMap<String, model::ModelOptionsEntry>,
    /// Extra providers by id.
    pub(crate) providers: BTreeMap<String, model::ProviderEntry>,
    /// Retry and timeout settings for model requests.
    pub(crate) retry: model::RetryEntry,
    /// Delegation limits.
    pub(crate) agents: agents::AgentsEntry,
    /// `[batch]`: `alcove batch` defaults and Slurm options.
    pub(crate) batch: batch::BatchEntry,
    /// `[hooks]`: command hooks by event, and their settings.
    pub(crate) hooks: hooks::HooksEntry,
    /// `[permissions]`: allow / ask / deny rules (they add up across layers:
    /// see `permission_setup`).
    pub(crate) permissions: permissions::PermissionsEntry,
    /// `[env]`: which environment variables Bash commands see.
    pub(crate) env: permissions::EnvEntry,
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
    pub(crate) pricing: BTreeMap<String, model::Price>,
    /// `[telemetry]`: OpenTelemetry traces (off unless a collector is named).
    pub(crate) telemetry: telemetry::TelemetryEntry,
    /// `[web]`: the search service behind `WebSearch`.
    pub(crate) web: web::WebEntry,
    /// `[background]`: limits of background commands.
    pub(crate) background: background::BackgroundEntry,
    /// `[projects."<folder>"] trust = "trusted"`: the folders the user
    /// trusts (read from the user's file only, by `trust.rs`).
    pub(crate) projects: BTreeMap<String, toml::Value>,
}

impl Config {
    /// The layers merged in the one precedence (`config::merged`) and read
    /// into the settings types.
    pub(crate) fn merged(layers: &[Layer]) -> anyhow::Result<Config> {
        let renamed: Vec<Layer>;
        let layers = if layers.iter().any(|layer| has_old_key(&layer.table)) {
            renamed = layers.iter().cloned().map(with_new_names).collect();
            &renamed
        } else {
            layers
        };
        let merged = crate::config::merged(layers);
        Config::deserialize(toml::Value::Table(merged)).map_err(|err| {
            // The merged table has no lines: name the file (and line) of a bad
            // value when one file alone shows it.
            layers
                .iter()
                .filter_map(|layer| {
                    // Claude Code's JSON files never parse as TOML: only
                    // alcove's own files can be blamed this way.
                    let path = layer
                        .kind
                        .file()
                        .filter(|path| path.extension().is_some_and(|ext| ext == "toml"))?;
                    Some((path, std::fs::read_to_string(path).ok()?))
                })
                .find_map(|(path, text)| {
                    let err = toml::from_str::<Config>(&text).err()?;
                    Some(anyhow::anyhow!("{}: {err}", path.display()))
                })
                .unwrap_or_else(|| anyhow::Error::new(err).context("invalid configuration"))
        })
    }
}

/// A setting's value that cannot be used, in words for the user (the
/// command line makes it a usage error, exit 2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SettingError(pub(crate) String);

impl std::fmt::Display for SettingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SettingError {}

/// An environment variable that sets a key: the variable, the dotted key,
/// and how its text becomes the value (`None`: the variable is ignored).
pub(crate) struct EnvVar {
    pub(crate) var: &'static str,
    pub(crate) key: &'static str,
    pub(crate) parse: fn(&str) -> Option<toml::Value>,
}

/// Every variable that sets a key, from the sections that own them.
pub(crate) fn env_vars() -> impl Iterator<Item = &'static EnvVar> {
    model::ENV.iter().chain(agents::ENV.iter())
}

/// The environment's layers, one per variable that is set (and not
/// blank): between the project file and `-c` in the one precedence, so
/// `ALCOVE_SUBAGENT_MAX_AGENTS` cannot override `-c
/// agents.max_concurrent=…` or `alcove batch --concurrency`.
pub(crate) fn environment() -> Vec<Layer> {
    environment_from(|var| std::env::var(var).ok())
}

/// [`environment`] from any source of variables.
pub(crate) fn environment_from(read: impl Fn(&str) -> Option<String>) -> Vec<Layer> {
    env_vars()
        .filter_map(|setting| {
            let raw = read(setting.var).filter(|value| !value.trim().is_empty())?;
            let value = (setting.parse)(&raw)?;
            let mut table = toml::Table::new();
            insert_dotted(&mut table, setting.key, value);
            Some(Layer {
                kind: LayerKind::Env,
                source: format!("env {}", setting.var),
                table,
            })
        })
        .collect()
}

/// The variable's text as it is.
pub(crate) fn text(value: &str) -> Option<toml::Value> {
    Some(toml::Value::String(value.to_owned()))
}

/// A number above zero.
pub(crate) fn positive(value: &str) -> Option<toml::Value> {
    value
        .trim()
        .parse::<i64>()
        .ok()
        .filter(|number| *number > 0)
        .map(toml::Value::Integer)
}

/// `0` is off; anything else is on (seed 001's switch).
pub(crate) fn switch(value: &str) -> Option<toml::Value> {
    Some(toml::Value::Boolean(value.trim() != "0"))
}

/// Every built-in default, as dotted keys: each section's `describe`
/// (what `config show` prints below the layers).
pub(crate) fn defaults() -> Vec<(String, toml::Value)> {
    let mut all = Vec::new();
    all.extend(permissions::describe());
    all.extend(turns::describe());
    all.extend(model::describe());
    all.extend(agents::describe());
    all.extend(hooks::describe());
    all.extend(sandbox::describe());
    all.extend(background::describe());
    all
}

/// Every key a config layer may set: [`Config`]'s, and the sections their
/// consumers read from the raw layers (`[sandbox]`, `[limits]`,
/// `[mcp_servers]`).
pub(crate) fn known_keys() -> KeyTree {
    KeyTree::of::<Config>()
        .with_field("sandbox", KeyTree::of::<sandbox::SandboxTable>())
        .with_field("limits", KeyTree::of::<sandbox::LimitsTable>())
        .with_field("mcp_servers", mcp::known_keys())
}

/// What an untrusted folder's project file keeps of one top-level key
/// (`trust.rs` applies it; a key no section lists is dropped, so a key
/// added later is held back until its section says otherwise).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Untrusted {
    /// The whole key: a limit, a budget, how the model is asked.
    Kept,
    /// The table, less these keys.
    KeptBut(&'static [&'static str]),
    /// Only these keys of the table (they narrow).
    Only(&'static [&'static str]),
}

/// Every top-level key an untrusted project file keeps, from the
/// sections that own them.
pub(crate) fn kept_untrusted() -> impl Iterator<Item = &'static (&'static str, Untrusted)> {
    turns::UNTRUSTED
        .iter()
        .chain(model::UNTRUSTED.iter())
        .chain(agents::UNTRUSTED.iter())
        .chain(compaction::UNTRUSTED.iter())
        .chain(background::UNTRUSTED.iter())
        .chain(permissions::UNTRUSTED.iter())
        .chain(sandbox::UNTRUSTED.iter())
}

/// Keys still read under an old name: the old dotted key, the new one and
/// why it was renamed (`config check` and the start-up warnings say so).
pub(crate) fn deprecated() -> impl Iterator<Item = &'static Deprecated> {
    agents::DEPRECATED.iter()
}

/// The keys `table` sets under their old name.
pub(crate) fn old_keys_in(table: &toml::Table) -> impl Iterator<Item = &'static Deprecated> {
    deprecated().filter(move |key| dotted(table, key.old).is_some())
}

/// Whether `table` sets a key under its old name.
fn has_old_key(table: &toml::Table) -> bool {
    old_keys_in(table).next().is_some()
}

/// The value at `key` (dotted) in `table`.
fn dotted<'t>(table: &'t toml::Table, key: &str) -> Option<&'t toml::Value> {
    let mut parts = key.split('.');
    let mut value = table.get(parts.next()?)?;
    for part in parts {
        value = value.as_table()?.get(part)?;
    }
    Some(value)
}

/// `layer` with each old name written as its new one, so an old name
/// takes its layer's place in the one precedence (a `-c` with the old
/// name beats a user file with the new). Within one layer the new name
/// wins.
fn with_new_names(mut layer: Layer) -> Layer {
    for key in deprecated() {
        let Some((section, old_leaf)) = key.old.rsplit_once('.') else {
            continue;
        };
        let Some(new_leaf) = key
            .new
            .strip_prefix(section)
            .and_then(|rest| rest.strip_prefix('.'))
        else {
            continue;
        };
        let mut cursor = Some(&mut layer.table);
        for part in section.split('.') {
            cursor = cursor.and_then(|table| table.get_mut(part)?.as_table_mut());
        }
        if let Some(table) = cursor
            && let Some(value) = table.remove(old_leaf)
            && !table.contains_key(new_leaf)
        {
            table.insert(new_leaf.to_owned(), value);
        }
    }
    layer
}

/// A key kept under an old name.
pub(crate) struct Deprecated {
    pub(crate) old: &'static str,
    pub(crate) new: &'static str,
    pub(crate) why: &'static str,
}

/// Sets `key` (dotted) in `table`, making the tables on the way.
pub(crate) fn insert_dotted(table: &mut toml::Table, key: &str, value: toml::Value) {
    let mut parts: Vec<&str> = key.split('.').collect();
    let Some(last) = parts.pop() else { return };
    let mut cursor = table;
    for part in parts {
        let entry = cursor
            .entry(part.to_owned())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        if !entry.is_table() {
            *entry = toml::Value::Table(toml::Table::new());
        }
        let toml::Value::Table(inner) = entry else {
            return;
        };
        cursor = inner;
    }
    cursor.insert(last.to_owned(), value);
}

/// A count as a TOML integer (saturating).
pub(crate) fn integer(value: impl TryInto<i64>) -> toml::Value {
    toml::Value::Integer(value.try_into().unwrap_or(i64::MAX))
}
