//! The session's context settings from config: the model's window (and
//! where that figure came from), when to compact, whether to send
//! `prompt_cache_key`, and what tokens cost.
//!
//! The window is, in order: `model_context_window`; `[context_windows]`
//! for `"provider/model"`, then `"provider"`; what a server of one's own
//! reports (llama.cpp `/props`, Ollama `/api/show`: asked of any provider
//! on the OpenAI wire but the hosted `openai` one, and of that one too when
//! its base URL is on a loopback or private address); the table by model
//! name prefix; a conservative default. `config show` and `/status` print the choice.

use std::time::Duration;

use alcove_core::{ContextLimits, DEFAULT_WINDOW, table_window};
use alcove_model::{ProviderConfig, WireProtocol};
use alcove_protocol::Usage;

use crate::UsageError;
use crate::settings::Config;
use crate::settings::model::Price;

/// How long a local server may take to say its window.
const PROBE_TIMEOUT: Duration = Duration::from_millis(500);

/// The window chosen for a model, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WindowChoice {
    /// Tokens.
    pub(crate) tokens: u64,
    /// Where the figure came from, for `config show` and `/status`.
    pub(crate) source: String,
}

impl WindowChoice {
    /// Whether the figure is the default for a model nobody describes,
    /// not a fact about the model.
    pub(crate) fn is_guess(&self) -> bool {
        self.source.starts_with(DEFAULT_SOURCE)
    }
}

/// Where the default window's figure comes from.
const DEFAULT_SOURCE: &str = "default";

/// The window of `provider`'s model: config, server, table, default.
pub(crate) async fn window(config: &Config, provider: &ProviderConfig) -> WindowChoice {
    if let Some(choice) = configured(config, provider) {
        return choice;
    }
    // Hosted OpenAI and Anthropic report nothing; a server of one's own
    // might, whatever its provider is called (`openai/…` with a loopback
    // `OPENAI_BASE_URL` is the local-models page's own example).
    if provider.protocol == WireProtocol::OpenAi
        && (provider.id != "openai" || crate::model_options::is_private_url(&provider.base_url))
        && let Some((tokens, source)) =
            alcove_model::probe_context_window(provider, PROBE_TIMEOUT).await
    {
        return WindowChoice {
            tokens,
            source: format!("server ({source})"),
        };
    }
    from_table(&provider.model)
}

/// The window config sets for `provider`'s model, if it sets one.
pub(crate) fn configured(config: &Config, provider: &ProviderConfig) -> Option<WindowChoice> {
    if let Some(tokens) = config.model_context_window {
        return Some(WindowChoice {
            tokens,
            source: "config model_context_window".to_owned(),
        });
    }
    let full = format!("{}/{}", provider.id, provider.model);
    [full, provider.id.clone()].into_iter().find_map(|key| {
        config.context_windows.get(&key).map(|tokens| WindowChoice {
            tokens: *tokens,
            source: format!("config context_windows.\"{key}\""),
        })
    })
}

/// The window of a child's model (an agent definition's `model:`):
/// `[context_windows]`, else the table; the top-level
/// `model_context_window` is the session model's, and servers are not
/// asked from the model factory.
pub(crate) fn child_window(config: &Config, provider: &ProviderConfig) -> WindowChoice {
    let bare = Config {
        model_context_window: None,
        ..config.clone()
    };
    configured(&bare, provider).unwrap_or_else(|| from_table(&provider.model))
}

/// The table's window for `model`, else the default.
pub(crate) fn from_table(model: &str) -> WindowChoice {
    match table_window(model) {
        Some(tokens) => WindowChoice {
            tokens,
            source: "table of known models".to_owned(),
        },
        None => WindowChoice {
            tokens: DEFAULT_WINDOW,
            source: format!("{DEFAULT_SOURCE} (model not in the table; set model_context_window)"),
        },
    }
}

/// The compaction settings for a window (`settings::compaction`).
pub(crate) fn limits(config: &Config, window: u64) -> Result<ContextLimits, UsageError> {
    crate::settings::compaction::resolve(config, window).map_err(|err| UsageError(err.0))
}

/// The `prompt_cache_key` to send (the session id), if this provider
/// takes one: `[providers.<id>] prompt_cache_key`, else top-level
/// `prompt_cache_key`, else only for the built-in `openai` provider.
pub(crate) fn cache_key(config: &Config, provider_id: &str, session_id: &str) -> Option<String> {
    let wanted = config
        .providers
        .get(provider_id)
        .and_then(|entry| entry.prompt_cache_key)
        .or(config.prompt_cache_key)
        .unwrap_or(provider_id == "openai" && !config.providers.contains_key("openai"));
    wanted.then(|| session_id.to_owned())
}

/// What `usage` cost with `model`'s price, when config has one.
pub(crate) fn cost(config: &Config, model: &str, usage: &Usage) -> Option<f64> {
    config
        .pricing
        .get(model)
        .map(|price: &Price| price.cost(usage))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> Config {
        toml::from_str(text).unwrap()
    }

    fn provider(id: &str, model: &str) -> ProviderConfig {
        ProviderConfig {
            id: id.to_owned(),
            protocol: WireProtocol::Anthropic,
            base_url: String::new(),
            api_key: None,
            model: model.to_owned(),
            retry: Default::default(),
            prompt_cache_key: None,
            context_window: None,
            reasons: false,
            reasoning_summary: None,
            thinking: Default::default(),
            effort: None,
            vision: true,
            health: None,
            temperature: None,
            text_tool_calls: false,
        }
    }

    #[test]
    fn the_window_comes_from_config_then_the_table_then_the_default() {
        let claude = provider("anthropic", "claude-sonnet-4-5");
        let plain = config("");
        assert_eq!(configured(&plain, &claude), None);
        assert_eq!(from_table("claude-sonnet-4-5").tokens, 200_000);
        assert_eq!(from_table("mystery").tokens, DEFAULT_WINDOW);
        let by_model =
            config("[context_windows]\n\"anthropic/claude-sonnet-4-5\" = 1000000\nanthropic = 5\n");
        let choice = configured(&by_model, &claude).unwrap();
        assert_eq!(choice.tokens, 1_000_000);
        assert!(choice.source.contains("context_windows"), "{choice:?}");
        let top = config("model_context_window = 16000\n[context_windows]\nanthropic = 5\n");
        assert_eq!(configured(&top, &claude).unwrap().tokens, 16_000);
    }

    #[test]
    fn auto_compact_at_is_a_fraction_or_tokens() {
        assert_eq!(limits(&config(""), 1000).unwrap().compact_at, 850);
        assert_eq!(
            limits(&config("auto_compact_at = 0.5"), 1000)
                .unwrap()
                .compact_at,
            500
        );
        assert_eq!(
            limits(&config("auto_compact_at = 700"), 1000)
                .unwrap()
                .compact_at,
            700
        );
        assert!(limits(&config("auto_compact_at = 1.5"), 1000).is_err());
        assert!(limits(&config("auto_compact_at = \"x\""), 1000).is_err());
        assert!(limits(&config(""), 0).is_err());
    }

    #[test]
    fn costs_need_a_price_and_keep_cache_apart() {
        let usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 100_000,
            cache_read_tokens: 2_000_000,
            cache_write_tokens: 0,
        };
        assert_eq!(cost(&config(""), "anthropic/x", &usage), None);
        let priced = config(
            "[pricing.\"anthropic/x\"]\ninput = 3.0\noutput = 15.0\ncache_read = 0.3\ncache_write = 3.75\n",
        );
        let dollars = cost(&priced, "anthropic/x", &usage).unwrap();
        assert!((dollars - (3.0 + 1.5 + 0.6)).abs() < 1e-9, "{dollars}");
    }

    #[test]
    fn the_cache_key_is_sent_where_it_is_known_to_be_accepted() {
        assert_eq!(
            cache_key(&config(""), "openai", "s1").as_deref(),
            Some("s1")
        );
        assert_eq!(cache_key(&config(""), "ollama", "s1"), None);
        assert_eq!(
            cache_key(&config("prompt_cache_key = false"), "openai", "s1"),
            None
        );
        let local = config(
            "[providers.local]\nkind = \"openai\"\nbase_url = \"http://x/v1\"\nprompt_cache_key = true\n",
        );
        assert_eq!(cache_key(&local, "local", "s1").as_deref(), Some("s1"));
    }
}
