//! `[hooks]`: command hooks by event (`[[hooks.PreToolUse]]`, …) and
//! `max_stop_continuations`. Entries add up across layers (a project's do
//! not replace the user's: `hook_setup.rs` reads each layer's); the
//! setting replaces. No environment variable.

use std::collections::BTreeMap;

use alcove_core::HookEntry;
use serde::Deserialize;

use super::{Config, SettingError};
use crate::config::Layer;

/// How often Stop / SubagentStop hooks may send one run back to work
/// when `hooks.max_stop_continuations` is not set.
pub(crate) const STOP_HOOK_LIMIT: u32 = 3;

/// `[hooks]`: settings, and one array of entries per event.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct HooksEntry {
    /// How many times Stop / SubagentStop hooks may send one run back to
    /// work (default 3).
    pub(crate) max_stop_continuations: Option<u32>,
    /// `[[hooks.<Event>]]` entries, by event name.
    #[serde(flatten)]
    pub(crate) events: BTreeMap<String, Vec<HookEntry>>,
}

/// One layer's `[hooks]`, if it has any: hook entries add up across
/// layers, so each layer's are read on their own.
pub(crate) fn of_layer(layer: &Layer) -> Result<Option<HooksEntry>, SettingError> {
    let Some(table) = layer.table.get("hooks") else {
        return Ok(None);
    };
    HooksEntry::deserialize(table.clone())
        .map(Some)
        .map_err(|err| SettingError(format!("{}: [hooks]: {err}", layer.source)))
}

/// How often Stop / SubagentStop hooks may send one run back.
pub(crate) fn stop_hook_limit(config: &Config) -> u32 {
    config
        .hooks
        .max_stop_continuations
        .unwrap_or(STOP_HOOK_LIMIT)
}

/// The defaults `config show` prints.
pub(crate) fn describe() -> Vec<(String, toml::Value)> {
    vec![(
        "hooks.max_stop_continuations".to_owned(),
        super::integer(STOP_HOOK_LIMIT),
    )]
}
