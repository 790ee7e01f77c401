//! Whether this machine can confine commands, found out off the start-up
//! path.
//!
//! Trying the launcher once costs a process start and a namespace; doing
//! it before the first model request put it on every session's start-up.
//! So the probe runs on a thread of its own from the moment the sandbox is
//! configured, and the first thing that needs the answer (the session's
//! start-up warning, or the first confined command) waits for it. A
//! confinement nobody probed counts as available, as before.

use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::thread::JoinHandle;

/// The answer of a probe: `Err` says what is missing.
pub type Verdict = Result<(), String>;

/// A probe's answer, or the thread still finding it out. Clones share it.
#[derive(Debug, Clone, Default)]
pub struct Availability {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    verdict: OnceLock<Verdict>,
    probe: Mutex<Option<JoinHandle<Verdict>>>,
}

impl Availability {
    /// An answer known already.
    pub fn known(verdict: Verdict) -> Availability {
        let availability = Availability::default();
        let _ = availability.inner.verdict.set(verdict);
        availability
    }

    /// Runs `probe` on a thread of its own; [`Availability::verdict`]
    /// waits for it.
    pub fn probing(probe: impl FnOnce() -> Verdict + Send + 'static) -> Availability {
        let availability = Availability::default();
        let handle = std::thread::Builder::new()
            .name("sandbox-probe".to_owned())
            .spawn(probe);
        match handle {
            Ok(handle) => {
                *availability
                    .inner
                    .probe
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) = Some(handle);
            }
            Err(err) => {
                let _ = availability
                    .inner
                    .verdict
                    .set(Err(format!("cannot start the sandbox probe: {err}")));
            }
        }
        availability
    }

    /// The answer, waiting for the probe if it is still running.
    pub fn verdict(&self) -> Result<(), &str> {
        let verdict = self.inner.verdict.get_or_init(|| {
            let handle = self
                .inner
                .probe
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
            match handle.map(JoinHandle::join) {
                None => Ok(()),
                Some(Ok(verdict)) => verdict,
                Some(Err(_)) => Err("the sandbox probe failed unexpectedly".to_owned()),
            }
        });
        verdict.as_ref().map(|_| ()).map_err(String::as_str)
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
}
