//! Retry policies: how long a failed value waits before its next attempt, and when to give up.
//!
//! A [`RetryPolicy`] is used by the [worker](crate::worker) (and can be used by hand with a
//! [`ReliableConsumer`](crate::ReliableConsumer)): after attempt `n` of a value fails, the value
//! goes back into the delayed queue, due after [`delay_for(n)`](RetryPolicy::delay_for), unless
//! `n` has reached [`max_attempts`](RetryPolicy::max_attempts), in which case it becomes a dead
//! letter.

use crate::{Error, Result};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// How the wait before the next attempt grows.
#[derive(Clone)]
#[non_exhaustive]
pub enum Backoff {
    /// The same wait after every failure.
    Fixed(Duration),
    /// `initial * multiplier^(n - 1)` after failed attempt `n`, at most `max`, then shortened by
    /// a random fraction of up to `jitter` (0: none, 1: anywhere between zero and the full wait)
    /// so that values which failed together do not come back together.
    Exponential {
        /// Wait after the first failure.
        initial: Duration,
        /// Longest wait.
        max: Duration,
        /// Growth per failure (at least 1).
        multiplier: f64,
        /// Largest fraction taken off at random, in `0.0..=1.0`.
        jitter: f64,
    },
    /// Any function of the failed attempt's number (1 for the first attempt).
    Custom(Arc<dyn Fn(u32) -> Duration + Send + Sync>),
}

impl fmt::Debug for Backoff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Backoff::Fixed(d) => f.debug_tuple("Fixed").field(d).finish(),
            Backoff::Exponential {
                initial,
                max,
                multiplier,
                jitter,
            } => f
                .debug_struct("Exponential")
                .field("initial", initial)
                .field("max", max)
                .field("multiplier", multiplier)
                .field("jitter", jitter)
                .finish(),
            Backoff::Custom(_) => f.write_str("Custom(..)"),
        }
    }
}

impl Backoff {
    /// Doubling waits from `first` up to `max`, without jitter.
    pub fn doubling(first: Duration, max: Duration) -> Backoff {
        Backoff::Exponential {
            initial: first,
            max,
            multiplier: 2.0,
            jitter: 0.0,
        }
    }

    /// The wait after failure number `failure` (1 for the first).
    ///
    /// # Examples
    ///
    /// ```
    /// use delayq::retry::Backoff;
    /// use std::time::Duration;
    ///
    /// let backoff = Backoff::doubling(Duration::from_millis(100), Duration::from_secs(1));
    /// assert_eq!(backoff.delay_for(1), Duration::from_millis(100));
    /// assert_eq!(backoff.delay_for(3), Duration::from_millis(400));
    /// assert_eq!(backoff.delay_for(10), Duration::from_secs(1));
    /// ```
    pub fn delay_for(&self, failure: u32) -> Duration {
        let failure = failure.max(1);
        match self {
            Backoff::Fixed(delay) => *delay,
            Backoff::Exponential {
                initial,
                max,
                multiplier,
                jitter,
            } => {
                let exponent = i32::try_from(failure - 1).unwrap_or(i32::MAX);
                let full = initial.as_secs_f64() * multiplier.powi(exponent);
                let capped = if full.is_finite() {
                    full.min(max.as_secs_f64())
                } else {
                    max.as_secs_f64()
                };
                let cut = if *jitter > 0.0 {
                    jitter.clamp(0.0, 1.0) * rand::random::<f64>()
                } else {
                    0.0
                };
                Duration::try_from_secs_f64(capped * (1.0 - cut)).unwrap_or(*max)
            }
            Backoff::Custom(delay) => delay(failure),
        }
    }
}

/// The waits of one of delayq's own retry loops (the scheduler after a failed transfer, the
/// worker after a failed take, a command refused during a slot migration): the backoff's wait
/// after each failure in a row, from the first again after a success.
#[derive(Debug, Clone)]
pub(crate) struct Retrying {
    backoff: Backoff,
    failures: u32,
}

impl Retrying {
    /// A loop with `backoff`, no failure yet.
    pub(crate) fn new(backoff: Backoff) -> Retrying {
        Retrying {
            backoff,
            failures: 0,
        }
    }

    /// Counts a failure and returns the wait before the next try.
    pub(crate) fn failed(&mut self) -> Duration {
        self.failures = self.failures.saturating_add(1);
        self.backoff.delay_for(self.failures)
    }

    /// Failures in a row so far.
    pub(crate) fn failures(&self) -> u32 {
        self.failures
    }

    /// A try succeeded: the next failure waits the first wait again.
    pub(crate) fn succeeded(&mut self) {
        self.failures = 0;
    }
}

/// What a retry loop has said about its failures: each kind of error is logged once at WARN,
/// its repeats at DEBUG, and the recovery once, so a daemon facing a lasting error does not
/// write a line a second.
#[derive(Debug, Default, Clone)]
pub(crate) struct FailureLog {
    last: Option<String>,
    repeats: u64,
}

impl FailureLog {
    /// Notes a failure with `text`; true when it is the first of its kind in a row (log it).
    pub(crate) fn first_of_kind(&mut self, text: &str) -> bool {
        if self.last.as_deref() == Some(text) {
            self.repeats += 1;
            false
        } else {
            self.last = Some(text.to_owned());
            self.repeats = 0;
            true
        }
    }

    /// Notes a success; returns how many failures came before it in a row (0: none).
    pub(crate) fn recovered(&mut self) -> u64 {
        match self.last.take() {
            Some(_) => std::mem::take(&mut self.repeats) + 1,
            None => 0,
        }
    }
}

/// When to retry a failed value, and after how long.
///
/// # Examples
///
/// ```
/// use delayq::RetryPolicy;
/// use std::time::Duration;
///
/// // Up to 5 attempts in all; waits of 1 s, 2 s, 4 s, 8 s (no jitter here, to show them).
/// let policy = RetryPolicy::exponential(5, Duration::from_secs(1), Duration::from_secs(60))
///     .with_jitter(0.0);
/// assert_eq!(policy.delay_for(1), Duration::from_secs(1));
/// assert_eq!(policy.delay_for(4), Duration::from_secs(8));
/// assert!(!policy.is_exhausted(4));
/// assert!(policy.is_exhausted(5));
/// ```
#[derive(Debug, Clone)]
pub struct RetryPolicy {
    max_attempts: u32,
    backoff: Backoff,
}

impl Default for RetryPolicy {
    /// 5 attempts, exponential from 1 s to 5 min, doubling, with 20 % jitter.
    fn default() -> Self {
        RetryPolicy::exponential(5, Duration::from_secs(1), Duration::from_secs(300))
    }
}

impl RetryPolicy {
    /// The same `delay` before each retry; `max_attempts` deliveries in all.
    pub fn fixed(max_attempts: u32, delay: Duration) -> Self {
        RetryPolicy {
            max_attempts,
            backoff: Backoff::Fixed(delay),
        }
    }

    /// Doubling waits from `initial` up to `max`, with 20 % jitter; `max_attempts` deliveries in
    /// all. Change the growth with [`with_multiplier`](Self::with_multiplier) and the jitter
    /// with [`with_jitter`](Self::with_jitter).
    pub fn exponential(max_attempts: u32, initial: Duration, max: Duration) -> Self {
        RetryPolicy {
            max_attempts,
            backoff: Backoff::Exponential {
                initial,
                max,
                multiplier: 2.0,
                jitter: 0.2,
            },
        }
    }

    /// Waits computed by `delay(n)` after failed attempt `n`; `max_attempts` deliveries in all.
    pub fn custom(
        max_attempts: u32,
        delay: impl Fn(u32) -> Duration + Send + Sync + 'static,
    ) -> Self {
        RetryPolicy {
            max_attempts,
            backoff: Backoff::Custom(Arc::new(delay)),
        }
    }

    /// One attempt only: a failure is a dead letter at once.
    pub fn no_retry() -> Self {
        RetryPolicy::fixed(1, Duration::ZERO)
    }

    /// Sets the jitter of an exponential policy (ignored by the others).
    /// Default: 0.2 (20 %) for [`RetryPolicy::default`].
    #[must_use]
    pub fn with_jitter(mut self, fraction: f64) -> Self {
        if let Backoff::Exponential { jitter, .. } = &mut self.backoff {
            *jitter = fraction;
        }
        self
    }

    /// Sets the growth of an exponential policy (ignored by the others).
    /// Default: 2.0, doubling.
    #[must_use]
    pub fn with_multiplier(mut self, factor: f64) -> Self {
        if let Backoff::Exponential { multiplier, .. } = &mut self.backoff {
            *multiplier = factor;
        }
        self
    }

    /// Sets the number of deliveries in all (first attempt included).
    /// Default: 5.
    #[must_use]
    pub fn with_max_attempts(mut self, max_attempts: u32) -> Self {
        self.max_attempts = max_attempts;
        self
    }

    /// Deliveries in all, the first one included.
    pub fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// The backoff.
    pub fn backoff(&self) -> &Backoff {
        &self.backoff
    }

    /// True when attempt `attempt` (1-based) was the last one allowed.
    pub fn is_exhausted(&self, attempt: u32) -> bool {
        attempt >= self.max_attempts
    }

    /// The wait before the next attempt after attempt `attempt` (1-based) failed.
    pub fn delay_for(&self, attempt: u32) -> Duration {
        self.backoff.delay_for(attempt)
    }

    /// Refuses settings that cannot work.
    pub(crate) fn validate(&self) -> Result<()> {
        if self.max_attempts == 0 {
            return Err(Error::InvalidConfig(
                "a retry policy needs at least 1 attempt".into(),
            ));
        }
        if let Backoff::Exponential {
            multiplier, jitter, ..
        } = &self.backoff
        {
            if !(multiplier.is_finite() && *multiplier >= 1.0) {
                return Err(Error::InvalidConfig(format!(
                    "backoff multiplier must be at least 1, not {multiplier}"
                )));
            }
            if !(0.0..=1.0).contains(jitter) {
                return Err(Error::InvalidConfig(format!(
                    "backoff jitter must be within 0..=1, not {jitter}"
                )));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exponential_grows_caps_and_jitters_downwards() {
        let policy =
            RetryPolicy::exponential(10, Duration::from_millis(100), Duration::from_secs(1))
                .with_jitter(0.0);
        let waits: Vec<u128> = (1..=6).map(|n| policy.delay_for(n).as_millis()).collect();
        assert_eq!(waits, [100, 200, 400, 800, 1000, 1000]);
        assert_eq!(policy.delay_for(u32::MAX), Duration::from_secs(1));

        let jittered = policy.with_jitter(0.5);
        for _ in 0..200 {
            let wait = jittered.delay_for(3);
            assert!(wait <= Duration::from_millis(400), "{wait:?}");
            assert!(wait >= Duration::from_millis(200), "{wait:?}");
        }
    }

    #[test]
    fn fixed_custom_and_limits() {
        let fixed = RetryPolicy::fixed(3, Duration::from_millis(250));
        assert_eq!(fixed.delay_for(1), Duration::from_millis(250));
        assert_eq!(fixed.delay_for(7), Duration::from_millis(250));
        assert!(!fixed.is_exhausted(2));
        assert!(fixed.is_exhausted(3));
        assert!(RetryPolicy::no_retry().is_exhausted(1));

        let custom = RetryPolicy::custom(4, |n| Duration::from_secs(u64::from(n) * 10));
        assert_eq!(custom.delay_for(2), Duration::from_secs(20));
        assert_eq!(format!("{:?}", custom.backoff()), "Custom(..)");
    }

    #[test]
    fn retry_loops_double_and_start_again_after_a_success() {
        let mut retrying = Retrying::new(Backoff::doubling(
            Duration::from_millis(100),
            Duration::from_millis(500),
        ));
        let waits: Vec<u128> = (0..5).map(|_| retrying.failed().as_millis()).collect();
        assert_eq!(waits, [100, 200, 400, 500, 500]);
        assert_eq!(retrying.failures(), 5);
        retrying.succeeded();
        assert_eq!(retrying.failed(), Duration::from_millis(100));
    }

    #[test]
    fn failures_are_said_once_per_kind() {
        let mut log = FailureLog::default();
        assert!(log.first_of_kind("WRONGTYPE a"));
        assert!(!log.first_of_kind("WRONGTYPE a"));
        assert!(!log.first_of_kind("WRONGTYPE a"));
        assert!(log.first_of_kind("connection reset"));
        assert_eq!(log.recovered(), 1);
        assert_eq!(log.recovered(), 0);
        assert!(log.first_of_kind("WRONGTYPE a"));
        assert!(!log.first_of_kind("WRONGTYPE a"));
        assert_eq!(log.recovered(), 2);
    }

    #[test]
    fn bad_settings_are_refused() {
        assert!(RetryPolicy::fixed(0, Duration::ZERO).validate().is_err());
        let base = RetryPolicy::exponential(3, Duration::from_secs(1), Duration::from_secs(2));
        assert!(base.clone().with_multiplier(0.5).validate().is_err());
        assert!(base.clone().with_multiplier(f64::NAN).validate().is_err());
        assert!(base.clone().with_jitter(1.5).validate().is_err());
        assert!(base.validate().is_ok());
    }
}
