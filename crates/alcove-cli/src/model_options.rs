//! Per-provider and per-model request settings: timeouts, temperature,
//! tool calls written as text, thinking and effort, with defaults that differ for a server on
//! this machine.
//!
//! A local server (a loopback base URL, or the `ollama` and discovered
//! `local` providers) reads the whole prompt before it sends a byte, on a
//! CPU for minutes, answers with its own sampling defaults (llama.cpp's
//! temperature is 0.8), and often returns its small model's tool calls as
//! text. So it gets a long time to first byte, a low temperature, and its
//! calls written as text are run. Hosted providers get none of these unless
//! configured: some hosted models reject a `temperature` altogether.
//!
//! Layers, later wins: built-in defaults (local or hosted) < `[retry]` <
//! `temperature` and `effort` < `[model_options."<provider>"]` <
//! `[model_options."<provider>/<model>"]`.
//!
//! The same entries choose an OpenAI provider's wire (`wire`) and a
//! reasoning model's summary; the defaults for those are in
//! `openai_wire.rs`. `effort` is one knob for every wire (Anthropic's
//! `output_config.effort`, Responses' `reasoning.effort`, Chat's
//! `reasoning_effort`); `reasoning_effort` is still read as another name
//! for it, as it was the OpenAI wires' own key.

use std::time::Duration;

use alcove_model::{LOCAL_FIRST_BYTE_TIMEOUT, ProviderConfig, WireProtocol};

use crate::settings::Config;
use crate::settings::model::{ModelOptionsEntry, RetryEntry, Wire};

/// The temperature a local server gets unless one is configured.
pub(crate) const LOCAL_TEMPERATURE: f32 = 0.2;

/// Applies the defaults and every configured layer to `provider`.
pub(crate) fn apply(provider: &mut ProviderConfig, config: &Config) {
    let local = is_local(provider);
    if local {
        provider.retry.first_byte_timeout = LOCAL_FIRST_BYTE_TIMEOUT;
        provider.temperature = Some(LOCAL_TEMPERATURE);
    }
    // A hosted model makes real calls; JSON in its prose is prose.
    provider.text_tool_calls = local && provider.protocol != WireProtocol::Anthropic;
    // A local text-only model refuses an image outright (llama.cpp without
    // its projector answers 500): a note is better than a failed request.
    provider.vision = !(local && provider.protocol != WireProtocol::Anthropic);
    apply_retry(provider, &config.retry);
    if let Some(temperature) = config.temperature {
        provider.temperature = Some(temperature);
    }
    if let Some(effort) = &config.effort {
        provider.effort = Some(effort.clone());
    }
    let specific = format!("{}/{}", provider.id, provider.model);
    let mut effort_for_this_model = false;
    for (key, is_specific) in [(provider.id.clone(), false), (specific, true)] {
        if let Some(entry) = config.model_options.get(&key) {
            apply_entry(provider, entry);
            effort_for_this_model |= is_specific && entry.effort().is_some();
        }
    }
    reasoning_defaults(provider, effort_for_this_model);
}

/// Fills in and trims the reasoning settings for the wire the provider
/// ended up on (`openai_wire.rs` says why).
fn reasoning_defaults(provider: &mut ProviderConfig, effort_for_this_model: bool) {
    let reasons = crate::openai_wire::takes_reasoning(&provider.model);
    // On the OpenAI wires an effort (configured, or asked by an agent's
    // definition or call) reaches only the models that reason, or one it
    // was configured for by name; the Anthropic wire reads the model's
    // name itself (`alcove-model` thinking.rs).
    provider.reasons =
        provider.protocol != WireProtocol::Anthropic && (reasons || effort_for_this_model);
    match provider.protocol {
        WireProtocol::OpenAiResponses => {
            if reasons {
                provider
                    .effort
                    .get_or_insert_with(|| crate::openai_wire::DEFAULT_EFFORT.to_owned());
                provider
                    .reasoning_summary
                    .get_or_insert_with(|| crate::openai_wire::DEFAULT_SUMMARY.to_owned());
            }
            // A provider-wide setting reaches only the models that reason.
            if !provider.reasons {
                provider.reasoning_summary = None;
            }
            if matches!(provider.reasoning_summary.as_deref(), Some("off" | "none")) {
                provider.reasoning_summary = None;
            }
        }
        WireProtocol::OpenAi | WireProtocol::Anthropic => {
            provider.reasoning_summary = None;
        }
    }
}

/// Whether `provider` is a server on this machine.
pub(crate) fn is_local(provider: &ProviderConfig) -> bool {
    matches!(provider.id.as_str(), "ollama" | "local") || is_loopback_url(&provider.base_url)
}

fn is_loopback_url(url: &str) -> bool {
    let host = url_host(url);
    host == "localhost"
        || host.ends_with(".localhost")
        || host == "::1"
        || host
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Whether `url` names a server on this machine or on a private network
/// (loopback, 10/8, 172.16/12, 192.168/16, link-local, IPv6 unique-local):
/// a server someone runs themselves, which may say its window, whatever
/// the provider is called. Hosted APIs are on public addresses.
pub(crate) fn is_private_url(url: &str) -> bool {
    if is_loopback_url(url) {
        return true;
    }
    let host = url_host(url);
    if let Ok(ip) = host.parse::<std::net::Ipv4Addr>() {
        return ip.is_private() || ip.is_link_local();
    }
    host.parse::<std::net::Ipv6Addr>().is_ok_and(|ip| {
        let first = ip.segments()[0];
        // fc00::/7 (unique local) and fe80::/10 (link-local).
        (first & 0xfe00) == 0xfc00 || (first & 0xffc0) == 0xfe80
    })
}

/// The host of `url`, lower-cased, without port, user or IPv6 brackets.
fn url_host(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    let host = match host_port.strip_prefix('[') {
        Some(bracketed) => bracketed.split(']').next().unwrap_or(""),
        None => host_port.split(':').next().unwrap_or(""),
    };
    host.to_ascii_lowercase()
}

fn apply_retry(provider: &mut ProviderConfig, settings: &RetryEntry) {
    let retry = &mut provider.retry;
    if let Some(max_retries) = settings.max_retries {
        retry.max_retries = max_retries;
    }
    if let Some(ms) = settings.base_delay_ms {
        retry.base_delay = Duration::from_millis(ms);
    }
    if let Some(ms) = settings.max_delay_ms {
        retry.max_delay = Duration::from_millis(ms);
    }
    if let Some(ms) = settings.first_byte_timeout_ms {
        retry.first_byte_timeout = Duration::from_millis(ms);
    }
    if let Some(ms) = settings.idle_timeout_ms {
        retry.idle_timeout = Duration::from_millis(ms);
    }
}

fn apply_entry(provider: &mut ProviderConfig, entry: &ModelOptionsEntry) {
    if let Some(temperature) = entry.temperature {
        provider.temperature = Some(temperature);
    }
    if let Some(ms) = entry.first_byte_timeout_ms {
        provider.retry.first_byte_timeout = Duration::from_millis(ms);
    }
    if let Some(ms) = entry.idle_timeout_ms {
        provider.retry.idle_timeout = Duration::from_millis(ms);
    }
    if let Some(on) = entry.text_tool_calls {
        provider.text_tool_calls = on;
    }
    if let Some(wire) = entry.wire
        && provider.protocol != WireProtocol::Anthropic
    {
        provider.protocol = match wire {
            Wire::Responses => WireProtocol::OpenAiResponses,
            Wire::Chat => WireProtocol::OpenAi,
        };
    }
    if let Some(summary) = &entry.reasoning_summary {
        provider.reasoning_summary = Some(summary.clone());
    }
    if let Some(thinking) = entry.thinking {
        provider.thinking = thinking;
    }
    if let Some(effort) = entry.effort() {
        provider.effort = Some(effort.to_owned());
    }
    if let Some(vision) = entry.vision {
        provider.vision = vision;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alcove_model::RetryPolicy;

    fn provider(id: &str, base_url: &str) -> ProviderConfig {
        ProviderConfig {
            id: id.to_owned(),
            protocol: WireProtocol::OpenAi,
            base_url: base_url.to_owned(),
            api_key: None,
            model: "qwen".to_owned(),
            retry: RetryPolicy::default(),
            temperature: None,
            text_tool_calls: false,
            prompt_cache_key: None,
            context_window: None,
            reasons: false,
            reasoning_summary: None,
            thinking: Default::default(),
            effort: None,
            vision: true,
            health: None,
        }
    }

    #[test]
    fn loopback_urls_are_local() {
        for url in [
            "http://127.0.0.1:8080/v1",
            "http://localhost:11434/v1",
            "http://[::1]:8080/v1",
            "http://user@127.0.0.2/v1",
        ] {
            assert!(is_local(&provider("openai", url)), "{url}");
        }
        for url in [
            "https://api.openai.com/v1",
            "http://10.0.0.5:8080/v1",
            "http://127.0.0.1.example.com/v1",
        ] {
            assert!(!is_local(&provider("openai", url)), "{url}");
        }
        assert!(is_local(&provider("ollama", "http://gpu-box:11434/v1")));
    }

    #[test]
    fn private_addresses_are_asked_for_their_window_and_public_ones_not() {
        for url in [
            "http://127.0.0.1:8080/v1",
            "http://localhost:8080/v1",
            "http://10.0.0.5:8080/v1",
            "http://172.20.1.2/v1",
            "http://192.168.1.9:11434/v1",
            "http://169.254.3.4/v1",
            "http://[fd12::5]:8080/v1",
            "http://[fe80::1]/v1",
        ] {
            assert!(is_private_url(url), "{url}");
        }
        for url in [
            "https://api.openai.com/v1",
            "http://8.8.8.8/v1",
            "http://172.32.0.1/v1",
            "http://[2001:db8::1]/v1",
            "http://10.0.0.5.example.com/v1",
        ] {
            assert!(!is_private_url(url), "{url}");
        }
    }

    #[test]
    fn local_defaults_then_layers() {
        let mut local = provider("llama", "http://127.0.0.1:8080/v1");
        apply(&mut local, &Config::default());
        assert_eq!(local.retry.first_byte_timeout, LOCAL_FIRST_BYTE_TIMEOUT);
        assert_eq!(local.temperature, Some(LOCAL_TEMPERATURE));
        assert!(local.text_tool_calls);

        let mut hosted = provider("openai", "https://api.openai.com/v1");
        apply(&mut hosted, &Config::default());
        assert_eq!(
            hosted.retry.first_byte_timeout,
            RetryPolicy::default().first_byte_timeout
        );
        assert_eq!(hosted.temperature, None);
        assert!(!hosted.text_tool_calls);

        let config: Config = toml::from_str(
            "temperature = 0.5\n[retry]\nfirst_byte_timeout_ms = 1000\n\
             [model_options.llama]\nfirst_byte_timeout_ms = 2000\ntext_tool_calls = false\n\
             [model_options.\"llama/qwen\"]\ntemperature = 0.1\n",
        )
        .unwrap();
        let mut local = provider("llama", "http://127.0.0.1:8080/v1");
        apply(&mut local, &config);
        assert_eq!(local.retry.first_byte_timeout, Duration::from_secs(2));
        assert_eq!(local.temperature, Some(0.1));
        assert!(!local.text_tool_calls);
        let mut hosted = provider("openai", "https://api.openai.com/v1");
        apply(&mut hosted, &config);
        assert_eq!(hosted.temperature, Some(0.5));
        assert_eq!(hosted.retry.first_byte_timeout, Duration::from_secs(1));
    }

    #[test]
    fn wire_and_reasoning_follow_the_model_then_config() {
        let openai = |model: &str, protocol: WireProtocol| ProviderConfig {
            model: model.to_owned(),
            protocol,
            ..provider("openai", "https://api.openai.com/v1")
        };
        // A reasoning model on Responses gets Codex's defaults.
        let mut codex = openai("gpt-5-codex", WireProtocol::OpenAiResponses);
        apply(&mut codex, &Config::default());
        assert_eq!(codex.effort.as_deref(), Some("medium"));
        assert!(codex.reasons);
        assert_eq!(codex.reasoning_summary.as_deref(), Some("auto"));
        // Chat Completions sends no effort unless configured, and then only
        // to a model that takes it, or one it was configured for.
        let config: Config = toml::from_str(
            "[model_options.openai]\nreasoning_effort = \"high\"\n\
             [model_options.\"openai/gpt-5\"]\nwire = \"chat\"\n\
             [model_options.\"openai/gpt-4.1\"]\nwire = \"responses\"\nreasoning_summary = \"off\"\n",
        )
        .unwrap();
        let mut gpt5 = openai("gpt-5", WireProtocol::OpenAiResponses);
        apply(&mut gpt5, &config);
        assert_eq!(gpt5.protocol, WireProtocol::OpenAi);
        assert_eq!(gpt5.effort.as_deref(), Some("high"));
        assert!(gpt5.reasons);
        assert_eq!(gpt5.reasoning_summary, None);
        let mut plain = openai("gpt-4o", WireProtocol::OpenAi);
        apply(&mut plain, &config);
        assert!(!plain.reasons, "gpt-4o takes no effort");
        let mut moved = openai("gpt-4.1", WireProtocol::OpenAi);
        apply(&mut moved, &config);
        assert_eq!(moved.protocol, WireProtocol::OpenAiResponses);
        assert!(!moved.reasons);
        assert_eq!(moved.reasoning_summary, None);
        assert!(toml::from_str::<Config>("[model_options.openai]\nwire = \"grpc\"\n").is_err());

        // The top-level effort is every wire's, and `effort` wins over its
        // other name.
        let config: Config = toml::from_str(
            "effort = \"low\"\n[model_options.\"openai/o3\"]\nreasoning_effort = \"high\"\neffort = \"max\"\n",
        )
        .unwrap();
        let mut codex = openai("gpt-5-codex", WireProtocol::OpenAiResponses);
        apply(&mut codex, &config);
        assert_eq!(codex.effort.as_deref(), Some("low"));
        let mut o3 = openai("o3", WireProtocol::OpenAi);
        apply(&mut o3, &config);
        assert_eq!(o3.effort.as_deref(), Some("max"));
        assert!(o3.reasons);
        assert!(
            toml::from_str::<Config>("[model_options.openai]\nreasoning_effort = \"lots\"\n")
                .is_err()
        );
    }
}

#[cfg(test)]
mod thinking_tests {
    use super::*;
    use alcove_model::Thinking;

    #[test]
    fn thinking_and_effort_settings_parse_or_say_why_not() {
        let entry = |toml: &str| toml::from_str::<ModelOptionsEntry>(toml);
        assert_eq!(
            entry("thinking = \"adaptive\"").unwrap().thinking,
            Some(Thinking::Adaptive)
        );
        assert_eq!(
            entry("thinking = \"off\"").unwrap().thinking,
            Some(Thinking::Off)
        );
        assert_eq!(
            entry("thinking = 6000").unwrap().thinking,
            Some(Thinking::Budget(6000))
        );
        assert_eq!(
            entry("effort = \"High\"").unwrap().effort.as_deref(),
            Some("high")
        );
        for bad in [
            "thinking = 10",
            "thinking = \"lots\"",
            "effort = \"extreme\"",
        ] {
            assert!(entry(bad).is_err(), "{bad}");
        }
    }
}
