//! How large a model's context window is, when neither the config nor the
//! server says: a table by model name prefix, and a conservative default.
//!
//! The figures are the providers' published input windows. A name matches
//! the longest prefix in the table (after any `vendor/` part, so
//! OpenRouter's `anthropic/claude-…` matches too); anything unknown gets
//! [`DEFAULT_WINDOW`], small enough that an unknown local model compacts
//! early rather than failing.

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
}
