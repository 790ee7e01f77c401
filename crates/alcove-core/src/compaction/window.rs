//! How large a model's context window is and when to compact it
//! ([`ContextLimits`]); when neither the config nor the server says, a
//! table by model name prefix and a conservative default.
//!
//! The figures are the providers' published input windows. A name matches
//! the longest prefix in the table (after any `vendor/` part, so
//! OpenRouter's `anthropic/claude-…` matches too); anything unknown gets
//! [`DEFAULT_WINDOW`], small enough that an unknown local model compacts
//! early rather than failing.

use crate::agent_loop::Runtime;

/// How much context an agent has and when to compact it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextLimits {
    /// The model's context window, in tokens.
    pub window: u64,
    /// Compact when the next request would be larger than this.
    pub compact_at: u64,
    /// How many recent turns keep their tool results whatever their size.
    pub keep_turns: usize,
    /// Results longer than this (bytes) are cleared once they are old.
    pub clear_over_bytes: usize,
}

impl ContextLimits {
    /// The share of the window at which compaction starts by default.
    pub const DEFAULT_FRACTION: f64 = 0.85;

    /// Limits for a window of `window` tokens, compacting at `compact_at`
    /// tokens (default 85 % of the window).
    pub fn new(window: u64, compact_at: Option<u64>) -> ContextLimits {
        let window = window.max(1);
        ContextLimits {
            window,
            compact_at: compact_at
                .unwrap_or((window as f64 * Self::DEFAULT_FRACTION) as u64)
                .clamp(1, window),
            keep_turns: 3,
            clear_over_bytes: 1024,
        }
    }
}

impl Default for ContextLimits {
    fn default() -> Self {
        ContextLimits::new(DEFAULT_WINDOW, None)
    }
}

/// The limits of an agent on `runtime.model`: the session's, unless the
/// model knows a window of its own (a child on another model), in which
/// case the threshold keeps the same share of it.
pub(super) fn limits_for(runtime: &Runtime) -> ContextLimits {
    let session = runtime.limits.context;
    match runtime.model.context_window() {
        Some(window) if window > 0 && window != session.window => {
            let share = session.compact_at as f64 / session.window as f64;
            ContextLimits {
                window,
                compact_at: ((window as f64 * share) as u64).clamp(1, window),
                ..session
            }
        }
        _ => session,
    }
}

/// The window assumed for a model nobody describes.
pub const DEFAULT_WINDOW: u64 = 32_768;

/// `(name prefix, window in tokens)`; the longest matching prefix wins.
pub const WINDOW_TABLE: &[(&str, u64)] = &[
    ("claude-", 200_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-4", 8_192),
    ("gpt-3.5-turbo", 16_385),
    ("gpt-5", 400_000),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
    ("gemini-", 1_048_576),
    ("llama3.1", 131_072),
    ("llama3.2", 131_072),
    ("llama3.3", 131_072),
    ("llama-3.1", 131_072),
    ("llama-3.3", 131_072),
    ("qwen2.5", 32_768),
    ("qwen3", 40_960),
    ("qwen3-coder", 262_144),
    ("mistral-large", 131_072),
    ("mistral-small", 32_768),
    ("codestral", 262_144),
    ("deepseek-", 128_000),
    ("gemma3", 131_072),
    ("phi4", 16_384),
    ("gpt-oss", 131_072),
];

/// The table's window for `model`, if a prefix matches.
pub fn table_window(model: &str) -> Option<u64> {
    let name = model.rsplit('/').next().unwrap_or(model).to_lowercase();
    WINDOW_TABLE
        .iter()
        .filter(|(prefix, _)| name.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|(_, window)| *window)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_prefix_wins() {
        assert_eq!(table_window("claude-sonnet-4-5"), Some(200_000));
        assert_eq!(table_window("gpt-4o-mini"), Some(128_000));
        assert_eq!(table_window("gpt-4"), Some(8_192));
        assert_eq!(table_window("anthropic/claude-opus-4"), Some(200_000));
        assert_eq!(table_window("qwen3-coder:30b"), Some(262_144));
        assert_eq!(table_window("my-finetune"), None);
    }

    #[test]
    fn limits_default_to_85_percent_and_stay_inside_the_window() {
        let limits = ContextLimits::new(16_000, None);
        assert_eq!(limits.compact_at, 13_600);
        assert_eq!(ContextLimits::new(100, Some(500)).compact_at, 100);
        assert_eq!(ContextLimits::new(0, None).window, 1);
    }
}
