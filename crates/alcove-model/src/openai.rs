//! The OpenAI Chat Completions client (`POST {base}/chat/completions`,
//! streamed), which also serves Ollama, vLLM, llama.cpp's server and
//! OpenRouter, and the discovery of such a server on this machine.
//!
//! Chat Completions has no content blocks: tool results become `tool` role
//! messages and tool calls arrive as `tool_calls` fragments keyed by
//! `index`, so this file translates both ways (the request in
//! `openai_body.rs`).

use std::collections::BTreeMap;
use std::time::Duration;

use alcove_protocol::{ContentBlock, Message, Role, StopReason, Usage};
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue};
use serde_json::{Value, json};

use crate::http::{Http, client_builder};
use crate::retry::retryable_status;
use crate::serialized::SerializedCache;
use crate::sse::{Assembler, EventFailure, Feed, parse_json};
use crate::sse_decode::Event;
use crate::text_calls;
use crate::{
    LocalServer, Model, ModelError, ModelRequest, ModelResponse, ProviderConfig, StreamDelta,
};

/// A model served over the OpenAI Chat Completions API.
#[derive(Debug, Clone)]
pub struct OpenAiModel {
    name: String,
    model: String,
    headers: HeaderMap,
    http: Http,
    temperature: Option<f32>,
    text_tool_calls: bool,
    context_window: Option<u64>,
    prompt_cache_key: Option<String>,
    reasons: bool,
    effort: Option<String>,
    vision: bool,
    /// Messages already serialized, reused by the next request.
    serialized: std::sync::Arc<SerializedCache>,
}

/// The headers of a streamed request to an OpenAI-style endpoint (either
/// wire): `Accept: text/event-stream` and, with a key, `Authorization:
/// Bearer` marked sensitive.
pub(crate) fn bearer_headers(url: &str, api_key: Option<&str>) -> Result<HeaderMap, ModelError> {
    let mut headers = HeaderMap::new();
    headers.insert(
        reqwest::header::ACCEPT,
        HeaderValue::from_static("text/event-stream"),
    );
    if let Some(key) = api_key.filter(|k| !k.is_empty()) {
        let mut value =
            HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| ModelError::Connect {
                url: url.to_owned(),
                reason: "the API key holds characters not allowed in an HTTP header".into(),
            })?;
        value.set_sensitive(true);
        headers.insert(AUTHORIZATION, value);
    }
    Ok(headers)
}

impl OpenAiModel {
    /// Builds the client. `config.base_url` includes `/v1`.
    pub fn new(config: ProviderConfig) -> Result<OpenAiModel, ModelError> {
        let base = config.base_url.trim_end_matches('/');
        let url = format!("{base}/chat/completions");
        let headers = bearer_headers(&url, config.api_key.as_deref())?;
        Ok(OpenAiModel {
            name: format!("{}/{}", config.id, config.model),
            http: Http::new(&config.id, &url, config.retry, config.health.clone())?,
            model: config.model,
            headers,
            temperature: config.temperature,
            text_tool_calls: config.text_tool_calls,
            context_window: config.context_window,
            prompt_cache_key: config.prompt_cache_key,
            reasons: config.reasons,
            effort: config.effort,
            vision: config.vision,
            serialized: Default::default(),
        })
    }
}

#[async_trait::async_trait]
impl Model for OpenAiModel {
    fn name(&self) -> &str {
        &self.name
    }

    fn context_window(&self) -> Option<u64> {
        self.context_window
    }

    async fn complete(
        &self,
        request: &ModelRequest,
        on_delta: &(dyn Fn(StreamDelta) + Send + Sync),
    ) -> Result<ModelResponse, ModelError> {
        let mut body = Body::with_vision(&self.model, request, Some(&self.serialized), self.vision);
        body.temperature = self.temperature;
        body.prompt_cache_key = self.prompt_cache_key.as_deref();
        // The one effort knob, as this wire names it, for a model that
        // takes it: the request's (an agent's definition or call) over
        // the configured one.
        body.reasoning_effort = request
            .effort
            .as_deref()
            .or(self.effort.as_deref())
            .filter(|_| self.reasons);
        let mut response = self
            .http
            .complete(&self.headers, &body, OpenAiAssembler::default, on_delta)
            .await?;
        if self.text_tool_calls {
            text_calls::recover(&mut response, &request.tools, &request.messages);
        }
        Ok(response)
    }
}

/// The JSON body of a Chat Completions request, as a value (for tests).
#[cfg(test)]
pub(crate) fn request_body(model: &str, request: &ModelRequest) -> Value {
    serde_json::to_value(Body::new(model, request, None)).unwrap_or_default()
}

/// A tool call being streamed.
#[derive(Debug, Default)]
struct Call {
    id: String,
    name: String,
    arguments: String,
}

/// Rebuilds a Chat Completions response from its SSE chunks.
#[derive(Debug, Default)]
pub(crate) struct OpenAiAssembler {
    text: String,
    calls: BTreeMap<u64, Call>,
    finish_reason: Option<String>,
    usage: Usage,
}

impl Assembler for OpenAiAssembler {
    fn feed(&mut self, event: &Event) -> Result<Feed, EventFailure> {
        let data = event.data.trim();
        if data == "[DONE]" {
            return Ok(Feed::Done);
        }
        if data.is_empty() {
            return Ok(Feed::Continue);
        }
        let v: Value = parse_json(event)?;
        if let Some(error) = v.get("error").filter(|e| !e.is_null()) {
            let message = error["message"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| error.to_string());
            let code = error["code"].as_u64().and_then(|c| u16::try_from(c).ok());
            return Err(EventFailure {
                message: format!("the provider reported an error: {message}"),
                retryable: code.is_some_and(retryable_status),
            });
        }
        if let Some(usage) = v.get("usage").filter(|u| u.is_object()) {
            if let Some(input) = usage["prompt_tokens"].as_u64() {
                // prompt_tokens counts cached tokens too; keep them apart.
                let cached = usage["prompt_tokens_details"]["cached_tokens"]
                    .as_u64()
                    .unwrap_or(0)
                    .min(input);
                self.usage.input_tokens = input - cached;
                self.usage.cache_read_tokens = cached;
            }
            if let Some(output) = usage["completion_tokens"].as_u64() {
                self.usage.output_tokens = output;
            }
        }
        let choice = &v["choices"][0];
        if let Some(reason) = choice["finish_reason"].as_str() {
            self.finish_reason = Some(reason.to_string());
        }
        let delta = &choice["delta"];
        if let Some(pieces) = delta["tool_calls"].as_array() {
            for (position, piece) in pieces.iter().enumerate() {
                let index = piece["index"].as_u64().unwrap_or(position as u64);
                let call = self.calls.entry(index).or_default();
                let function = &piece["function"];
                if let Some(id) = piece["id"].as_str().filter(|s| !s.is_empty())
                    && call.id.is_empty()
                {
                    call.id = id.to_string();
                }
                if let Some(name) = function["name"].as_str().filter(|s| !s.is_empty())
                    && call.name.is_empty()
                {
                    call.name = name.to_string();
                }
                match &function["arguments"] {
                    Value::String(args) => call.arguments.push_str(args),
                    // Some servers send the arguments as an object.
                    Value::Object(_) => call.arguments.push_str(&function["arguments"].to_string()),
                    _ => {}
                }
            }
        }
        match delta["content"].as_str() {
            Some(text) if !text.is_empty() => {
                self.text.push_str(text);
                Ok(Feed::Text(text.to_string()))
            }
            // The thinking that llama.cpp, vLLM and DeepSeek stream apart
            // from the answer (`reasoning_content`; `reasoning` on some
            // servers): shown as thinking, never kept as the answer's text,
            // so never sent back. (A chunk carrying both reports the text.)
            _ => match delta["reasoning_content"]
                .as_str()
                .or_else(|| delta["reasoning"].as_str())
            {
                Some(thinking) if !thinking.is_empty() => Ok(Feed::Thinking(thinking.to_owned())),
                _ => Ok(Feed::Continue),
            },
        }
    }

    fn finish(self, done: bool) -> Result<ModelResponse, String> {
        if !done && self.finish_reason.is_none() {
            return Err("the stream ended before [DONE] or a finish_reason".into());
        }
        let mut content = Vec::new();
        if !self.text.is_empty() {
            content.push(ContentBlock::Text { text: self.text });
        }
        let has_calls = !self.calls.is_empty();
        for (index, call) in self.calls {
            let input = if call.arguments.trim().is_empty() {
                json!({})
            } else {
                serde_json::from_str(&call.arguments).unwrap_or(Value::String(call.arguments))
            };
            let id = if call.id.is_empty() {
                format!("call_{index}")
            } else {
                call.id
            };
            content.push(ContentBlock::ToolUse {
                id,
                name: call.name,
                input,
            });
        }
        let stop_reason = match self.finish_reason.as_deref() {
            // Some local servers say "stop" even when they called tools.
            Some("stop") | None if has_calls => StopReason::ToolUse,
            Some("stop") | None => StopReason::EndTurn,
            Some("tool_calls" | "function_call") => StopReason::ToolUse,
            Some("length") => StopReason::MaxTokens,
            Some(other) => StopReason::Other(other.to_string()),
        };
        Ok(ModelResponse {
            message: Message {
                role: Role::Assistant,
                content,
            },
            stop_reason,
            usage: self.usage,
        })
    }
}

/// The well-known local servers: Ollama, then llama.cpp.
const LOCAL_SERVERS: [&str; 2] = ["http://127.0.0.1:11434/v1", "http://127.0.0.1:8080/v1"];

/// Returns the first of the well-known local servers that answers.
pub(crate) async fn discover_local(timeout: Duration) -> Option<LocalServer> {
    discover_among(&LOCAL_SERVERS, timeout).await
}

/// Asks every base URL's `GET {base}/models` at once and returns the first
/// base, in the given order, that answered 2xx within `timeout`, with the
/// model ids it lists.
pub(crate) async fn discover_among(bases: &[&str], timeout: Duration) -> Option<LocalServer> {
    let client = client_builder(bases)
        .no_proxy()
        .timeout(timeout)
        .connect_timeout(timeout)
        .build()
        .ok()?;
    let probes = bases.iter().map(|base| {
        let client = &client;
        async move {
            let url = format!("{}/models", base.trim_end_matches('/'));
            let response = match tokio::time::timeout(timeout, client.get(url).send()).await {
                Ok(Ok(response)) if response.status().is_success() => response,
                _ => return None,
            };
            let listing: Value = response.json().await.unwrap_or(Value::Null);
            let models = listing
                .get("data")
                .and_then(Value::as_array)
                .map(|data| {
                    data.iter()
                        .filter_map(|model| {
                            model.get("id").and_then(Value::as_str).map(str::to_owned)
                        })
                        .collect()
                })
                .unwrap_or_default();
            Some(LocalServer {
                base_url: base.trim_end_matches('/').to_string(),
                models,
            })
        }
    });
    let answers = futures::future::join_all(probes).await;
    answers.into_iter().flatten().next()
}

#[path = "openai_body.rs"]
mod body;
use body::Body;

#[cfg(test)]
#[path = "openai_tests.rs"]
mod tests;
