//! Asking a local server how large its context window is.
//!
//! llama.cpp's server reports the window it was started with at `GET
//! /props` (`default_generation_settings.n_ctx`); Ollama reports a model's
//! at `POST /api/show` (`num_ctx` in its parameters when set, else the
//! model's `<arch>.context_length`). Both live beside `/v1`, not under it.
//! Hosted APIs report nothing, so callers only ask OpenAI-compatible
//! servers, with a short timeout, and fall back to their table.

use std::time::Duration;

use serde_json::{Value, json};

use crate::http::client_builder;
use crate::{ProviderConfig, WireProtocol};

/// The window the server of `config` reports, with where it came from
/// (`"llama.cpp /props"` or `"ollama /api/show"`); `None` when neither
/// answers within `timeout`.
pub async fn probe_context_window(
    config: &ProviderConfig,
    timeout: Duration,
) -> Option<(u64, &'static str)> {
    if config.protocol != WireProtocol::OpenAi {
        return None;
    }
    let client = client_builder(&[config.base_url.as_str()])
        .no_proxy()
        .timeout(timeout)
        .connect_timeout(timeout)
        .build()
        .ok()?;
    let base = config.base_url.trim_end_matches('/');
    let root = base.strip_suffix("/v1").unwrap_or(base);
    let props = async {
        let response = client.get(format!("{root}/props")).send().await.ok()?;
        if !response.status().is_success() {
            return None;
        }
        let body: Value = response.json().await.ok()?;
        llama_cpp_window(&body).map(|n| (n, "llama.cpp /props"))
    };
    let show = async {
        let response = client
            .post(format!("{root}/api/show"))
            .json(&json!({"model": config.model}))
            .send()
            .await
            .ok()?;
        if !response.status().is_success() {
            return None;
        }
        let body: Value = response.json().await.ok()?;
        ollama_window(&body).map(|n| (n, "ollama /api/show"))
    };
    let (props, show) = futures::join!(props, show);
    props.or(show)
}

/// `n_ctx` from llama.cpp's `/props`.
pub(crate) fn llama_cpp_window(props: &Value) -> Option<u64> {
    props["default_generation_settings"]["n_ctx"]
        .as_u64()
        .or_else(|| props["n_ctx"].as_u64())
        .filter(|n| *n > 0)
}

/// The window from Ollama's `/api/show`: the `num_ctx` parameter the model
/// runs with when one is set, else the length the model was trained for.
pub(crate) fn ollama_window(show: &Value) -> Option<u64> {
    let num_ctx = show["parameters"].as_str().and_then(|parameters| {
        parameters.lines().find_map(|line| {
            let mut words = line.split_whitespace();
            (words.next() == Some("num_ctx"))
                .then(|| words.next()?.parse::<u64>().ok())
                .flatten()
        })
    });
    num_ctx
        .or_else(|| {
            show["model_info"].as_object().and_then(|info| {
                info.iter()
                    .find(|(key, _)| key.ends_with(".context_length"))
                    .and_then(|(_, value)| value.as_u64())
            })
        })
        .filter(|n| *n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_report_their_windows() {
        let props = json!({"default_generation_settings": {"n_ctx": 8192}, "total_slots": 1});
        assert_eq!(llama_cpp_window(&props), Some(8192));
        let show = json!({
            "parameters": "stop \"<|eot|>\"\nnum_ctx 16384",
            "model_info": {"llama.context_length": 131072},
        });
        assert_eq!(ollama_window(&show), Some(16384));
        let show = json!({"model_info": {"qwen2.context_length": 32768}});
        assert_eq!(ollama_window(&show), Some(32768));
        assert_eq!(ollama_window(&json!({})), None);
    }
}
