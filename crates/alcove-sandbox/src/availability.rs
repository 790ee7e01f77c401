//! Whether this machine can confine commands, found out off the start-up
//! path.
//!
//! Trying the launcher once costs a process start and a namespace; doing
//! it before the first model request put it on every session's start-up.
//! So the probe runs on a thread of its own from the moment the sandbox is
//! configured: the first confined command waits for its answer
//! ([`Availability::verdict`]), and the session's warning is written when
//! it arrives ([`Availability::settled`]), while the first request is
//! already on its way. A confinement nobody probed counts as available.

use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::thread::JoinHandle;

use tokio::sync::watch;

/// The answer of a probe: `Err` says what is missing.
pub type Verdict = Result<(), String>;

/// A probe's answer, or the thread still finding it out. Clones share it.
#[derive(Debug, Clone)]
pub struct Availability {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    verdict: OnceLock<Verdict>,
    probe: Mutex<Option<JoinHandle<()>>>,
    /// Turns `true` once `verdict` is set.
    settled: watch::Sender<bool>,
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
            probe: Mutex::new(None),
            settled: watch::Sender::new(true),
        };
        Availability {
            inner: Arc::new(inner),
        }
    }

    /// Runs `probe` on a thread of its own.
    pub fn probing(probe: impl FnOnce() -> Verdict + Send + 'static) -> Availability {
        let inner = Arc::new(Inner {
            verdict: OnceLock::new(),
            probe: Mutex::new(None),
            settled: watch::Sender::new(false),
        });
        let shared = inner.clone();
        let spawned = std::thread::Builder::new()
            .name("sandbox-probe".to_owned())
            .spawn(move || shared.settle(probe()));
        match spawned {
            Ok(handle) => {
                *inner.probe.lock().unwrap_or_else(PoisonError::into_inner) = Some(handle)
            }
            Err(err) => inner.settle(Err(format!("cannot start the sandbox probe: {err}"))),
        }
        Availability { inner }
    }

    /// The answer, waiting for the probe if it is still running.
    pub fn verdict(&self) -> Result<(), &str> {
        let handle = self
            .inner
            .probe
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(handle) = handle
            && handle.join().is_err()
        {
            self.inner
                .settle(Err("the sandbox probe failed unexpectedly".to_owned()));
        }
        // Whoever joined, the probe has settled it (or it is settling now).
        let verdict = self.inner.verdict.wait();
        verdict.as_ref().map(|_| ()).map_err(String::as_str)
    }

    /// Waits, without blocking a thread, until the answer is known.
    pub async fn settled(&self) -> Result<(), &str> {
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
        let probing = Availability::probing(|| {
            std::thread::sleep(std::time::Duration::from_millis(20));
            Err("no Landlock".to_owned())
        });
        let shared = probing.clone();
        assert_eq!(shared.verdict(), Err("no Landlock"));
        assert_eq!(probing.verdict(), Err("no Landlock"));
        assert_eq!(Availability::known(Err("x".to_owned())).verdict(), Err("x"));
    }

    #[tokio::test]
    async fn settled_waits_for_the_probe_without_a_thread() {
        let probing = Availability::probing(|| {
            std::thread::sleep(std::time::Duration::from_millis(20));
            Err("no user namespaces".to_owned())
        });
        assert_eq!(probing.settled().await, Err("no user namespaces"));
        assert_eq!(Availability::default().settled().await, Ok(()));
    }
}
