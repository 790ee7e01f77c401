//! The OpenAI Responses client (`POST {base}/responses`, streamed): the
//! only wire OpenAI serves its coding models on (the `gpt-5-codex` family,
//! `codex-*`), and the one Codex CLI speaks.
//!
//! Requests are stateless (`store: false`): the whole history is sent each
//! time, with the reasoning items the model returned, encrypted
//! (`include: ["reasoning.encrypted_content"]`), so the model keeps its
//! reasoning across tool calls. The answer streams as typed events
//! (`response.output_item.added` / `.done`, `response.output_text.delta`,
//! `response.function_call_arguments.delta`,
//! `response.reasoning_summary_text.delta`, `response.completed` with the
//! usage); reasoning summaries are reported as thinking, never as the
//! answer's text. The request body is in `responses_body.rs`; HTTP,
//! retries and timeouts are the other wires' (`http.rs`, `retry.rs`).

use std::collections::BTreeMap;

use alcove_protocol::{ContentBlock, Message, Role, StopReason, Usage};
use reqwest::header::HeaderMap;
use serde_json::{Value, json};

use crate::http::Http;
use crate::retry::retryable_status;
use crate::serialized::SerializedCache;
use crate::sse::{Assembler, EventFailure, Feed, parse_json};
use crate::sse_decode::Event;
use crate::{Model, ModelError, ModelRequest, ModelResponse, ProviderConfig, StreamDelta};

/// A model served over the OpenAI Responses API.
#[derive(Debug, Clone)]
pub struct ResponsesModel {
    name: String,
    provider: String,
    model: String,
    headers: HeaderMap,
    http: Http,
    temperature: Option<f32>,
    context_window: Option<u64>,
    prompt_cache_key: Option<String>,
    reasons: bool,
    effort: Option<String>,
    reasoning_summary: Option<String>,
    vision: bool,
    /// Input items already serialized, reused by the next request.
    serialized: std::sync::Arc<SerializedCache>,
}

impl ResponsesModel {
    /// Builds the client. `config.base_url` includes `/v1`.
    pub fn new(config: ProviderConfig) -> Result<ResponsesModel, ModelError> {
        let base = config.base_url.trim_end_matches('/');
        let url = format!("{base}/responses");
        let headers = crate::openai::bearer_headers(&url, config.api_key.as_deref())?;
        Ok(ResponsesModel {
            name: format!("{}/{}", config.id, config.model),
            http: Http::new(&config.id, &url, config.retry, config.health.clone())?,
            provider: config.id,
            model: config.model,
            headers,
            temperature: config.temperature,
            context_window: config.context_window,
            prompt_cache_key: config.prompt_cache_key,
            reasons: config.reasons,
            effort: config.effort,
            reasoning_summary: config.reasoning_summary,
            vision: config.vision,
            serialized: Default::default(),
        })
    }

    /// The settings of one request: the effort is the request's (an
    /// agent's definition or call) over the configured one, sent as
    /// `reasoning.effort` to a model that takes it.
    fn settings<'a>(&'a self, request: &'a ModelRequest) -> Settings<'a> {
        Settings {
            temperature: self.temperature,
            prompt_cache_key: self.prompt_cache_key.as_deref(),
            reasoning_effort: request
                .effort
                .as_deref()
                .or(self.effort.as_deref())
                .filter(|_| self.reasons),
            reasoning_summary: self.reasoning_summary.as_deref(),
            vision: self.vision,
        }
    }
}

#[async_trait::async_trait]
impl Model for ResponsesModel {
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
        let body = Body::new(
            &self.model,
            request,
            self.settings(request),
            Some(&self.serialized),
        );
        self.http
            .complete(
                &self.headers,
                &body,
                || ResponsesAssembler::new(&self.provider),
                on_delta,
            )
            .await
    }
}

/// The JSON body of a Responses request, as a value (for tests).
#[cfg(test)]
fn request_body(model: &str, request: &ModelRequest, settings: Settings<'_>) -> Value {
    serde_json::to_value(Body::new(model, request, settings, None)).unwrap_or_default()
}

/// One output item being streamed, by its `output_index`.
#[derive(Debug)]
enum OutputItem {
    Message {
        text: String,
    },
    FunctionCall {
        call_id: String,
        name: String,
        arguments: String,
    },
    Reasoning {
        id: String,
        encrypted_content: Option<String>,
        summary: Vec<String>,
    },
    /// A kind this client does not keep (web search calls, …).
    Other,
}

impl OutputItem {
    /// The state for an item as `output_item.added` or `.done` gives it.
    fn from_json(item: &Value) -> OutputItem {
        let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
        match item["type"].as_str().unwrap_or_default() {
            "message" => OutputItem::Message {
                text: item["content"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|part| part["type"] == "output_text")
                    .filter_map(|part| part["text"].as_str())
                    .collect(),
            },
            "function_call" => OutputItem::FunctionCall {
                call_id: text(&item["call_id"]),
                name: text(&item["name"]),
                arguments: text(&item["arguments"]),
            },
            "reasoning" => OutputItem::Reasoning {
                id: text(&item["id"]),
                encrypted_content: item["encrypted_content"].as_str().map(str::to_owned),
                summary: item["summary"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|part| part["text"].as_str())
                    .map(str::to_owned)
                    .collect(),
            },
            _ => OutputItem::Other,
        }
    }
}

/// Rebuilds a Responses answer from its events.
#[derive(Debug)]
pub(crate) struct ResponsesAssembler {
    provider: String,
    items: BTreeMap<u64, OutputItem>,
    usage: Usage,
    /// `incomplete_details.reason` of a `response.incomplete`.
    incomplete: Option<String>,
}

impl ResponsesAssembler {
    /// A fresh assembler; `provider` names the provider in errors.
    pub(crate) fn new(provider: &str) -> ResponsesAssembler {
        ResponsesAssembler {
            provider: provider.to_owned(),
            items: BTreeMap::new(),
            usage: Usage::default(),
            incomplete: None,
        }
    }

    /// The end of the response (`completed` or `incomplete`): its usage,
    /// and its output items when the stream did not carry them.
    fn end(&mut self, response: &Value) {
        let usage = &response["usage"];
        if let Some(input) = usage["input_tokens"].as_u64() {
            // input_tokens counts the cached tokens too; keep them apart.
            let cached = usage["input_tokens_details"]["cached_tokens"]
                .as_u64()
                .unwrap_or(0)
                .min(input);
            self.usage.input_tokens = input - cached;
            self.usage.cache_read_tokens = cached;
        }
        if let Some(output) = usage["output_tokens"].as_u64() {
            self.usage.output_tokens = output;
        }
        if self.items.is_empty()
            && let Some(output) = response["output"].as_array()
        {
            for (index, item) in output.iter().enumerate() {
                self.items.insert(index as u64, OutputItem::from_json(item));
            }
        }
    }

    /// An error the provider reported in the stream (`error`, or the
    /// `error` of a `response.failed`).
    fn failure(&self, error: &Value) -> Result<Feed, EventFailure> {
        let message = error["message"]
            .as_str()
            .map(str::to_owned)
            .unwrap_or_else(|| error.to_string());
        let code = error["code"].as_str().unwrap_or_default();
        let body = json!({ "error": { "message": message, "code": code } }).to_string();
        if let Some(overflow) = crate::overflow::classify_overflow(&self.provider, 400, &body) {
            return Ok(Feed::Overflow(overflow));
        }
        let retryable = matches!(
            code,
            "server_error" | "rate_limit_exceeded" | "server_is_overloaded" | "slow_down"
        ) || error["code"]
            .as_u64()
            .and_then(|c| u16::try_from(c).ok())
            .is_some_and(retryable_status);
        Err(EventFailure {
            message: format!("the provider reported an error: {message}"),
            retryable,
        })
    }

    fn item_at(&mut self, v: &Value) -> Option<&mut OutputItem> {
        let index = v["output_index"].as_u64()?;
        self.items.get_mut(&index)
    }
}

impl Assembler for ResponsesAssembler {
    fn feed(&mut self, event: &Event) -> Result<Feed, EventFailure> {
        if event.data.trim().is_empty() {
            return Ok(Feed::Continue);
        }
        let v: Value = parse_json(event)?;
        let kind = v["type"].as_str().unwrap_or(event.event);
        match kind {
            "response.output_item.added" | "response.output_item.done" => {
                if let Some(index) = v["output_index"].as_u64() {
                    let item = OutputItem::from_json(&v["item"]);
                    let keep_streamed =
                        kind == "response.output_item.added" || matches!(item, OutputItem::Other);
                    if !(keep_streamed && self.items.contains_key(&index)) {
                        self.items.insert(index, item);
                    }
                }
                Ok(Feed::Continue)
            }
            "response.output_text.delta" => {
                let delta = v["delta"].as_str().unwrap_or_default();
                match self.item_at(&v) {
                    Some(OutputItem::Message { text }) => text.push_str(delta),
                    _ => {
                        let index = v["output_index"].as_u64().unwrap_or(u64::MAX);
                        self.items.insert(
                            index,
                            OutputItem::Message {
                                text: delta.to_owned(),
                            },
                        );
                    }
                }
                if delta.is_empty() {
                    Ok(Feed::Continue)
                } else {
                    Ok(Feed::Text(delta.to_owned()))
                }
            }
            "response.function_call_arguments.delta" => {
                let delta = v["delta"].as_str().unwrap_or_default();
                if let Some(OutputItem::FunctionCall { arguments, .. }) = self.item_at(&v) {
                    arguments.push_str(delta);
                }
                Ok(Feed::Continue)
            }
            "response.reasoning_summary_text.delta" => {
                let delta = v["delta"].as_str().unwrap_or_default();
                let part = v["summary_index"].as_u64().unwrap_or(0);
                if let Some(OutputItem::Reasoning { summary, .. }) = self.item_at(&v) {
                    // A new part starts at the next index; an index beyond
                    // it (a fuzzer's 2^63) is a new part too, not a gap to
                    // fill.
                    let part =
                        usize::try_from(part).map_or(summary.len(), |p| p.min(summary.len()));
                    if part == summary.len() {
                        summary.push(String::new());
                    }
                    if let Some(text) = summary.get_mut(part) {
                        text.push_str(delta);
                    }
                }
                if delta.is_empty() {
                    Ok(Feed::Continue)
                } else {
                    Ok(Feed::Thinking(delta.to_owned()))
                }
            }
            // Raw reasoning text (open-weight models on this wire): shown,
            // not kept (it is not sent back).
            "response.reasoning_text.delta" => match v["delta"].as_str() {
                Some(delta) if !delta.is_empty() => Ok(Feed::Thinking(delta.to_owned())),
                _ => Ok(Feed::Continue),
            },
            "response.completed" => {
                self.end(&v["response"]);
                Ok(Feed::Done)
            }
            "response.incomplete" => {
                let response = &v["response"];
                self.incomplete = Some(
                    response["incomplete_details"]["reason"]
                        .as_str()
                        .unwrap_or("incomplete")
                        .to_owned(),
                );
                self.end(response);
                Ok(Feed::Done)
            }
            "response.failed" => self.failure(&v["response"]["error"]),
            "error" => self.failure(&v),
            _ => Ok(Feed::Continue),
        }
    }

    fn finish(self, done: bool) -> Result<ModelResponse, String> {
        if !done {
            return Err("the stream ended before response.completed".into());
        }
        let mut content = Vec::new();
        let mut has_calls = false;
        for (index, item) in self.items {
            match item {
                OutputItem::Message { text } if text.is_empty() => {}
                OutputItem::Message { text } => content.push(ContentBlock::Text { text }),
                OutputItem::FunctionCall {
                    call_id,
                    name,
                    arguments,
                } => {
                    has_calls = true;
                    let input = if arguments.trim().is_empty() {
                        json!({})
                    } else {
                        serde_json::from_str(&arguments).unwrap_or(Value::String(arguments))
                    };
                    let id = if call_id.is_empty() {
                        format!("call_{index}")
                    } else {
                        call_id
                    };
                    content.push(ContentBlock::ToolUse { id, name, input });
                }
                OutputItem::Reasoning {
                    id,
                    encrypted_content,
                    summary,
                } => {
                    if !id.is_empty() {
                        content.push(ContentBlock::Reasoning {
                            id,
                            encrypted_content,
                            summary,
                        });
                    }
                }
                OutputItem::Other => {}
            }
        }
        let stop_reason = match self.incomplete.as_deref() {
            Some("max_output_tokens") => StopReason::MaxTokens,
            Some(other) => StopReason::Other(other.to_owned()),
            None if has_calls => StopReason::ToolUse,
            None => StopReason::EndTurn,
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

#[path = "responses_body.rs"]
mod body;
use body::Body;
use body::Settings;

#[cfg(test)]
#[path = "responses_tests.rs"]
mod tests;
