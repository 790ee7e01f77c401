//! The HTTP side shared by both clients: one POST per attempt, its status
//! classified for the retry loop, its body handed to the SSE reader.
//!
//! Kept apart from the protocol modules so they only build request bodies
//! and assemble events, and apart from `sse.rs` so the event reading stays
//! free of any network dependency and testable on canned bytes.

use bytes::Bytes;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderValue};

use crate::retry::{self, AttemptError, RetryPolicy};
use crate::sse::{self, Assembler};
use crate::{ModelError, ModelResponse, StreamDelta};

/// How much of an error response body is kept.
const MAX_ERROR_BODY: usize = 2048;

/// A provider's HTTP client and retry settings.
#[derive(Debug, Clone)]
pub(crate) struct Http {
    client: reqwest::Client,
    provider: String,
    policy: RetryPolicy,
    /// The size of the last body sent: the next one (the same history and
    /// a turn more) is written into a buffer of about that size instead
    /// of one doubled from 128 bytes, copying the history a dozen times.
    last_body_len: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    /// The endpoint every request goes to, as configured (for messages)
    /// and parsed once (a request does not parse it again).
    url: String,
    parsed: Option<reqwest::Url>,
    /// The session's gate, when it has one.
    health: Option<std::sync::Arc<crate::ProviderHealth>>,
}

impl Http {
    /// Builds the client for `provider` (its id, used in error messages)
    /// that posts to `url`.
    pub(crate) fn new(
        provider: &str,
        url: &str,
        policy: RetryPolicy,
        health: Option<std::sync::Arc<crate::ProviderHealth>>,
    ) -> Result<Http, ModelError> {
        let client = client_builder(&[url])
            .connect_timeout(policy.connect_timeout)
            .build()
            .map_err(|e| ModelError::Connect {
                url: url.to_string(),
                reason: sse::error_chain(&e, true),
            })?;
        Ok(Http {
            client,
            provider: provider.to_string(),
            policy,
            last_body_len: Default::default(),
            url: url.to_string(),
            parsed: reqwest::Url::parse(url).ok(),
            health,
        })
    }

    /// POSTs `body` to the endpoint and reads the streamed answer with a fresh
    /// assembler from `assembler` per attempt, retrying per the policy.
    pub(crate) async fn complete<A, F>(
        &self,
        headers: &HeaderMap,
        body: &(impl serde::Serialize + ?Sized),
        assembler: F,
        on_delta: &(dyn Fn(StreamDelta) + Send + Sync),
    ) -> Result<ModelResponse, ModelError>
    where
        A: Assembler,
        F: Fn() -> A,
    {
        use std::sync::atomic::Ordering::Relaxed;
        let hint = self.last_body_len.load(Relaxed);
        let mut buffer = Vec::with_capacity(hint + hint / 8 + 1024);
        serde_json::to_writer(&mut buffer, body)
            .map_err(|e| ModelError::Protocol(format!("cannot encode the request: {e}")))?;
        self.last_body_len.store(buffer.len(), Relaxed);
        let body = Bytes::from(buffer);
        retry::run(&self.policy, self.health.as_deref(), on_delta, || {
            self.attempt(headers, body.clone(), assembler(), on_delta)
        })
        .await
    }

    /// One attempt: send, check the status, read the stream. The headers
    /// and the first event must come within the first-byte timeout, each
    /// later event within the idle timeout. Whatever fails, the response
    /// (and with it the connection) is dropped before this returns, so a
    /// retry never queues behind its own abandoned request.
    async fn attempt<A: Assembler>(
        &self,
        headers: &HeaderMap,
        body: Bytes,
        assembler: A,
        on_delta: &(dyn Fn(StreamDelta) + Send + Sync),
    ) -> Result<ModelResponse, AttemptError> {
        let first_byte = self.policy.first_byte_timeout;
        let deadline = tokio::time::Instant::now() + first_byte;
        let request = match &self.parsed {
            Some(parsed) => self.client.post(parsed.clone()),
            None => self.client.post(&self.url),
        };
        let request = request
            .headers(headers.clone())
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .body(body);
        let response = match tokio::time::timeout_at(deadline, request.send()).await {
            Err(_) => {
                return Err(AttemptError::Retryable {
                    error: ModelError::FirstByteTimeout(first_byte),
                    retry_after: None,
                    shown: false,
                });
            }
            Ok(Err(e)) => return Err(send_error(&self.url, &e)),
            Ok(Ok(response)) => response,
        };
        let status = response.status();
        if !status.is_success() {
            let retry_after = retry::retry_after(response.headers());
            let idle = self.policy.idle_timeout;
            let text = match tokio::time::timeout(idle, response.text()).await {
                Ok(Ok(text)) => text,
                _ => String::new(),
            };
            if let Some(overflow) =
                crate::overflow::classify_overflow(&self.provider, status.as_u16(), text.trim())
            {
                return Err(AttemptError::Fatal(overflow));
            }
            let fault = crate::ProviderFault::classify(status.as_u16(), &text);
            let retryable =
                !fault.halts_tree() && retry::retryable_response(status.as_u16(), &text);
            let error = ModelError::Http {
                provider: self.provider.clone(),
                status: status.as_u16(),
                body: sse::cut(text.trim(), MAX_ERROR_BODY),
                fault,
            };
            return Err(if retryable {
                AttemptError::Retryable {
                    error,
                    retry_after,
                    shown: false,
                }
            } else {
                AttemptError::Fatal(error)
            });
        }
        let timeouts = sse::Timeouts {
            first_event: deadline,
            first_byte,
            idle: self.policy.idle_timeout,
        };
        sse::read_stream(response.bytes_stream(), assembler, timeouts, on_delta).await
    }
}

/// A reqwest client builder with the TLS provider installed, for requests to
/// `bases`.
///
/// When every base is plain `http://` (a local server, the fake server) the
/// client trusts no certificate at all instead of loading the system store:
/// parsing the store's PEM files was three quarters of alcove's start-up
/// instructions, spent on TLS that such a client never speaks.
pub fn client_builder(bases: &[&str]) -> reqwest::ClientBuilder {
    // Installing twice is harmless: the second call just reports the first.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let builder = reqwest::Client::builder();
    if bases.iter().all(|base| is_plain_http(base)) {
        builder.tls_certs_only(std::iter::empty())
    } else {
        builder
    }
}

/// Whether `url` is plain HTTP (case-insensitive scheme).
fn is_plain_http(url: &str) -> bool {
    url.get(..7)
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("http://"))
}

/// Classifies an error from sending a request (before any response).
fn send_error(url: &str, error: &reqwest::Error) -> AttemptError {
    let reason = sse::error_chain(error, true);
    if error.is_builder() {
        return AttemptError::Fatal(ModelError::Connect {
            url: url.to_string(),
            reason,
        });
    }
    let error = if error.is_connect() {
        ModelError::Connect {
            url: url.to_string(),
            reason,
        }
    } else {
        ModelError::Stream(format!("request to {url} failed: {reason}"))
    };
    AttemptError::Retryable {
        error,
        retry_after: None,
        shown: false,
    }
}

#[cfg(test)]
mod tests {
    use super::is_plain_http;

    #[test]
    fn only_http_urls_skip_the_certificate_store() {
        assert!(is_plain_http("http://127.0.0.1:8080/v1"));
        assert!(is_plain_http("HTTP://localhost"));
        assert!(!is_plain_http("https://api.example.com"));
        assert!(!is_plain_http("http:/"));
        assert!(!is_plain_http(""));
    }
}
