//! Choosing the model provider from flags, environment and config.
//!
//! `--model` > `ALCOVE_MODEL` > config `model`, written `provider/name`.
//! Built-in providers follow the official SDKs' environment variables;
//! `[providers.<id>]` adds more. With nothing configured, a key in the
//! environment picks its provider, and failing that a local
//! OpenAI-compatible server (Ollama, llama.cpp) is looked for.

use std::time::Duration;

use alcove_model::{ProviderConfig, RetryPolicy, WireProtocol};

use crate::UsageError;
use crate::settings::Config;

const DEFAULT_ANTHROPIC_MODEL: &str = "claude-sonnet-4-5";
const DEFAULT_OPENAI_MODEL: &str = "gpt-4.1";
const OLLAMA_BASE_URL: &str = "http://127.0.0.1:11434/v1";

/// How to configure a provider, for the error when none is found.
const HOW_TO_CONFIGURE: &str = "no model provider is configured. Do one of:\n  \
     export ANTHROPIC_API_KEY=...            (Anthropic; optional ANTHROPIC_BASE_URL, without /v1)\n  \
     export OPENAI_API_KEY=...               (OpenAI; optional OPENAI_BASE_URL, with /v1)\n  \
     start Ollama (127.0.0.1:11434) or llama.cpp's server (127.0.0.1:8080) and pass --model ollama/<name>\n  \
     or add to config.toml:  model = \"<id>/<name>\"  with  [providers.<id>] kind = \"openai\", base_url = \"http://host:port/v1\", api_key_env = \"MY_KEY\"";

/// Reads an environment variable, treating empty as unset.
fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.is_empty())
}

/// Resolves the provider for this run.
pub(crate) async fn resolve(
    flag: Option<&str>,
    config: &Config,
) -> Result<ProviderConfig, UsageError> {
    // `ALCOVE_MODEL` is in `config.model` (below `-c`): `settings::model::ENV`.
    let spec = flag.map(str::to_owned).or_else(|| config.model.clone());
    match spec {
        Some(spec) => resolve_spec(&spec, config),
        None => discover().await,
    }
}

/// Resolves an explicit `provider/name`.
pub(crate) fn resolve_spec(spec: &str, config: &Config) -> Result<ProviderConfig, UsageError> {
    let Some((id, model)) = spec
        .split_once('/')
        .filter(|(id, model)| !id.is_empty() && !model.is_empty())
    else {
        return Err(UsageError(format!(
            "--model `{spec}` must be written provider/name, e.g. anthropic/{DEFAULT_ANTHROPIC_MODEL} or ollama/llama3.2"
        )));
    };
    if let Some(entry) = config.providers.get(id) {
        let protocol = match entry.kind.as_str() {
            "anthropic" => WireProtocol::Anthropic,
            "openai" => WireProtocol::OpenAi,
            "openai-responses" => WireProtocol::OpenAiResponses,
            other => {
                return Err(UsageError(format!(
                    "[providers.{id}] kind = \"{other}\" is not known; use \"anthropic\", \"openai\" (Chat Completions) or \"openai-responses\""
                )));
            }
        };
        let api_key = match &entry.api_key_env {
            Some(var) => Some(env(var).ok_or_else(|| {
                UsageError(format!(
                    "[providers.{id}] reads its key from {var}, which is not set"
                ))
            })?),
            None => None,
        };
        return Ok(provider(
            id,
            protocol,
            entry.base_url.clone(),
            api_key,
            model,
        ));
    }
    match id {
        "anthropic" => {
            let key = env("ANTHROPIC_API_KEY").ok_or_else(|| {
                UsageError("--model anthropic/… needs ANTHROPIC_API_KEY to be set".to_owned())
            })?;
            let base =
                env("ANTHROPIC_BASE_URL").unwrap_or_else(|| "https://api.anthropic.com".to_owned());
            Ok(provider(
                id,
                WireProtocol::Anthropic,
                base,
                Some(key),
                model,
            ))
        }
        "openai" => {
            let base = env("OPENAI_BASE_URL");
            let key = env("OPENAI_API_KEY");
            if base.is_none() && key.is_none() {
                return Err(UsageError(
                    "--model openai/… needs OPENAI_API_KEY (or OPENAI_BASE_URL for a server without keys)"
                        .to_owned(),
                ));
            }
            let base = base.unwrap_or_else(|| "https://api.openai.com/v1".to_owned());
            Ok(provider(id, openai_protocol(model), base, key, model))
        }
        "ollama" => {
            let base = env("OLLAMA_BASE_URL").unwrap_or_else(|| OLLAMA_BASE_URL.to_owned());
            Ok(provider(id, WireProtocol::OpenAi, base, None, model))
        }
        other => {
            let mut known = vec!["anthropic", "openai", "ollama"];
            known.extend(config.providers.keys().map(String::as_str));
            Err(UsageError(format!(
                "unknown provider `{other}` (known: {}). Add [providers.{other}] with kind and base_url to config.toml",
                known.join(", ")
            )))
        }
    }
}

async fn discover() -> Result<ProviderConfig, UsageError> {
    if let Some(key) = env("ANTHROPIC_API_KEY") {
        let base =
            env("ANTHROPIC_BASE_URL").unwrap_or_else(|| "https://api.anthropic.com".to_owned());
        return Ok(provider(
            "anthropic",
            WireProtocol::Anthropic,
            base,
            Some(key),
            DEFAULT_ANTHROPIC_MODEL,
        ));
    }
    if let Some(key) = env("OPENAI_API_KEY") {
        let base = env("OPENAI_BASE_URL").unwrap_or_else(|| "https://api.openai.com/v1".to_owned());
        return Ok(provider(
            "openai",
            openai_protocol(DEFAULT_OPENAI_MODEL),
            base,
            Some(key),
            DEFAULT_OPENAI_MODEL,
        ));
    }
    if let Some(local) = alcove_model::discover_local(Duration::from_millis(300)).await {
        if let Some(model) = local.models.first() {
            return Ok(provider(
                "local",
                WireProtocol::OpenAi,
                local.base_url.clone(),
                None,
                model,
            ));
        }
        return Err(UsageError(format!(
            "found a local server at {} but it lists no models; pull one and pass --model ollama/<name>",
            local.base_url
        )));
    }
    Err(UsageError(HOW_TO_CONFIGURE.to_owned()))
}

/// The built-in `openai` provider's wire for `model` (`openai_wire.rs`).
fn openai_protocol(model: &str) -> WireProtocol {
    if crate::openai_wire::prefers_responses(model) {
        WireProtocol::OpenAiResponses
    } else {
        WireProtocol::OpenAi
    }
}

fn provider(
    id: &str,
    protocol: WireProtocol,
    base_url: String,
    api_key: Option<String>,
    model: &str,
) -> ProviderConfig {
    ProviderConfig {
        id: id.to_owned(),
        protocol,
        base_url: base_url.trim_end_matches('/').to_owned(),
        api_key,
        model: model.to_owned(),
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
