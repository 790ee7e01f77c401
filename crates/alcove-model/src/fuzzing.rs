//! Entry points for alcove's fuzz targets (`fuzz/`) and their CI smoke test
//! (`crates/alcove-fuzz`), which must reach the SSE event-to-message
//! assembly that the clients keep private.
//!
//! This module exists only for fuzzing: it is hidden from the docs, is not
//! part of the crate's API, and may change with any release.

use std::sync::Mutex;
use std::time::Duration;

use crate::anthropic::AnthropicAssembler;
use crate::openai::OpenAiAssembler;
use crate::responses::ResponsesAssembler;
use crate::retry::AttemptError;
use crate::sse::{Assembler, Timeouts, read_stream as read_sse};
use crate::{ModelResponse, StreamDelta, WireProtocol};

thread_local! {
    /// One single-threaded runtime per thread, reused across inputs (the
    /// idle timeout needs tokio's timer even though no input ever waits).
    static RUNTIME: Option<tokio::runtime::Runtime> = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .ok();
}

/// Reads `chunks`, delivered one after the other as a response body would
/// arrive, as one streamed `protocol` response, exactly as the client does
/// after a 2xx answer. Returns the assembled response (or the failure's
/// text) and the text deltas reported on the way.
pub fn read_stream(
    protocol: WireProtocol,
    chunks: &[&[u8]],
) -> (Result<ModelResponse, String>, Vec<String>) {
    match protocol {
        WireProtocol::Anthropic => run(AnthropicAssembler::default(), chunks),
        WireProtocol::OpenAi => run(OpenAiAssembler::default(), chunks),
        WireProtocol::OpenAiResponses => run(ResponsesAssembler::new("fuzz"), chunks),
    }
}

fn run<A: Assembler>(
    assembler: A,
    chunks: &[&[u8]],
) -> (Result<ModelResponse, String>, Vec<String>) {
    let deltas = Mutex::new(Vec::new());
    let record = |delta: StreamDelta| {
        if let StreamDelta::Text(text) = delta
            && let Ok(mut deltas) = deltas.lock()
        {
            deltas.push(text);
        }
    };
    let body = futures::stream::iter(chunks.iter().copied().map(Ok::<&[u8], std::io::Error>));
    let result = RUNTIME.with(|runtime| match runtime {
        Some(runtime) => runtime
            .block_on(read_sse(
                body,
                assembler,
                Timeouts::idle_only(Duration::from_secs(60)),
                &record,
            ))
            .map_err(|error| match error {
                AttemptError::MidStream(error) | AttemptError::Fatal(error) => error.to_string(),
                AttemptError::Retryable { error, .. } => format!("retryable: {error}"),
            }),
        None => Err("no tokio runtime could be built".to_owned()),
    });
    let deltas = deltas.into_inner().unwrap_or_default();
    (result, deltas)
}
