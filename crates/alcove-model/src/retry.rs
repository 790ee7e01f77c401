//! stub
use std::time::Duration;
/// Retry, backoff and timeout settings.
#[derive(Debug, Clone)]
pub struct RetryPolicy {
    /// How many times a failed request is retried.
    pub max_retries: u32,
    /// The first backoff delay; it doubles each retry, with jitter.
    pub base_delay: Duration,
    /// The longest backoff delay (and the cap on honoured `retry-after`).
    pub max_delay: Duration,
    /// How long a stream may stay silent before it is abandoned.
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
            idle_timeout: Duration::from_secs(120),
            connect_timeout: Duration::from_secs(10),
        }
    }
}
