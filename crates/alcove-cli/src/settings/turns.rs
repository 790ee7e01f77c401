//! The main agent's loop: `max_turns`, `max_tool_calls_per_reply` and
//! `tool_profile` (which tools it is offered; `agent_setup.rs` chooses
//! one per model when `auto`). Plain values; `--max-turns` wins, and a
//! parent alcove's charter caps the turns.

use super::{Config, SettingError, Untrusted};

/// An untrusted project may set these: they only bound the loop.
pub(crate) static UNTRUSTED: [(&str, Untrusted); 3] = [
    ("max_turns", Untrusted::Kept),
    ("max_tool_calls_per_reply", Untrusted::Kept),
    ("tool_profile", Untrusted::Kept),
];

/// The main agent's turn cap when nothing sets one.
pub(crate) const DEFAULT_MAX_TURNS: u32 = 100;

/// The main agent's turn cap: `flag` (`--max-turns`), else config, else
/// [`DEFAULT_MAX_TURNS`]; never above `ceiling` (a parent's charter).
pub(crate) fn max_turns(
    flag: Option<u32>,
    config: &Config,
    ceiling: Option<u32>,
) -> Result<u32, SettingError> {
    let max_turns = flag
        .or(config.max_turns)
        .unwrap_or(DEFAULT_MAX_TURNS)
        .min(ceiling.unwrap_or(u32::MAX));
    if max_turns == 0 {
        return Err(SettingError("--max-turns must be at least 1".to_owned()));
    }
    Ok(max_turns)
}

/// The most tool calls one reply may run.
pub(crate) fn max_tool_calls_per_reply(config: &Config) -> usize {
    config
        .max_tool_calls_per_reply
        .unwrap_or(alcove_core::DEFAULT_MAX_TOOL_CALLS_PER_REPLY)
}

/// The defaults `config show` prints.
pub(crate) fn describe() -> Vec<(String, toml::Value)> {
    vec![
        ("max_turns".to_owned(), super::integer(DEFAULT_MAX_TURNS)),
        (
            "max_tool_calls_per_reply".to_owned(),
            super::integer(alcove_core::DEFAULT_MAX_TOOL_CALLS_PER_REPLY),
        ),
        ("tool_profile".to_owned(), "auto".into()),
    ]
}
