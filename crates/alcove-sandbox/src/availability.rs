//! Whether this machine can confine commands, found out off the start-up
//! path.
//!
//! Probing costs a process start and a namespace (the session's network
//! holder, `shared_net`); doing it before the first model request put it on
//! every session's start-up, and running it alongside start-up still took
//! a CPU from it. So the probe is only prepared at start
//! ([`Availability::deferred`]); the session starts it on a thread of its
//! own once the first request is on its way ([`Availability::start`]), the
//! first confined command waits for its answer (starting it if nobody did,
//! [`Availability::verdict`]), and the session's warning is written when
//! it arrives ([`Availability::settled`]). A confinement nobody probed
//! counts as available.

use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use tokio::sync::watch;

/// The answer of a probe: `Err` says what is missing.
pub type Verdict = Result<(), String>;

/// A probe's answer, or the thread still finding it out. Clones share it.
#[derive(Debug, Clone)]
pub struct Availability {
    inner: Arc<Inner>,
}

/// A probe not started yet.
type Probe = Box<dyn FnOnce() -> Verdict + Send>;

struct Inner {
    verdict: OnceLock<Verdict>,
    deferred: Mutex<Option<Probe>>,
    /// Turns `true` once `verdict` is set.
    settled: watch::Sender<bool>,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Availability")
            .field("verdict", &self.verdict.get())
            .finish_non_exhaustive()
    }
}

impl Default for Availability {
    fn default() -> Availability {
        Availability::known(Ok(()))
    }
}

impl Availability {
    /// An answer known already.
    pub fn known(verdict: Verdict) -> Availability {
        let inner = Inner {
            verdict: OnceLock::from(verdict),
            deferred: Mutex::new(None),
            settled: watch::Sender::new(true),
        };
        Availability {
            inner: Arc::new(inner),
        }
    }

    /// A `probe` to run once, on a thread of its own, when
    /// [`Availability::start`] or the first [`Availability::verdict`] asks.
    pub fn deferred(probe: impl FnOnce() -> Verdict + Send + 'static) -> Availability {
        let inner = Inner {
            verdict: OnceLock::new(),
            deferred: Mutex::new(Some(Box::new(probe))),
            settled: watch::Sender::new(false),
        };
        Availability {
            inner: Arc::new(inner),
        }
    }

    /// Starts the probe on a thread of its own, if it is not started yet.
    pub fn start(&self) {
        let probe = self
            .inner
            .deferred
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let Some(probe) = probe else { return };
        let shared = self.inner.clone();
        // The thread always settles the answer, a panic included, so
        // waiters need no handle to it.
        let spawned = std::thread::Builder::new()
            .name("sandbox-probe".to_owned())
            .spawn(move || {
                let verdict = std::panic::catch_unwind(std::panic::AssertUnwindSafe(probe))
                    .unwrap_or_else(|_| Err("the sandbox probe failed unexpectedly".to_owned()));
                shared.settle(verdict);
            });
        if let Err(err) = spawned {
            self.inner
                .settle(Err(format!("cannot start the sandbox probe: {err}")));
        }
    }

    /// The answer, starting the probe if nobody has and waiting for it.
    pub fn verdict(&self) -> Result<(), &str> {
        self.start();
        let verdict = self.inner.verdict.wait();
        verdict.as_ref().map(|_| ()).map_err(String::as_str)
    }

    /// Waits, without blocking a thread, until the answer is known,
    /// starting the probe if nobody has.
    pub async fn settled(&self) -> Result<(), &str> {
        self.start();
        let mut settled = self.inner.settled.subscribe();
        let _ = settled.wait_for(|settled| *settled).await;
        self.verdict()
    }
}

impl Inner {
    fn settle(&self, verdict: Verdict) {
        let _ = self.verdict.set(verdict);
        self.settled.send_replace(true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unprobed_is_available_and_a_probe_is_waited_for() {
        assert_eq!(Availability::default().verdict(), Ok(()));
        let probing = Availability::deferred(|| {
            std::thread::sleep(std::time::Duration::from_millis(20));
            Err("no Landlock".to_owned())
        });
        // Nobody started it: the first verdict does.
        let shared = probing.clone();
        assert_eq!(shared.verdict(), Err("no Landlock"));
        assert_eq!(probing.verdict(), Err("no Landlock"));
        assert_eq!(Availability::known(Err("x".to_owned())).verdict(), Err("x"));
    }

    #[tokio::test]
    async fn settled_waits_for_the_probe_without_a_thread() {
        let probing = Availability::deferred(|| {
            std::thread::sleep(std::time::Duration::from_millis(20));
            Err("no user namespaces".to_owned())
        });
        probing.start();
        assert_eq!(probing.settled().await, Err("no user namespaces"));
        assert_eq!(Availability::default().settled().await, Ok(()));
    }
}
