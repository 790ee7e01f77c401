//! The agents' limits and the main agent's tool profile, from config
//! (`[agents]`, `tool_profile`) and seed 001's environment switches.
//!
//! The profile is chosen per model unless config names one (issue 45):
//! deferring tools behind `ToolSearch` suits a frontier model with a
//! prompt cache, but a small model (a window of at most
//! [`SMALL_WINDOW`] tokens, or a server on this machine on the Chat wire)
//! called `ToolSearch` where it should have read a file and never found
//! `spawn_agent`; it gets the `local` profile, every tool in full.

use std::time::Duration;

use alcove_core::AgentLimits;

use crate::UsageError;
use crate::config::{self, Config};

/// Which tools the main agent is offered by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ToolProfile {
    /// Every tool, the rarely used ones by name only behind `ToolSearch`.
    Full,
    /// For small local models: without the five background-delegation
    /// tools unless `agents.collab` (or `ALCOVE_ENABLE_COLLAB_TOOLS`) asks.
    Lean,
    /// For small or local models: the lean set plus the background
    /// delegation tools, every one in full, no `ToolSearch`.
    Local,
}

impl ToolProfile {
    /// Its name in config.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ToolProfile::Full => "full",
            ToolProfile::Lean => "lean",
            ToolProfile::Local => "local",
        }
    }

    /// Whether rarely used tools are offered by name only (`ToolSearch`).
    pub(crate) fn defers_tools(self) -> bool {
        self != ToolProfile::Local
    }
}

/// A window this small gets the `local` profile: deferral saves prefill
/// but costs a small model the tools it cannot find.
pub(crate) const SMALL_WINDOW: u64 = 32_768;

/// The profile a session runs with, and why (`config show` says it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProfileChoice {
    pub(crate) profile: ToolProfile,
    pub(crate) why: String,
}

/// `tool_profile` from config: `None` for `auto` (or unset), chosen per
/// model by [`choose_profile`].
pub(crate) fn tool_profile(config: &Config) -> Result<Option<ToolProfile>, UsageError> {
    match config.tool_profile.as_deref() {
        None | Some("auto") => Ok(None),
        Some("full") => Ok(Some(ToolProfile::Full)),
        Some("lean") => Ok(Some(ToolProfile::Lean)),
        Some("local") => Ok(Some(ToolProfile::Local)),
        Some(other) => Err(UsageError(format!(
            "tool_profile = \"{other}\" is not known; use \"auto\", \"full\", \"local\" or \"lean\""
        ))),
    }
}

/// The profile for `provider`'s model with `window`: config's, else
/// `local` for a server on this machine on the Chat wire or a known
/// window of at most [`SMALL_WINDOW`] tokens, else `full`.
pub(crate) fn choose_profile(
    config: &Config,
    provider: &alcove_model::ProviderConfig,
    window: &crate::context_setup::WindowChoice,
) -> Result<ProfileChoice, UsageError> {
    if let Some(profile) = tool_profile(config)? {
        return Ok(ProfileChoice {
            profile,
            why: "config tool_profile".to_owned(),
        });
    }
    let chat = provider.protocol == alcove_model::WireProtocol::OpenAi;
    let (profile, why) = if chat && crate::model_options::is_local(provider) {
        (
            ToolProfile::Local,
            "auto: a server on this machine on the Chat wire".to_owned(),
        )
    } else if window.tokens <= SMALL_WINDOW && !window.is_guess() {
        (
            ToolProfile::Local,
            format!(
                "auto: a window of {} tokens (at most {SMALL_WINDOW})",
                window.tokens
            ),
        )
    } else {
        (
            ToolProfile::Full,
            "auto: rarely used tools by name only, behind ToolSearch".to_owned(),
        )
    };
    Ok(ProfileChoice { profile, why })
}

/// `[agents]` (seed 001's `ALCOVE_SUBAGENT_MAX_AGENTS` and
/// `ALCOVE_ENABLE_COLLAB_TOOLS` included, as the environment layer).
pub(crate) fn agent_limits(settings: &config::AgentsEntry, profile: ToolProfile) -> AgentLimits {
    let defaults = AgentLimits::default();
    let collab_default = match profile {
        ToolProfile::Full | ToolProfile::Local => defaults.collab,
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
