//! How far off the byte estimate of a request is, per model, as the
//! server's own counts say.
//!
//! alcove estimates a request at four bytes a token; a local server's
//! chat template and tokenizer counted 9–17 % more (issue 45), and a
//! request estimated to fit was refused as too long. So after each
//! response the server's prompt-token count is set against the estimate
//! of the same request, and the ratio (bounded to [`MIN_RATIO`] ..
//! [`MAX_RATIO`]: never below the estimate, never wildly above) scales
//! the estimate of what a later request adds. It is kept per model name
//! for the session, so the next user turn and a child on the same model
//! start from it.

use std::collections::HashMap;
use std::sync::Mutex;

/// The estimate is never scaled down: a server that counts fewer tokens
/// (or a provider that reports none) leaves it as it is.
pub(crate) const MIN_RATIO: f64 = 1.0;
/// Nor scaled up past this: a count this far off is not a tokenizer's.
pub(crate) const MAX_RATIO: f64 = 2.0;

/// The ratio of each model's counts to alcove's estimates, learnt from
/// its responses.
#[derive(Debug, Default)]
pub struct Calibration {
    ratios: Mutex<HashMap<String, f64>>,
}

impl Calibration {
    /// The ratio learnt for `model`, [`MIN_RATIO`] until one was.
    pub(crate) fn ratio(&self, model: &str) -> f64 {
        self.ratios
            .lock()
            .ok()
            .and_then(|ratios| ratios.get(model).copied())
            .unwrap_or(MIN_RATIO)
    }

    /// Learns from a request estimated at `estimated` tokens that the
    /// server counted `counted`; returns the ratio now in use.
    pub(crate) fn learn(&self, model: &str, estimated: u64, counted: u64) -> f64 {
        if estimated == 0 || counted == 0 {
            return self.ratio(model);
        }
        let ratio = (counted as f64 / estimated as f64).clamp(MIN_RATIO, MAX_RATIO);
        if let Ok(mut ratios) = self.ratios.lock() {
            ratios.insert(model.to_owned(), ratio);
        }
        ratio
    }
}

/// `tokens` scaled by `ratio`, rounded up.
pub(crate) fn scaled(tokens: u64, ratio: f64) -> u64 {
    (tokens as f64 * ratio).ceil() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_are_bounded_and_kept_per_model() {
        let calibration = Calibration::default();
        assert_eq!(calibration.ratio("m"), 1.0);
        assert!((calibration.learn("m", 1_865, 2_131) - 1.1426).abs() < 0.001);
        assert_eq!(calibration.learn("other", 100, 50), 1.0);
        assert_eq!(calibration.learn("big", 100, 900), 2.0);
        assert!(calibration.ratio("m") > 1.14);
        assert_eq!(calibration.learn("none", 100, 0), 1.0);
        assert_eq!(scaled(1_000, 1.1), 1_100);
    }
}
