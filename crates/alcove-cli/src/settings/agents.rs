//! `[agents]`: delegation limits (depth, turns, slots, budgets, the
//! collab tools, the process runner's command), with seed 001's
//! environment switches as this section's variables. Plain values.
//!
//! `agents.token_budget` is a child's whole budget; it was called
//! `agents.max_tokens`, which read as a request's output cap (the
//! top-level `max_tokens`). The old name still works, with a warning.

use std::time::Duration;

use alcove_core::AgentLimits;
use serde::Deserialize;

use super::{Deprecated, EnvVar, Untrusted};

/// An untrusted project may set the limits, not the command that runs
/// each spawned agent.
pub(crate) static UNTRUSTED: [(&str, Untrusted); 1] =
    [("agents", Untrusted::KeptBut(&["command"]))];

/// The variables of this section (below `-c` and `alcove batch
/// --concurrency`, as every variable).
pub(crate) static ENV: [EnvVar; 3] = [
    EnvVar {
        var: "ALCOVE_SUBAGENT_MAX_AGENTS",
        key: "agents.max_concurrent",
        parse: super::positive,
    },
    EnvVar {
        var: "ALCOVE_SUBAGENT_COMMAND",
        key: "agents.command",
        parse: super::text,
    },
    EnvVar {
        var: "ALCOVE_ENABLE_COLLAB_TOOLS",
        key: "agents.collab",
        parse: super::switch,
    },
];

/// Keys of this section read under an old name.
pub(crate) static DEPRECATED: [Deprecated; 1] = [Deprecated {
    old: "agents.max_tokens",
    new: "agents.token_budget",
    why: "it is a child's whole token budget, not a request's output cap (the top-level `max_tokens`)",
}];

/// `[agents]`: delegation limits.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct AgentsEntry {
    /// How deep children may nest (default 1: children cannot delegate).
    pub(crate) max_depth: Option<u32>,
    /// A child's turn cap (default 30).
    pub(crate) max_turns: Option<u32>,
    /// How many spawned children may run at once (default 4).
    pub(crate) max_concurrent: Option<usize>,
    /// How many synchronous `Agent` children may run at once (default 16).
    pub(crate) max_parallel: Option<usize>,
    /// A child's wall-clock budget in seconds.
    pub(crate) timeout_secs: Option<f64>,
    /// A child's whole token budget across its turns (budget tokens:
    /// input plus output). Not a request's output cap, which is the
    /// top-level `max_tokens`.
    pub(crate) token_budget: Option<u64>,
    /// The old name of `token_budget`, still read (with a warning: it
    /// read as a request's output cap); `token_budget` wins.
    pub(crate) max_tokens: Option<u64>,
    /// What all children together may use, in tokens (input plus output).
    pub(crate) tree_max_tokens: Option<u64>,
    /// What all children together may use, in model turns.
    pub(crate) tree_max_turns: Option<u32>,
    /// Whether `exec` waits for spawned agents still running when the main
    /// agent ends and gives it one more run with their results (default true).
    pub(crate) wait_on_exit: Option<bool>,
    /// Whether spawn_agent / send_input / wait / close_agent / resume_agent are offered (default true).
    pub(crate) collab: Option<bool>,
    /// A shell command that runs each spawned agent's submission (the process runner).
    pub(crate) command: Option<String>,
    /// The shortest wait `wait` accepts, in ms (default 10000).
    pub(crate) wait_min_ms: Option<u64>,
    /// The longest wait `wait` accepts, in ms (default 300000).
    pub(crate) wait_max_ms: Option<u64>,
}

impl AgentsEntry {
    /// A child's token budget, under either of its names (`Config::merged`
    /// has already moved each layer's old name to the new one).
    pub(crate) fn token_budget(&self) -> Option<u64> {
        self.token_budget.or(self.max_tokens)
    }
}

/// The limits `[agents]` sets over the defaults; `collab_default` is
/// whether the collab tools are offered when `agents.collab` is not set
/// (the tool profile decides it).
pub(crate) fn resolve(settings: &AgentsEntry, collab_default: bool) -> AgentLimits {
    let defaults = AgentLimits::default();
    AgentLimits {
        collab: settings.collab.unwrap_or(collab_default),
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
        max_tokens: settings.token_budget(),
        tree_max_tokens: settings.tree_max_tokens,
        tree_max_turns: settings.tree_max_turns,
        wait_on_exit: settings.wait_on_exit.unwrap_or(defaults.wait_on_exit),
    }
}

/// The defaults `config show` prints.
pub(crate) fn describe() -> Vec<(String, toml::Value)> {
    let agents = AgentLimits::default();
    vec![
        (
            "agents.max_depth".to_owned(),
            super::integer(agents.max_depth),
        ),
        (
            "agents.max_turns".to_owned(),
            super::integer(agents.max_turns),
        ),
        (
            "agents.max_concurrent".to_owned(),
            super::integer(agents.max_concurrent),
        ),
        (
            "agents.max_parallel".to_owned(),
            super::integer(agents.max_parallel),
        ),
        ("agents.collab".to_owned(), agents.collab.into()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `timeout_secs` values that are no duration (TOML allows `inf` and
    /// `nan`) panicked in `Duration::from_secs_f64`; they mean no timeout.
    #[test]
    fn agent_timeouts_that_are_no_duration_are_ignored() {
        let limits = |secs: f64| {
            resolve(
                &AgentsEntry {
                    timeout_secs: Some(secs),
                    ..AgentsEntry::default()
                },
                true,
            )
            .timeout
        };
        for secs in [f64::INFINITY, f64::NAN, 1e30, -1.0, 0.0, 1e-12] {
            assert_eq!(limits(secs), None, "{secs}");
        }
        assert_eq!(limits(90.0), Some(Duration::from_secs(90)));
    }

    #[test]
    fn the_budget_is_read_under_its_old_name_and_the_new_one_wins() {
        let budget = |text: &str| {
            let entry: AgentsEntry = toml::from_str(text).unwrap();
            resolve(&entry, true).max_tokens
        };
        assert_eq!(budget("max_tokens = 300"), Some(300));
        assert_eq!(budget("token_budget = 400"), Some(400));
        assert_eq!(budget("token_budget = 400\nmax_tokens = 300"), Some(400));
        assert_eq!(budget(""), None);
    }
}

#[cfg(test)]
mod old_name_tests {
    use crate::config::{Layer, LayerKind};
    use crate::settings::Config;

    fn layer(kind: LayerKind, text: &str) -> Layer {
        Layer {
            kind,
            source: "test".to_owned(),
            table: toml::from_str(text).unwrap(),
        }
    }

    #[test]
    fn an_old_name_on_the_command_line_beats_the_new_name_in_the_users_file() {
        let user = layer(
            LayerKind::User("/u/config.toml".into()),
            "[agents]\ntoken_budget = 200000\n",
        );
        let flag = layer(LayerKind::Flag, "[agents]\nmax_tokens = 5000\n");
        let config = Config::merged(&[user, flag]).unwrap();
        assert_eq!(config.agents.token_budget(), Some(5000));
        let flag = layer(LayerKind::Flag, "[agents]\ntoken_budget = 7000\n");
        let old_user = layer(
            LayerKind::User("/u/config.toml".into()),
            "[agents]\nmax_tokens = 300\n",
        );
        let config = Config::merged(&[old_user, flag]).unwrap();
        assert_eq!(config.agents.token_budget(), Some(7000));
    }
}
