//! The provider's health, shared by every agent of a session: one gate
//! between a tree of agents and its model provider.
//!
//! Why it exists: forty agents each retrying a `429 insufficient_quota`
//! five times made two hundred requests to learn one fact, and forty
//! agents each backing off a rate limit on their own failed one by one.
//! Every error answer is classified once ([`ProviderFault`], in `http.rs`);
//! each attempt of every client given the same [`ProviderHealth`] passes
//! it (`retry.rs`):
//! - a fault that will not heal (a bad key, no quota or credit, a model the
//!   provider does not know) trips the gate: no request of the tree is sent
//!   after it, each is answered [`crate::ModelError::Halted`] at once;
//! - a rate limit (429, or 529 overloaded) pauses new requests of the whole
//!   tree for the provider's `retry-after` (or a backoff), and halves how
//!   many may be under way at once; each success raises that by one again,
//!   until no limit is left.

use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

/// What kind of failure a provider's error answer is: read once from its
/// status and body, the same for every wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderFault {
    /// The key is missing, wrong or lacks permission (401, 403,
    /// `authentication_error`, `invalid_api_key`, `permission_error`).
    Auth,
    /// No quota or credit left (OpenAI `insufficient_quota`, Anthropic
    /// `billing_error`, 402, "credit balance is too low").
    Quota,
    /// The provider does not know the model (`model_not_found`, a 404).
    UnknownModel,
    /// Too many requests for now (429 with any other body).
    RateLimited,
    /// The provider is overloaded for now (529, `overloaded_error`).
    Overloaded,
    /// Anything else (a bad request, a server error).
    Other,
}

impl ProviderFault {
    /// Classifies an error answer by its status and body.
    pub fn classify(status: u16, body: &str) -> ProviderFault {
        let body = body.to_ascii_lowercase();
        let says = |word: &str| body.contains(word);
        if says("insufficient_quota")
            || says("billing_error")
            || says("credit balance is too low")
            || status == 402
        {
            ProviderFault::Quota
        } else if status == 401
            || status == 403
            || says("invalid_api_key")
            || says("authentication_error")
            || says("permission_error")
        {
            ProviderFault::Auth
        } else if says("model_not_found")
            || (status == 404 && (says("not_found_error") || says("model") || body.is_empty()))
        {
            ProviderFault::UnknownModel
        } else if status == 529 || says("overloaded_error") {
            ProviderFault::Overloaded
        } else if status == 429 {
            ProviderFault::RateLimited
        } else {
            ProviderFault::Other
        }
    }

    /// Whether no retry, by any agent, can succeed until the user acts.
    pub fn halts_tree(self) -> bool {
        matches!(
            self,
            ProviderFault::Auth | ProviderFault::Quota | ProviderFault::UnknownModel
        )
    }

    /// Whether it is the provider asking the tree to slow down.
    pub fn slows_tree(self) -> bool {
        matches!(self, ProviderFault::RateLimited | ProviderFault::Overloaded)
    }

    /// What the user should do about a fault that halts the tree.
    pub fn remedy(self) -> &'static str {
        match self {
            ProviderFault::Auth => {
                "check the API key (its variable or `api_key` in config): the provider refused it"
            }
            ProviderFault::Quota => {
                "the account has no quota or credit left: add credit or raise the limit with the provider, then run again"
            }
            ProviderFault::UnknownModel => {
                "the provider does not serve this model: check --model or `model` in config"
            }
            ProviderFault::RateLimited | ProviderFault::Overloaded | ProviderFault::Other => {
                "try again later"
            }
        }
    }

    /// Its name in events and records.
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderFault::Auth => "auth",
            ProviderFault::Quota => "quota",
            ProviderFault::UnknownModel => "unknown_model",
            ProviderFault::RateLimited => "rate_limited",
            ProviderFault::Overloaded => "overloaded",
            ProviderFault::Other => "other",
        }
    }
}

/// Why the gate is shut: the fault and the provider's own words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Halt {
    /// The fault.
    pub fault: ProviderFault,
    /// `provider returned HTTP 429: {…}`.
    pub reason: String,
}

impl Halt {
    /// One line for the user: what happened and what to fix.
    pub fn explain(&self) -> String {
        format!("{} ({})", self.reason, self.fault.remedy())
    }
}

/// How many rate-limit (429) answers one request sits out, gated, before
/// it gives up: with pauses of up to `max_delay` each, many minutes.
pub(crate) const RATE_LIMIT_RETRIES: u32 = 24;

#[derive(Debug, Default)]
struct State {
    halt: Option<Halt>,
    paused_until: Option<Instant>,
    /// How many requests may be under way at once; `None` is no limit.
    limit: Option<usize>,
    in_flight: usize,
    /// The most under way at once before the first rate limit: the limit
    /// is lifted when it climbs back there.
    ceiling: usize,
}

/// The gate every request of a session's agents passes (see the module).
#[derive(Debug, Default)]
pub struct ProviderHealth {
    state: Mutex<State>,
    changed: Notify,
}

/// What [`ProviderHealth::admit`] found.
enum Wait {
    Admitted,
    Until(Instant),
    ForPlace,
}

/// A request under way; dropping it lets the next one in.
#[derive(Debug)]
pub(crate) struct Admission<'a> {
    health: &'a ProviderHealth,
}

impl Drop for Admission<'_> {
    fn drop(&mut self) {
        self.health.with(|state| {
            state.in_flight = state.in_flight.saturating_sub(1);
        });
        self.health.changed.notify_waiters();
    }
}

impl ProviderHealth {
    /// An open gate.
    pub fn new() -> ProviderHealth {
        ProviderHealth::default()
    }

    fn with<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        f(&mut state)
    }

    /// Why the gate is shut, once a fault that will not heal was seen.
    pub fn halt(&self) -> Option<Halt> {
        self.with(|state| state.halt.clone())
    }

    /// Shuts the gate for good (the first halt is kept).
    pub fn trip(&self, fault: ProviderFault, reason: &str) {
        self.with(|state| {
            state.halt.get_or_insert_with(|| Halt {
                fault,
                reason: reason.to_owned(),
            });
        });
        self.changed.notify_waiters();
    }

    /// How many requests may now be under way at once (`None`: no limit).
    pub fn concurrency_limit(&self) -> Option<usize> {
        self.with(|state| state.limit)
    }

    /// Waits until a request may be sent: no pause, a place under the
    /// limit; the halt when the gate is shut.
    pub(crate) async fn admit(&self) -> Result<Admission<'_>, Halt> {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let wait = self.with(|state| {
                if let Some(halt) = &state.halt {
                    return Err(halt.clone());
                }
                if let Some(until) = state.paused_until {
                    if Instant::now() < until {
                        return Ok(Wait::Until(until));
                    }
                    state.paused_until = None;
                }
                if state.limit.is_some_and(|limit| state.in_flight >= limit) {
                    return Ok(Wait::ForPlace);
                }
                state.in_flight += 1;
                state.ceiling = state.ceiling.max(state.in_flight);
                Ok(Wait::Admitted)
            })?;
            match wait {
                Wait::Admitted => return Ok(Admission { health: self }),
                Wait::Until(until) => {
                    tokio::select! {
                        () = &mut changed => {}
                        () = tokio::time::sleep_until(until) => {}
                    }
                }
                Wait::ForPlace => changed.await,
            }
        }
    }

    /// A request succeeded: the limit, if any, rises by one (and goes
    /// when it is back where it was).
    pub(crate) fn succeeded(&self) {
        let lifted = self.with(|state| match state.limit {
            Some(limit) if limit + 1 >= state.ceiling => {
                state.limit = None;
                true
            }
            Some(limit) => {
                state.limit = Some(limit + 1);
                true
            }
            None => false,
        });
        if lifted {
            self.changed.notify_waiters();
        }
    }

    /// The provider asked to slow down: no request is sent for `pause`,
    /// and half as many may be under way at once.
    pub(crate) fn slow_down(&self, pause: Duration) {
        self.with(|state| {
            let until = Instant::now() + pause;
            state.paused_until = Some(state.paused_until.map_or(until, |old| old.max(until)));
            let under_way = state.limit.unwrap_or(state.in_flight).max(1);
            state.limit = Some((under_way / 2).max(1));
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_provider_answer_is_one_kind() {
        let quota = r#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#;
        assert_eq!(ProviderFault::classify(429, quota), ProviderFault::Quota);
        let rate = r#"{"error":{"message":"Rate limit reached for requests","type":"requests","param":null,"code":"rate_limit_exceeded"}}"#;
        assert_eq!(
            ProviderFault::classify(429, rate),
            ProviderFault::RateLimited
        );
        let key = r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#;
        assert_eq!(ProviderFault::classify(401, key), ProviderFault::Auth);
        let billing = r#"{"type":"error","error":{"type":"billing_error","message":"x"}}"#;
        assert_eq!(ProviderFault::classify(400, billing), ProviderFault::Quota);
        let model =
            r#"{"type":"error","error":{"type":"not_found_error","message":"model: claude-nope"}}"#;
        assert_eq!(
            ProviderFault::classify(404, model),
            ProviderFault::UnknownModel
        );
        let busy = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        assert_eq!(
            ProviderFault::classify(529, busy),
            ProviderFault::Overloaded
        );
        assert_eq!(
            ProviderFault::classify(400, "bad request"),
            ProviderFault::Other
        );
        assert!(ProviderFault::Quota.halts_tree());
        assert!(!ProviderFault::RateLimited.halts_tree());
    }

    #[tokio::test]
    async fn a_trip_answers_every_later_request() {
        let health = ProviderHealth::new();
        drop(health.admit().await.map_err(|halt| halt.reason));
        health.trip(ProviderFault::Auth, "401");
        let halt = health.admit().await.err();
        assert_eq!(halt.map(|halt| halt.fault), Some(ProviderFault::Auth));
    }

    #[tokio::test]
    async fn a_rate_limit_halves_the_limit_and_successes_lift_it() {
        let health = ProviderHealth::new();
        let mut under_way = Vec::new();
        for _ in 0..4 {
            under_way.push(health.admit().await.ok());
        }
        health.slow_down(Duration::from_millis(20));
        assert_eq!(health.concurrency_limit(), Some(2));
        under_way.clear();
        let first = health.admit().await.ok();
        assert!(first.is_some());
        drop(first);
        health.succeeded();
        assert_eq!(health.concurrency_limit(), Some(3));
        health.succeeded();
        assert_eq!(health.concurrency_limit(), None);
    }
}
