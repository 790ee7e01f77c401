//! Reading a model's Server-Sent Events stream into one response.
//!
//! Each wire protocol supplies an [`Assembler`]: a pure state machine that
//! takes parsed SSE events and builds the assistant message. [`read_stream`]
//! drives one over any byte stream (reqwest's `bytes_stream()` in production,
//! canned chunks in tests), reports text as it comes, enforces the idle
//! timeout, and classifies every way the stream can fail so the retry loop
//! can decide what to do. A stream that ends without the protocol's end
//! marker is an error, never a short answer.

use std::error::Error;
use std::time::Duration;

use futures::{Stream, StreamExt};

use crate::retry::AttemptError;
use crate::sse_decode::{Decoder, Event};
use crate::{ModelError, ModelResponse, StreamDelta};

/// What one event did to the response being built.
#[derive(Debug, PartialEq)]
pub(crate) enum Feed {
    /// Nothing to report; keep reading.
    Continue,
    /// A piece of assistant text to report; keep reading.
    Text(String),
    /// A piece of thinking to report; keep reading.
    Thinking(String),
    /// The protocol's end marker: the response is complete.
    Done,
}

/// An event that ends the attempt: an error event, or data that is not
/// the protocol.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct EventFailure {
    /// What went wrong, for the user.
    pub(crate) message: String,
    /// Whether the provider flagged it as transient (overloaded, …), so it
    /// deserves a backoff retry rather than the single restart.
    pub(crate) retryable: bool,
}

impl EventFailure {
    /// A failure that gets the single mid-stream restart.
    pub(crate) fn new(message: impl Into<String>) -> EventFailure {
        EventFailure {
            message: message.into(),
            retryable: false,
        }
    }
}

/// A wire protocol's event-to-message state machine.
pub(crate) trait Assembler: Send {
    /// Takes one event.
    fn feed(&mut self, event: &Event) -> Result<Feed, EventFailure>;

    /// Builds the response once the stream is over. `done` tells whether
    /// the end marker arrived; without it an assembler may still accept
    /// (when it saw another sign of completion) or refuse with the reason.
    fn finish(self, done: bool) -> Result<ModelResponse, String>;
}

/// Parses an event's data as JSON (a `Value`, or a typed shape that
/// borrows from it), or fails as malformed.
pub(crate) fn parse_json<'a, T: serde::Deserialize<'a>>(
    event: &'a Event,
) -> Result<T, EventFailure> {
    serde_json::from_str(event.data).map_err(|e| {
        EventFailure::new(format!(
            "malformed event data ({e}): {}",
            cut(event.data, 200)
        ))
    })
}

/// How long [`read_stream`] waits: for the first event until a deadline
/// (the request's time to first byte), then for each next one.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timeouts {
    /// When the first event must have arrived.
    pub(crate) first_event: tokio::time::Instant,
    /// The first-byte limit the deadline came from (for the error).
    pub(crate) first_byte: Duration,
    /// The longest silence between two events.
    pub(crate) idle: Duration,
}

impl Timeouts {
    /// One idle limit for every event, the first included (tests, fuzzing).
    pub(crate) fn idle_only(idle: Duration) -> Timeouts {
        Timeouts {
            first_event: tokio::time::Instant::now() + idle,
            first_byte: idle,
            idle,
        }
    }
}

/// Reads `bytes` as SSE through `assembler` until the response is complete.
/// Every failure here happened after the response had started, so each is
/// a [`AttemptError::MidStream`], except an event flagged retryable and a
/// first event that never came (nothing was received: retried as transient).
pub(crate) async fn read_stream<S, B, E, A>(
    bytes: S,
    mut assembler: A,
    timeouts: Timeouts,
    on_delta: &(dyn Fn(StreamDelta) + Send + Sync),
) -> Result<ModelResponse, AttemptError>
where
    S: Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
    E: Error,
    A: Assembler,
{
    let mut bytes = std::pin::pin!(bytes);
    let mut decoder = Decoder::default();
    let mut shown = false;
    // The first event must come by `first_event`; each later one within
    // the idle timeout of the one before. Bytes that complete no event
    // (comments, a part of an event) do not count.
    let mut deadline = None;
    let done = 'read: loop {
        let mut dispatched = false;
        loop {
            let event = match decoder.next() {
                Ok(Some(event)) => event,
                Ok(None) => break,
                Err(e) => {
                    return Err(AttemptError::MidStream(ModelError::Stream(format!(
                        "the stream is not UTF-8: {e}"
                    ))));
                }
            };
            dispatched = true;
            match assembler.feed(&event) {
                Ok(Feed::Continue) => {}
                Ok(Feed::Text(text)) => {
                    shown = true;
                    on_delta(StreamDelta::Text(text));
                }
                Ok(Feed::Thinking(text)) => {
                    shown = true;
                    on_delta(StreamDelta::Thinking(text));
                }
                Ok(Feed::Done) => break 'read true,
                Err(failure) if failure.retryable => {
                    return Err(AttemptError::Retryable {
                        error: ModelError::Stream(failure.message),
                        retry_after: None,
                        shown,
                    });
                }
                Err(failure) => {
                    return Err(AttemptError::MidStream(ModelError::Stream(failure.message)));
                }
            }
        }
        if dispatched {
            deadline = Some(tokio::time::Instant::now() + timeouts.idle);
        }
        let wait = deadline.unwrap_or(timeouts.first_event);
        let chunk = match tokio::time::timeout_at(wait, bytes.next()).await {
            Ok(chunk) => chunk,
            Err(_) if deadline.is_none() => {
                return Err(AttemptError::Retryable {
                    error: ModelError::FirstByteTimeout(timeouts.first_byte),
                    retry_after: None,
                    shown: false,
                });
            }
            Err(_) => {
                return Err(AttemptError::MidStream(ModelError::IdleTimeout(
                    timeouts.idle,
                )));
            }
        };
        match chunk {
            None => break false,
            Some(Ok(chunk)) => decoder.push(chunk.as_ref()),
            Some(Err(e)) => {
                return Err(AttemptError::MidStream(ModelError::Stream(format!(
                    "the connection broke: {}",
                    error_chain(&e, false)
                ))));
            }
        }
    };
    assembler
        .finish(done)
        .map_err(|reason| AttemptError::MidStream(ModelError::Stream(reason)))
}

/// An error's message followed by its sources' (each only when it adds
/// something), joined by `: `. With `skip_top`, the top message is left
/// out when there are sources (reqwest's only repeats the URL).
pub(crate) fn error_chain(error: &dyn Error, skip_top: bool) -> String {
    let mut parts: Vec<String> = Vec::new();
    if !skip_top || error.source().is_none() {
        parts.push(error.to_string());
    }
    let mut source = error.source();
    while let Some(err) = source {
        let text = err.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        source = err.source();
    }
    parts.join(": ")
}

/// `text` cut to at most `max` bytes (on a character boundary), with an
/// ellipsis when something was dropped.
pub(crate) fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// Test helpers shared by the protocol modules' fixtures.
#[cfg(test)]
pub(crate) mod testing {
    use std::sync::Mutex;

    use super::*;

    /// Runs `fixture` through `assembler`, delivered in chunks of `chunk`
    /// bytes (to exercise events split across reads). Returns the result
    /// and every delta reported.
    pub(crate) async fn run<A: Assembler>(
        assembler: A,
        fixture: &str,
        chunk: usize,
    ) -> (Result<ModelResponse, AttemptError>, Vec<StreamDelta>) {
        let chunks: Vec<Result<Vec<u8>, std::io::Error>> = fixture
            .as_bytes()
            .chunks(chunk.max(1))
            .map(|c| Ok(c.to_vec()))
            .collect();
        let deltas = Mutex::new(Vec::new());
        let record = |d: StreamDelta| deltas.lock().map(|mut v| v.push(d)).unwrap_or(());
        let result = read_stream(
            futures::stream::iter(chunks),
            assembler,
            Timeouts::idle_only(Duration::from_secs(5)),
            &record,
        )
        .await;
        let deltas = deltas.into_inner().unwrap_or_default();
        (result, deltas)
    }

    /// The texts among `deltas`, concatenated.
    pub(crate) fn text_of(deltas: &[StreamDelta]) -> String {
        deltas
            .iter()
            .filter_map(|d| match d {
                StreamDelta::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alcove_protocol::{Message, StopReason, Usage};

    /// Echoes `data` as text until an event named `end`.
    struct Echo;

    impl Assembler for Echo {
        fn feed(&mut self, event: &Event) -> Result<Feed, EventFailure> {
            match event.event {
                "end" => Ok(Feed::Done),
                "bad" => Err(EventFailure::new("bad event")),
                "busy" => Err(EventFailure {
                    message: "busy".into(),
                    retryable: true,
                }),
                _ => Ok(Feed::Text(event.data.to_owned())),
            }
        }

        fn finish(self, done: bool) -> Result<ModelResponse, String> {
            if !done {
                return Err("truncated".into());
            }
            Ok(ModelResponse {
                message: Message::assistant_text(""),
                stop_reason: StopReason::EndTurn,
                usage: Usage::default(),
            })
        }
    }

    #[tokio::test]
    async fn events_split_across_chunks_are_reassembled() {
        let fixture = "data: hello\n\ndata: wor\ndata: ld\n\nevent: end\ndata: {}\n\n";
        for chunk in [1, 3, 7, 1000] {
            let (result, deltas) = testing::run(Echo, fixture, chunk).await;
            assert!(result.is_ok(), "chunk {chunk}");
            assert_eq!(
                deltas,
                vec![
                    StreamDelta::Text("hello".into()),
                    StreamDelta::Text("wor\nld".into())
                ]
            );
        }
    }

    #[tokio::test]
    async fn a_stream_without_its_end_marker_is_an_error() {
        let (result, _) = testing::run(Echo, "data: hello\n\n", 100).await;
        assert!(matches!(
            result,
            Err(AttemptError::MidStream(ModelError::Stream(ref m))) if m == "truncated"
        ));
    }

    #[tokio::test]
    async fn failures_are_classified() {
        let (result, _) = testing::run(Echo, "event: bad\ndata: x\n\n", 100).await;
        assert!(matches!(result, Err(AttemptError::MidStream(_))));
        let (result, _) = testing::run(Echo, "data: a\n\nevent: busy\ndata: x\n\n", 100).await;
        assert!(matches!(
            result,
            Err(AttemptError::Retryable { shown: true, .. })
        ));
    }

    #[tokio::test]
    async fn transport_errors_and_silence_end_the_attempt() {
        let reset = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "connection reset");
        let chunks: Vec<Result<&[u8], std::io::Error>> = vec![Ok(b"data: a\n\n"), Err(reset)];
        let result = read_stream(
            futures::stream::iter(chunks),
            Echo,
            Timeouts::idle_only(Duration::from_secs(1)),
            &|_| {},
        )
        .await;
        assert!(matches!(
            result,
            Err(AttemptError::MidStream(ModelError::Stream(ref m))) if m.contains("connection reset")
        ));

        // Silence before the first event is a slow first byte: retried as
        // transient, nothing having been shown.
        let silent = futures::stream::pending::<Result<&[u8], std::io::Error>>();
        let timeouts = Timeouts::idle_only(Duration::from_millis(20));
        let result = read_stream(silent, Echo, timeouts, &|_| {}).await;
        assert!(matches!(
            result,
            Err(AttemptError::Retryable {
                error: ModelError::FirstByteTimeout(_),
                shown: false,
                ..
            })
        ));

        // Silence after it is an idle stream: restarted once.
        let first: Vec<Result<&[u8], std::io::Error>> = vec![Ok(b"data: a\n\n")];
        let then_silent = futures::stream::iter(first).chain(futures::stream::pending());
        let timeouts = Timeouts {
            first_event: tokio::time::Instant::now() + Duration::from_secs(5),
            first_byte: Duration::from_secs(5),
            idle: Duration::from_millis(20),
        };
        let result = read_stream(then_silent, Echo, timeouts, &|_| {}).await;
        assert!(matches!(
            result,
            Err(AttemptError::MidStream(ModelError::IdleTimeout(_)))
        ));
    }

    /// Found by fuzzing (`sse_anthropic`): a body starting with a
    /// byte-order mark panicked inside eventsource-stream. Marks at the
    /// start are skipped, however the chunks split them.
    #[tokio::test]
    async fn a_leading_byte_order_mark_is_skipped_not_a_panic() {
        for prefix in ["\u{feff}", "\u{feff}\u{feff}"] {
            let fixture = format!("{prefix}data: hello\n\nevent: end\ndata: {{}}\n\n");
            for chunk in [1, 2, 3, 4, 1000] {
                let (result, deltas) = testing::run(Echo, &fixture, chunk).await;
                assert!(
                    result.is_ok(),
                    "{prefix:?} in chunks of {chunk}: {result:?}"
                );
                assert_eq!(deltas, vec![StreamDelta::Text("hello".into())]);
            }
        }
        // A mark later on is data, and a body that is half a mark is not UTF-8.
        let (_, deltas) = testing::run(Echo, "data: a\u{feff}\n\nevent: end\n\n", 1).await;
        assert_eq!(deltas, vec![StreamDelta::Text("a\u{feff}".into())]);
        let chunks: Vec<Result<&[u8], std::io::Error>> = vec![Ok(b"\xEF"), Ok(b"\xBB")];
        let result = read_stream(
            futures::stream::iter(chunks),
            Echo,
            Timeouts::idle_only(Duration::from_secs(1)),
            &|_| {},
        )
        .await;
        assert!(
            matches!(result, Err(AttemptError::MidStream(_))),
            "{result:?}"
        );
    }

    #[test]
    fn cut_respects_char_boundaries() {
        assert_eq!(cut("short", 10), "short");
        assert_eq!(cut("ééé", 3), "é…");
    }
}
