//! The fake server's side of an answer: a scripted step written in the
//! request's wire protocol (streamed as SSE or whole as JSON), with the
//! usage its context model counted, and the plain JSON replies.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::stream::{self, StreamExt};
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use hyper::header::{CONTENT_TYPE, HeaderName, HeaderValue};
use hyper::{Response, StatusCode};
use serde_json::Value;
use tokio::sync::OwnedSemaphorePermit;

use crate::context::Accounting;
use crate::record::{Protocol, RecordedRequest};
use crate::script::{Step, StepKind};
use crate::server::{Body, Shared, now};
use crate::wire::{Ctx, Ending};
use crate::{anthropic, openai, responses};

pub(crate) async fn answer(
    step: Step,
    protocol: Protocol,
    record: &RecordedRequest,
    shared: &Shared,
    counts: Option<Accounting>,
) -> Response<Body> {
    // Queued behind the request being answered, in one-slot mode; the
    // permit lives as long as the answer is being sent.
    let permit = match &shared.slots {
        Some(slots) => Arc::clone(slots).acquire_owned().await.ok(),
        None => None,
    };
    if step.delay_ms > 0 {
        tokio::time::sleep(Duration::from_millis(step.delay_ms)).await;
    }
    let (mut input_tokens, output_tokens) = step.tokens();
    let (mut cache_read, mut cache_write) = step.cache.unwrap_or((0, 0));
    if let Some(counts) = counts.filter(|_| step.usage.is_none() && step.cache.is_none()) {
        input_tokens = counts.uncached;
        cache_read = counts.cache_read;
        cache_write = counts.cache_write;
    }
    let model = match record.model() {
        m if m.is_empty() => crate::script::DEFAULT_MODEL.to_string(),
        m => m,
    };
    let ctx = Ctx {
        model,
        ids: &shared.ids,
        input_tokens,
        output_tokens,
        cache_read,
        cache_write,
        include_usage: record.body["stream_options"]["include_usage"]
            .as_bool()
            .unwrap_or(false),
        created: now(),
        truncated: step.truncated,
        piece_chars: step.piece_chars,
        thinking: protocol == Protocol::Anthropic && crate::thinking::requested(&record.body),
        redacted_thinking: step.redacted_thinking,
    };
    let asked = responses::Asked {
        reasoning: step.reasoning.as_deref(),
        encrypted: responses::asks_encrypted(&record.body),
    };
    let mut response = match &step.kind {
        StepKind::Hang => std::future::pending().await,
        StepKind::HttpError { status, body } => {
            let status = StatusCode::from_u16(*status).unwrap_or_else(|_| {
                eprintln!("alcove-testkit: invalid scripted status {status}, sending 500");
                StatusCode::INTERNAL_SERVER_ERROR
            });
            let content_type = if serde_json::from_str::<Value>(body).is_ok() {
                "application/json"
            } else {
                "text/plain; charset=utf-8"
            };
            full_response(status, content_type, Bytes::from(body.clone()))
        }
        StepKind::Reply(blocks) if !record.is_stream() => {
            let body = match protocol {
                Protocol::Anthropic => anthropic::message(blocks, &ctx),
                Protocol::OpenAi => openai::completion(blocks, &ctx),
                Protocol::Responses => {
                    let (body, issued) = responses::response(blocks, asked, &ctx);
                    shared.remember(issued);
                    body
                }
            };
            json_response(StatusCode::OK, &body)
        }
        kind => {
            let sse = match protocol {
                Protocol::Anthropic => anthropic::stream(kind, &ctx),
                Protocol::OpenAi => openai::stream(kind, &ctx),
                Protocol::Responses => {
                    let (sse, issued) = responses::stream(kind, asked, &ctx);
                    shared.remember(issued);
                    sse
                }
            };
            sse_response(sse.events, sse.ending, step.first_byte_ms, permit)
        }
    };
    let headers = response.headers_mut();
    if let Some(seconds) = step.retry_after {
        headers.insert(
            HeaderName::from_static("retry-after"),
            HeaderValue::from(seconds),
        );
    }
    for (name, value) in &step.headers {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            headers.insert(name, value);
        }
    }
    let request_id = format!("req_fake{:06}", shared.ids.next());
    if let Ok(value) = HeaderValue::from_str(&request_id) {
        let name = match protocol {
            Protocol::Anthropic => "request-id",
            Protocol::OpenAi | Protocol::Responses => "x-request-id",
        };
        headers.insert(HeaderName::from_static(name), value);
    }
    response
}

fn full_response(status: StatusCode, content_type: &'static str, body: Bytes) -> Response<Body> {
    let body = Full::new(body)
        .map_err(|never| match never {})
        .boxed_unsync();
    let mut response = Response::new(body);
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

pub(crate) fn json_response(status: StatusCode, body: &Value) -> Response<Body> {
    full_response(status, "application/json", Bytes::from(body.to_string()))
}

fn sse_response(
    events: Vec<String>,
    ending: Ending,
    first_byte_ms: u64,
    permit: Option<OwnedSemaphorePermit>,
) -> Response<Body> {
    let wait = stream::once(async move {
        tokio::time::sleep(Duration::from_millis(first_byte_ms)).await;
    })
    .filter_map(|()| async { None::<Result<Frame<Bytes>, std::io::Error>> });
    // The permit is dropped with the body: when it is sent, or when the
    // client hangs up and hyper drops it.
    let frames = stream::iter(events).map(move |e| {
        let _held = &permit;
        Ok::<_, std::io::Error>(Frame::data(Bytes::from(e)))
    });
    let frames = wait.chain(frames);
    let tail = match ending {
        Ending::Complete => stream::empty().boxed(),
        Ending::Abort => stream::once(async {
            // Pending first lets hyper flush what was streamed; the error then
            // makes it drop the connection with the chunked body unterminated.
            tokio::time::sleep(Duration::from_millis(50)).await;
            Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionAborted,
                "fake server: scripted connection drop",
            ))
        })
        .boxed(),
        Ending::Stall => stream::pending().boxed(),
    };
    let body = BodyExt::boxed_unsync(StreamBody::new(frames.chain(tail)));
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(
        HeaderName::from_static("cache-control"),
        HeaderValue::from_static("no-cache"),
    );
    response
}
