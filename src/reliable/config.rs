//! [`ReliableConfig`]: visibility timeout, blocking waits, the reaper and dead-letter limits.

use crate::time::Delay;
use crate::{Error, Result};
use std::time::Duration;

/// Settings of a [`ReliableConsumer`](crate::ReliableConsumer) (and of a worker's). Set with
/// the `with_*` methods, read with the methods of the same name.
///
/// # Examples
///
/// ```
/// use delayq::ReliableConfig;
/// use std::time::Duration;
///
/// let config = ReliableConfig::default().with_visibility(Duration::from_secs(60));
/// assert_eq!(config.visibility(), Duration::from_secs(60));
/// assert_eq!(config.reap_batch(), 100);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReliableConfig {
    visibility: Duration,
    wait_slice: Duration,
    reap_interval: Option<Duration>,
    reap_batch: usize,
    attempts_retention: Option<Duration>,
    dead_letter_limit: usize,
}

impl Default for ReliableConfig {
    fn default() -> Self {
        ReliableConfig {
            visibility: Duration::from_secs(30),
            wait_slice: Duration::from_secs(1),
            reap_interval: Some(Duration::from_secs(1)),
            reap_batch: 100,
            attempts_retention: Some(Duration::from_secs(7 * 24 * 3600)),
            dead_letter_limit: 10_000,
        }
    }
}

impl ReliableConfig {
    /// Sets the visibility timeout: how long a taken value stays ours without an ack or a
    /// heartbeat before a reaper gives it back. Default: 30 s.
    #[must_use]
    pub fn with_visibility(mut self, visibility: Duration) -> Self {
        self.visibility = visibility;
        self
    }

    /// Sets the longest single blocking wait for the target list; also how often a waiting
    /// consumer reaps and settles dropped deliveries. Default: 1 s.
    #[must_use]
    pub fn with_wait_slice(mut self, slice: Duration) -> Self {
        self.wait_slice = slice;
        self
    }

    /// Sets how often the consumer runs the reaper (`None`: never; run it elsewhere). Default:
    /// 1 s.
    #[must_use]
    pub fn with_reap_interval(mut self, interval: impl Into<Option<Duration>>) -> Self {
        self.reap_interval = interval.into();
        self
    }

    /// Sets the most values the reaper moves per script call. Default: 100.
    #[must_use]
    pub fn with_reap_batch(mut self, batch: usize) -> Self {
        self.reap_batch = batch;
        self
    }

    /// Sets how long an attempt counter nobody touched is kept (`None`: forever). Default: 7
    /// days.
    #[must_use]
    pub fn with_attempts_retention(mut self, retention: impl Into<Option<Duration>>) -> Self {
        self.attempts_retention = retention.into();
        self
    }

    /// Sets the most dead letters kept; older ones are trimmed (0: no limit). Default: 10,000.
    #[must_use]
    pub fn with_dead_letter_limit(mut self, limit: usize) -> Self {
        self.dead_letter_limit = limit;
        self
    }

    /// The visibility timeout.
    pub fn visibility(&self) -> Duration {
        self.visibility
    }

    /// The longest single blocking wait.
    pub fn wait_slice(&self) -> Duration {
        self.wait_slice
    }

    /// How often the consumer runs the reaper (`None`: never).
    pub fn reap_interval(&self) -> Option<Duration> {
        self.reap_interval
    }

    /// The most values the reaper moves per call.
    pub fn reap_batch(&self) -> usize {
        self.reap_batch
    }

    /// How long an untouched attempt counter is kept (`None`: forever).
    pub fn attempts_retention(&self) -> Option<Duration> {
        self.attempts_retention
    }

    /// The most dead letters kept (0: no limit).
    pub fn dead_letter_limit(&self) -> usize {
        self.dead_letter_limit
    }

    pub(crate) fn validate(&self) -> Result<()> {
        if self.visibility < Duration::from_millis(10) {
            return Err(Error::InvalidConfig(format!(
                "visibility must be at least 10 ms, not {:?}",
                self.visibility
            )));
        }
        Delay::span(self.visibility)?;
        if self.wait_slice < Duration::from_millis(10) {
            return Err(Error::InvalidConfig(
                "wait_slice must be at least 10 ms".into(),
            ));
        }
        if self.reap_interval == Some(Duration::ZERO) {
            return Err(Error::InvalidConfig(
                "reap_interval must be positive (or None)".into(),
            ));
        }
        if self.reap_batch == 0 {
            return Err(Error::InvalidConfig("reap_batch must be at least 1".into()));
        }
        Ok(())
    }
}
