//! When a conversation is compacted: `model_context_window`,
//! `[context_windows]` (by `"provider/model"` or `"provider"`) and
//! `auto_compact_at` (a fraction of the window or tokens). Plain values.
//! Which window a model has (asking a local server when config says
//! nothing) is `context_setup.rs`; this turns it into the limits.

use alcove_core::ContextLimits;

use super::{Config, SettingError, Untrusted};

/// An untrusted project may say when to compact.
pub(crate) static UNTRUSTED: [(&str, Untrusted); 3] = [
    ("model_context_window", Untrusted::Kept),
    ("context_windows", Untrusted::Kept),
    ("auto_compact_at", Untrusted::Kept),
];

/// The compaction settings for a window, from `auto_compact_at`.
pub(crate) fn resolve(config: &Config, window: u64) -> Result<ContextLimits, SettingError> {
    if window == 0 {
        return Err(SettingError(
            "model_context_window must be at least 1 token".to_owned(),
        ));
    }
    let compact_at = match &config.auto_compact_at {
        None => None,
        Some(toml::Value::Float(fraction)) if *fraction > 0.0 && *fraction <= 1.0 => {
            Some((window as f64 * fraction) as u64)
        }
        Some(toml::Value::Integer(tokens)) if *tokens > 1 => u64::try_from(*tokens).ok(),
        Some(other) => {
            return Err(SettingError(format!(
                "auto_compact_at = {other} is neither a fraction of the window (0 < f <= 1.0, e.g. 0.85) nor a token count (e.g. 120000)"
            )));
        }
    };
    Ok(ContextLimits::new(window, compact_at))
}
