//! The agents' limits and the main agent's tool profile, from config
//! (`[agents]`, `tool_profile`) and seed 001's environment switches.

use std::time::Duration;

use alcove_core::AgentLimits;

use crate::UsageError;
use crate::config::{self, Config};

/// Which tools the main agent is offered by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ToolProfile {
    /// Every tool.
    Full,
    /// For small local models: without the five background-delegation
    /// tools unless `agents.collab` (or `ALCOVE_ENABLE_COLLAB_TOOLS`) asks.
    Lean,
}

/// `tool_profile` from config (`full` unless set).
pub(crate) fn tool_profile(config: &Config) -> Result<ToolProfile, UsageError> {
    match config.tool_profile.as_deref() {
        None | Some("full") => Ok(ToolProfile::Full),
        Some("lean") => Ok(ToolProfile::Lean),
        Some(other) => Err(UsageError(format!(
            "tool_profile = \"{other}\" is not known; use \"full\" or \"lean\""
        ))),
    }
}

/// `[agents]` (seed 001's `ALCOVE_SUBAGENT_MAX_AGENTS` and
/// `ALCOVE_ENABLE_COLLAB_TOOLS` included, as the environment layer).
pub(crate) fn agent_limits(settings: &config::AgentsEntry, profile: ToolProfile) -> AgentLimits {
    let defaults = AgentLimits::default();
    let collab_default = match profile {
        ToolProfile::Full => defaults.collab,
        ToolProfile::Lean => false,
    };
    // `ALCOVE_SUBAGENT_MAX_AGENTS` and `ALCOVE_ENABLE_COLLAB_TOOLS` are in
    // `settings` already, below `-c` (`env_settings`).
    let collab = settings.collab.unwrap_or(collab_default);
    AgentLimits {
        collab,
        wait_min: settings
            .wait_min_ms
            .map(Duration::from_millis)
            .unwrap_or(defaults.wait_min),
        wait_max: settings
            .wait_max_ms
            .map(Duration::from_millis)
            .unwrap_or(defaults.wait_max),
        max_depth: settings.max_depth.unwrap_or(defaults.max_depth),
        max_turns: settings.max_turns.unwrap_or(defaults.max_turns),
        max_concurrent: settings
            .max_concurrent
            .filter(|max| *max > 0)
            .unwrap_or(defaults.max_concurrent),
        max_parallel: settings
            .max_parallel
            .filter(|max| *max > 0)
            .unwrap_or(defaults.max_parallel),
        // Not `from_secs_f64`: it panicked on `timeout_secs = inf` or `1e30`.
        timeout: settings
            .timeout_secs
            .and_then(|secs| Duration::try_from_secs_f64(secs).ok())
            .filter(|timeout| !timeout.is_zero()),
        max_tokens: settings.max_tokens,
        tree_max_tokens: settings.tree_max_tokens,
        tree_max_turns: settings.tree_max_turns,
        wait_on_exit: settings.wait_on_exit.unwrap_or(defaults.wait_on_exit),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `timeout_secs` values that are no duration (TOML allows `inf` and
    /// `nan`) panicked in `Duration::from_secs_f64`; they mean no timeout.
    #[test]
    fn agent_timeouts_that_are_no_duration_are_ignored() {
        let limits = |secs: f64| {
            agent_limits(
                &config::AgentsEntry {
                    timeout_secs: Some(secs),
                    ..config::AgentsEntry::default()
                },
                ToolProfile::Full,
            )
            .timeout
        };
        for secs in [f64::INFINITY, f64::NAN, 1e30, -1.0, 0.0, 1e-12] {
            assert_eq!(limits(secs), None, "{secs}");
        }
        assert_eq!(limits(90.0), Some(Duration::from_secs(90)));
    }
}
