//! The agents' limits and the main agent's tool profile, from config
//! (`[agents]`, `tool_profile`) and seed 001's environment switches.
//!
//! The profile is chosen per model unless config names one (issue 45):
//! deferring tools behind `ToolSearch` suits a frontier model with a
//! prompt cache, but a small model (a window of at most
//! [`SMALL_WINDOW`] tokens, or a server on this machine on the Chat wire)
//! called `ToolSearch` where it should have read a file and never found
//! `spawn_agent`; it gets the `local` profile, every tool in full.

use alcove_core::AgentLimits;

use crate::UsageError;
use crate::settings::Config;
use crate::settings::agents::AgentsEntry;

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

/// `[agents]` with the tool profile's say on the collab tools (`lean`
/// leaves them out unless `agents.collab` asks).
pub(crate) fn agent_limits(settings: &AgentsEntry, profile: ToolProfile) -> AgentLimits {
    let collab_default = match profile {
        ToolProfile::Full | ToolProfile::Local => AgentLimits::default().collab,
        ToolProfile::Lean => false,
    };
    crate::settings::agents::resolve(settings, collab_default)
}
