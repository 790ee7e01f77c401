//! When and how long to wait before sending a failed request again.
//!
//! Both clients share one retry loop ([`run`]): each attempt either yields a
//! response or an [`AttemptError`] saying what kind of failure it was, and the
//! loop decides between waiting and retrying (transient errors, with
//! exponential backoff and jitter, or the server's `retry-after`), resending
//! once at once (a stream that broke half-way), or giving up.

use std::future::Future;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::header::HeaderMap;

use crate::provider_health::RATE_LIMIT_RETRIES;
use crate::{ModelError, ModelResponse, ProviderFault, ProviderHealth, StreamDelta};

/// Retry, backoff and timeout settings.
#[derive(Debug, Clone)]
pub struct RetryPolicy {
    /// How many times a failed request is retried.
    pub max_retries: u32,
    /// The first backoff delay; it doubles each retry, with jitter.
    pub base_delay: Duration,
    /// The longest backoff delay (and the cap on honoured `retry-after`).
    pub max_delay: Duration,
    /// How long the first byte of an answer may take after the request was
    /// sent: a local server processes the whole prompt (and may queue the
    /// request behind another) before it sends anything.
    pub first_byte_timeout: Duration,
    /// How long a stream that has started may stay silent between bytes
    /// before it is abandoned.
    pub idle_timeout: Duration,
    /// How long connecting may take.
    pub connect_timeout: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 4,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
            first_byte_timeout: Duration::from_secs(120),
            idle_timeout: Duration::from_secs(120),
            connect_timeout: Duration::from_secs(10),
        }
    }
}

/// The time to first byte a local server gets by default: a CPU model's
/// prefill of a few thousand tokens, behind another request on a one-slot
/// server, takes minutes.
pub const LOCAL_FIRST_BYTE_TIMEOUT: Duration = Duration::from_secs(600);

impl RetryPolicy {
    /// The nominal (jitter-free) backoff before retry number `retry`
    /// (1-based): `base_delay * 2^(retry-1)`, capped at `max_delay`.
    pub fn nominal_delay(&self, retry: u32) -> Duration {
        let factor = 2u32.saturating_pow(retry.saturating_sub(1).min(30));
        self.base_delay
            .checked_mul(factor)
            .unwrap_or(self.max_delay)
            .min(self.max_delay)
    }

    /// The wait before retry number `retry` (1-based). A server-given
    /// `retry_after` wins (capped at `max_delay`); otherwise the nominal
    /// backoff less a random jitter of up to a quarter, so it lies within
    /// `[0.75 * nominal, nominal]`.
    pub fn delay(&self, retry: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(after) = retry_after {
            return after.min(self.max_delay);
        }
        let nominal = self.nominal_delay(retry);
        nominal.mul_f64(1.0 - 0.25 * fastrand::f64())
    }
}

/// How one attempt failed.
#[derive(Debug)]
pub(crate) enum AttemptError {
    /// Not worth retrying (bad request, bad key, …).
    Fatal(ModelError),
    /// Transient: retry after a backoff, while retries remain.
    Retryable {
        /// The error to return if no retry remains.
        error: ModelError,
        /// The server's `retry-after`, if it gave one.
        retry_after: Option<Duration>,
        /// Whether text had already been reported for this attempt.
        shown: bool,
    },
    /// The stream broke after it had started: resend once from the start.
    MidStream(ModelError),
}

/// Runs `attempt` until it succeeds or a failure is final, reporting each
/// retry and restart to `on_delta`.
///
/// With a session's `health`, each attempt passes its gate first: a shut
/// gate ends the request at once ([`ModelError::Halted`]); a fault that
/// will not heal shuts it; a rate limit or an overloaded provider pauses
/// the whole tree (the provider's `retry-after`, else the backoff); a rate
/// limit is sat out up to [`RATE_LIMIT_RETRIES`] times, without using this
/// request's retries.
pub(crate) async fn run<F, Fut>(
    policy: &RetryPolicy,
    health: Option<&ProviderHealth>,
    on_delta: &(dyn Fn(StreamDelta) + Send + Sync),
    mut attempt: F,
) -> Result<ModelResponse, ModelError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<ModelResponse, AttemptError>>,
{
    let mut attempts: u32 = 0;
    let mut retries: u32 = 0;
    let mut rate_limits: u32 = 0;
    let mut restarted = false;
    loop {
        let admission = match health {
            Some(health) => Some(health.admit().await.map_err(ModelError::Halted)?),
            None => None,
        };
        attempts += 1;
        let result = attempt().await;
        drop(admission);
        match result {
            Ok(response) => {
                if let Some(health) = health {
                    health.succeeded();
                }
                return Ok(response);
            }
            Err(AttemptError::Fatal(error)) => {
                if let (Some(health), Some(halt)) = (health, error.halt()) {
                    health.trip(halt.fault, &halt.reason);
                }
                return Err(error);
            }
            Err(AttemptError::Retryable {
                error,
                retry_after,
                shown,
            }) => {
                let fault = match &error {
                    ModelError::Http { fault, .. } => Some(*fault),
                    _ => None,
                };
                let paced = health.filter(|_| fault.is_some_and(ProviderFault::slows_tree));
                // A rate limit is the account's, and heals by waiting: it
                // is sat out longer. An overloaded provider may not heal
                // soon: it pauses the tree but keeps the usual count.
                if paced.is_some() && fault == Some(ProviderFault::RateLimited) {
                    if rate_limits >= RATE_LIMIT_RETRIES {
                        return Err(error);
                    }
                    rate_limits += 1;
                } else {
                    if retries >= policy.max_retries {
                        return Err(error);
                    }
                    retries += 1;
                }
                let reason = error.to_string();
                if shown {
                    on_delta(StreamDelta::Restarted {
                        reason: reason.clone(),
                    });
                }
                let delay = policy.delay(retries.max(rate_limits), retry_after);
                on_delta(StreamDelta::Retry {
                    attempt: attempts,
                    delay,
                    reason,
                });
                match paced {
                    // The gate holds this request, and every other, back.
                    Some(health) => health.slow_down(delay),
                    None => tokio::time::sleep(delay).await,
                }
            }
            Err(AttemptError::MidStream(error)) => {
                if restarted {
                    return Err(error);
                }
                restarted = true;
                on_delta(StreamDelta::Restarted {
                    reason: error.to_string(),
                });
            }
        }
    }
}

/// Whether an HTTP status is worth retrying: 408, 409, 429 and every 5xx
/// (including Anthropic's 529 "overloaded").
pub(crate) fn retryable_status(status: u16) -> bool {
    matches!(status, 408 | 409 | 429) || (500..=599).contains(&status)
}

/// What servers say when they reject a request for what it holds, with a
/// 5xx status (llama.cpp answers these with 500): resending the same body
/// gets the same answer, so they are not retried.
const CONTENT_REJECTIONS: [&str; 4] = [
    "failed to parse tool call arguments",
    "roles must alternate",
    "failed to parse messages",
    "failed to apply the chat template",
];

/// Whether a failed response is worth sending again: its status is
/// transient ([`retryable_status`]) and its body does not say the server
/// rejected the request's content.
pub(crate) fn retryable_response(status: u16, body: &str) -> bool {
    if !retryable_status(status) {
        return false;
    }
    let body = body.to_ascii_lowercase();
    !CONTENT_REJECTIONS
        .iter()
        .any(|marker| body.contains(marker))
}

/// The wait a server asked for: `retry-after-ms` (milliseconds) first, then
/// `retry-after` (seconds, or an HTTP-date). Uncapped; [`RetryPolicy::delay`]
/// caps it.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let get = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(ms) = get("retry-after-ms").and_then(parse_seconds) {
        return Some(ms / 1000);
    }
    get("retry-after").and_then(|value| parse_retry_after(value, SystemTime::now()))
}

/// Parses a `retry-after` value, seconds or HTTP-date, relative to `now`.
pub(crate) fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    if let Some(delay) = parse_seconds(value) {
        return Some(delay);
    }
    let at = parse_http_date(value)?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// A non-negative decimal number of seconds (the `-ms` header reuses this
/// and divides by 1000).
fn parse_seconds(value: &str) -> Option<Duration> {
    let secs: f64 = value.trim().parse().ok()?;
    if (0.0..1e9).contains(&secs) {
        Some(Duration::from_secs_f64(secs))
    } else {
        None
    }
}

/// Parses an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the form
/// RFC 9110 requires senders to use.
pub(crate) fn parse_http_date(value: &str) -> Option<SystemTime> {
    let rest = value.trim().split_once(", ")?.1;
    let parts: Vec<&str> = rest.split_whitespace().collect();
    let [day, month, year, time, zone] = parts.as_slice() else {
        return None;
    };
    if *zone != "GMT" {
        return None;
    }
    let day: u32 = day.parse().ok()?;
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let month = MONTHS.iter().position(|m| m == month)? as u32 + 1;
    let year: i64 = year.parse().ok()?;
    let mut hms = time.split(':').map(|p| p.parse::<u64>().ok());
    let (h, m, s) = (hms.next()??, hms.next()??, hms.next()??);
    if hms.next().is_some() || !(1..=31).contains(&day) || h > 23 || m > 59 || s > 60 {
        return None;
    }
    let days = days_from_civil(year, month, day);
    let secs = u64::try_from(days).ok()? * 86_400 + h * 3600 + m * 60 + s;
    UNIX_EPOCH.checked_add(Duration::from_secs(secs))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// algorithm).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn backoff_doubles_and_is_capped() {
        let policy = RetryPolicy {
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(700),
            ..RetryPolicy::default()
        };
        assert_eq!(policy.nominal_delay(1), Duration::from_millis(100));
        assert_eq!(policy.nominal_delay(2), Duration::from_millis(200));
        assert_eq!(policy.nominal_delay(3), Duration::from_millis(400));
        assert_eq!(policy.nominal_delay(4), Duration::from_millis(700));
        assert_eq!(policy.nominal_delay(400), Duration::from_millis(700));
        for retry in 1..10 {
            for _ in 0..50 {
                let nominal = policy.nominal_delay(retry);
                let delay = policy.delay(retry, None);
                assert!(delay <= nominal, "{delay:?} > {nominal:?}");
                assert!(delay >= nominal.mul_f64(0.75), "{delay:?} too short");
            }
        }
    }

    #[test]
    fn retry_after_is_capped() {
        let policy = RetryPolicy {
            max_delay: Duration::from_secs(5),
            ..RetryPolicy::default()
        };
        let after = Some(Duration::from_secs(60));
        assert_eq!(policy.delay(1, after), Duration::from_secs(5));
        let after = Some(Duration::from_secs(2));
        assert_eq!(policy.delay(1, after), Duration::from_secs(2));
    }

    #[test]
    fn parses_retry_after_seconds_and_dates() {
        let now = UNIX_EPOCH + Duration::from_secs(784_111_770); // 08:49:30
        assert_eq!(parse_retry_after("3", now), Some(Duration::from_secs(3)));
        assert_eq!(
            parse_retry_after(" 1.5 ", now),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now),
            Some(Duration::from_secs(7))
        );
        // A date in the past means "now".
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-1", now), None);
        assert_eq!(
            parse_retry_after("Sun, 06 Foo 1994 08:49:37 GMT", now),
            None
        );
    }

    #[test]
    fn http_date_matches_known_epochs() {
        assert_eq!(
            parse_http_date("Thu, 01 Jan 1970 00:00:00 GMT"),
            Some(UNIX_EPOCH)
        );
        assert_eq!(
            parse_http_date("Sat, 29 Feb 2020 12:00:00 GMT"),
            Some(UNIX_EPOCH + Duration::from_secs(1_582_977_600))
        );
    }

    #[test]
    fn headers_prefer_milliseconds() {
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", HeaderValue::from_static("10"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(10)));
        headers.insert("retry-after-ms", HeaderValue::from_static("250"));
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(250)));
        assert_eq!(retry_after(&HeaderMap::new()), None);
    }

    #[test]
    fn statuses() {
        for status in [408, 409, 429, 500, 502, 503, 529] {
            assert!(retryable_status(status), "{status}");
        }
        for status in [400, 401, 403, 404, 413, 422] {
            assert!(!retryable_status(status), "{status}");
        }
    }

    #[test]
    fn content_rejections_are_not_retried() {
        let llama = r#"{"error":{"code":500,"message":"Failed to parse tool call arguments as JSON: [json.exception.parse_error.101] parse error","type":"server_error"}}"#;
        assert!(!retryable_response(500, llama));
        assert!(!retryable_response(
            500,
            "Conversation roles must alternate user/assistant/user/assistant/..."
        ));
        assert!(!retryable_response(400, "anything"));
        assert!(retryable_response(500, "internal error"));
        assert!(retryable_response(
            529,
            r#"{"type":"error","error":{"type":"overloaded_error"}}"#
        ));
        assert!(retryable_response(429, ""));
    }
}
