//! [`ObserveConfig`]: what a worker or scheduler keeps in Redis about itself.

use crate::{Error, Result};
use std::time::Duration;

/// What a worker or scheduler process keeps in Redis for the console and for other processes:
/// per-minute and per-day activity counts of each queue it serves (moved, taken, acked,
/// retried, dead; read with [`Inspect::activity`](crate::inspect::Inspect::activity) and
/// [`Inspect::days`](crate::inspect::Inspect::days)), and its record in the
/// registry of live processes (read with
/// [`Inspect::processes`](crate::inspect::Inspect::processes)). Both are on by
/// default; set with the `with_*` methods, read with the methods of the same name.
///
/// Counts are added up in the process and written every
/// [`flush_interval`](Self::with_flush_interval) in one pipelined round trip; the record is
/// written again every third of its [`registry_ttl`](Self::with_registry_ttl), and removed at
/// a clean shutdown.
///
/// # Examples
///
/// ```
/// use delayq::ObserveConfig;
/// use std::time::Duration;
///
/// let config = ObserveConfig::default().with_flush_interval(Duration::from_secs(2));
/// assert!(config.activity() && config.registry());
/// assert!(!ObserveConfig::off().activity());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ObserveConfig {
    activity: bool,
    registry: bool,
    flush_interval: Duration,
    history: Duration,
    registry_ttl: Duration,
}

impl Default for ObserveConfig {
    fn default() -> Self {
        ObserveConfig {
            activity: true,
            registry: true,
            flush_interval: Duration::from_secs(5),
            history: Duration::from_secs(2 * 60 * 60),
            registry_ttl: Duration::from_secs(30),
        }
    }
}

impl ObserveConfig {
    /// Nothing kept: no activity counts, no registry record.
    pub fn off() -> ObserveConfig {
        ObserveConfig {
            activity: false,
            registry: false,
            ..ObserveConfig::default()
        }
    }

    /// Keeps (or not) the activity counts, per minute and per day.
    /// Default: true.
    #[must_use]
    pub fn with_activity(mut self, on: bool) -> Self {
        self.activity = on;
        self
    }

    /// Keeps (or not) the process's record in the registry.
    /// Default: true.
    #[must_use]
    pub fn with_registry(mut self, on: bool) -> Self {
        self.registry = on;
        self
    }

    /// How often the counts added up in the process are written (default 5 s).
    #[must_use]
    pub fn with_flush_interval(mut self, interval: Duration) -> Self {
        self.flush_interval = interval;
        self
    }

    /// How long a minute's counts are kept: the time to live of its key (default 2 hours,
    /// at least a minute).
    #[must_use]
    pub fn with_history(mut self, history: Duration) -> Self {
        self.history = history;
        self
    }

    /// How long the process's record outlives its last beat (default 30 s): a process that
    /// dies without shutting down leaves the registry that long after.
    #[must_use]
    pub fn with_registry_ttl(mut self, ttl: Duration) -> Self {
        self.registry_ttl = ttl;
        self
    }

    /// Whether activity counts are kept.
    pub fn activity(&self) -> bool {
        self.activity
    }

    /// Whether the registry record is kept.
    pub fn registry(&self) -> bool {
        self.registry
    }

    /// How often counts are written.
    pub fn flush_interval(&self) -> Duration {
        self.flush_interval
    }

    /// How long a minute's counts are kept.
    pub fn history(&self) -> Duration {
        self.history
    }

    /// How long the record outlives its last beat.
    pub fn registry_ttl(&self) -> Duration {
        self.registry_ttl
    }

    /// How often the record is written again: three beats to a time to live, so that one
    /// late or failed beat does not drop a live process from the list.
    pub(crate) fn beat_interval(&self) -> Duration {
        self.registry_ttl / 3
    }

    pub(crate) fn validate(&self) -> Result<()> {
        if self.flush_interval.is_zero() || self.registry_ttl < Duration::from_millis(30) {
            return Err(Error::InvalidConfig(
                "flush_interval must be positive and registry_ttl at least 30 ms".into(),
            ));
        }
        if self.history < Duration::from_secs(60) {
            return Err(Error::InvalidConfig(
                "history must be at least a minute".into(),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_is_checked() {
        assert!(ObserveConfig::default().validate().is_ok());
        let zero = ObserveConfig::default().with_flush_interval(Duration::ZERO);
        assert!(zero.validate().is_err());
        let short = ObserveConfig::default().with_history(Duration::from_secs(59));
        assert!(short.validate().is_err());
        let ttl = ObserveConfig::default().with_registry_ttl(Duration::from_millis(1));
        assert!(ttl.validate().is_err());
    }
}
