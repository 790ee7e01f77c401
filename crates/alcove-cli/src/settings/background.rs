//! `[background]`: the limits of `Bash` commands run with
//! `run_in_background` (how many at once, how much unread output each
//! keeps). Plain values; no environment variable.

use serde::Deserialize;

use super::Untrusted;

/// An untrusted project may set these limits.
pub(crate) static UNTRUSTED: [(&str, Untrusted); 1] = [("background", Untrusted::Kept)];

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
pub(crate) fn resolve(entry: &BackgroundEntry) -> alcove_tools::BackgroundLimits {
    let defaults = alcove_tools::BackgroundLimits::default();
    alcove_tools::BackgroundLimits {
        max_running: entry.max_running.unwrap_or(defaults.max_running),
        output_bytes: entry
            .output_kib
            .map_or(defaults.output_bytes, |kib| kib.max(1).saturating_mul(1024)),
    }
}

/// The defaults `config show` prints.
pub(crate) fn describe() -> Vec<(String, toml::Value)> {
    let defaults = alcove_tools::BackgroundLimits::default();
    vec![
        (
            "background.max_running".to_owned(),
            super::integer(defaults.max_running),
        ),
        (
            "background.output_kib".to_owned(),
            super::integer(defaults.output_bytes / 1024),
        ),
    ]
}
