//! `permission_mode`, `[permissions]` (allow / ask / deny rules in Claude
//! Code syntax) and `[env]` (which variables commands see).
//!
//! Layering: the mode and `[env]` replace the layer below; the rule lists
//! *add up* across layers (a project file cannot drop the user's deny
//! rules by writing an empty list), so they are read layer by layer
//! ([`layer_rules`]), each rule keeping its source; `permission_setup.rs`
//! adds the `--allow` / `--deny` flags and builds the gate.

use alcove_core::{PermissionMode, RuleKind};
use alcove_tools::EnvPolicy;
use serde::Deserialize;

use super::{Config, SettingError, Untrusted};
use crate::config::Layer;

/// An untrusted project keeps only the rules that narrow.
pub(crate) static UNTRUSTED: [(&str, Untrusted); 1] =
    [("permissions", Untrusted::Only(&["deny", "ask"]))];

/// `[permissions]`: allow / ask / deny rules in Claude Code syntax.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct PermissionsEntry {
    /// Rules for calls that run without asking.
    pub(crate) allow: Vec<String>,
    /// Rules for calls that need approval.
    pub(crate) ask: Vec<String>,
    /// Rules for calls that never run; a bare tool name also hides the tool.
    pub(crate) deny: Vec<String>,
}

/// `[env]`: which environment variables commands see.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct EnvEntry {
    /// Names passed through even though they look like secrets.
    pub(crate) keep: Vec<String>,
    /// Whether secret-looking variables are removed at all (default true).
    pub(crate) scrub: Option<bool>,
}

/// The permission mode: `flag` (`--permission-mode`), else config
/// (Claude Code's `defaultMode` included: a layer), else `default`.
pub(crate) fn mode(flag: Option<&str>, config: &Config) -> Result<PermissionMode, SettingError> {
    let text = flag.or(config.permission_mode.as_deref());
    match text {
        None => Ok(PermissionMode::Default),
        Some(text) => PermissionMode::parse(text).ok_or_else(|| {
            SettingError(format!(
                "unknown permission mode `{text}`; use default, acceptEdits, plan, bypassPermissions or dontAsk"
            ))
        }),
    }
}

/// The `[permissions]` lists of one layer.
pub(crate) fn layer_rules(layer: &Layer) -> Result<Vec<(RuleKind, Vec<String>)>, SettingError> {
    let Some(permissions) = layer.table.get("permissions") else {
        return Ok(Vec::new());
    };
    let Some(table) = permissions.as_table() else {
        return Err(SettingError(format!(
            "{}: `permissions` must be a table",
            layer.source
        )));
    };
    let mut lists = Vec::new();
    for kind in [RuleKind::Deny, RuleKind::Ask, RuleKind::Allow] {
        let Some(value) = table.get(kind.as_str()) else {
            continue;
        };
        let texts = value
            .as_array()
            .and_then(|items| {
                items
                    .iter()
                    .map(|item| item.as_str().map(str::to_owned))
                    .collect::<Option<Vec<_>>>()
            })
            .ok_or_else(|| {
                SettingError(format!(
                    "{}: `permissions.{}` must be an array of rule strings",
                    layer.source,
                    kind.as_str()
                ))
            })?;
        lists.push((kind, texts));
    }
    Ok(lists)
}

/// What commands' environment keeps, from `[env]`; every configured
/// provider's `api_key_env` is a secret whatever its name.
pub(crate) fn env_policy(config: &Config) -> EnvPolicy {
    EnvPolicy {
        scrub: config.env.scrub.unwrap_or(true),
        keep: config.env.keep.clone(),
        secret_names: config
            .providers
            .values()
            .filter_map(|entry| entry.api_key_env.clone())
            .collect(),
    }
}

/// The defaults `config show` prints.
pub(crate) fn describe() -> Vec<(String, toml::Value)> {
    vec![
        ("permission_mode".to_owned(), "default".into()),
        ("env.scrub".to_owned(), true.into()),
        ("env.keep".to_owned(), toml::Value::Array(Vec::new())),
    ]
}
