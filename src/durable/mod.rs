//! Durable offers: after a write, wait until replicas (`WAIT`) or append-only files
//! (`WAITAOF`) hold it, before the call says it is done.
//!
//! - `mod.rs`: [`Durability`], what a queue asks for.
//! - `confirm.rs`: the [`Confirmer`]: the connection durable writes go on, and the one task
//!   that sends `WAIT`/`WAITAOF` on it for every writer waiting at that moment.
//! - `replicas.rs`: how many replicas a wait for every replica waits for, from the record of
//!   replicas every process shares on the master.
//! - `writes.rs`: [`DurableWrites`], a queue's confirmer opened on first use, and [`Writer`],
//!   the one way a write picks its connection and waits.
//!
//! `WAIT` covers the writes its connection made before it, so the writes and the wait must go
//! on the same connection; the confirmer's connection is its own (not the queue's client) so
//! that a wait, which blocks its connection for up to the timeout, never holds up the queue's
//! other calls or its scheduler.

mod confirm;
mod replicas;
mod writes;

pub(crate) use confirm::Confirmer;
pub(crate) use writes::{DurableWrites, Writer};

use std::time::Duration;

/// What a write waits for before it is reported done: nothing (plain offers, the default), a
/// number of replicas (`WAIT n timeout`), and, on servers with `WAITAOF` (Redis 7.2+, Valkey),
/// the master's own append-only file.
///
/// Set it on a queue with [`DelayedQueueBuilder::durability`](crate::DelayedQueueBuilder::durability),
/// or for some calls with [`DelayedQueue::with_durability`](crate::DelayedQueue::with_durability).
/// When the confirmations do not come within the timeout the write returns
/// [`Error::NotConfirmed`](crate::Error::NotConfirmed): the value **was written** on the master
/// and may or may not survive a failover.
///
/// `WAIT` does not make Redis strongly consistent: a replica that acknowledged a write can still
/// lose it when another replica is promoted (see `docs/durability.md`).
///
/// # Examples
///
/// ```
/// use delayq::Durability;
/// use std::time::Duration;
///
/// // One replica within 500 ms (WAIT 1 500).
/// let one = Durability::replicas(1).timeout(Duration::from_millis(500));
/// // The master's AOF and one replica's AOF fsynced (WAITAOF 1 1 1000).
/// let disk = Durability::replicas(1).local_aof();
/// assert!(disk.uses_aof() && !one.uses_aof());
/// assert!(Durability::none().is_none());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Durability {
    replicas: u32,
    local_aof: bool,
    timeout: Option<Duration>,
    every: bool,
}

impl Durability {
    /// How long a durable write waits for its confirmations unless told otherwise.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1);

    /// The longest [`timeout`](Self::timeout) a write takes: a wait blocks the queue's durable
    /// connection (every durable write of the queue behind it) for as long, so a longer one is
    /// refused before anything is written.
    pub const MAX_TIMEOUT: Duration = Duration::from_secs(3_600);

    /// No waiting: a write is done when the master has it (plain offers).
    pub const fn none() -> Durability {
        Durability {
            replicas: 0,
            local_aof: false,
            timeout: None,
            every: false,
        }
    }

    /// Wait until `n` replicas acknowledged the write (`WAIT n timeout`), for at most
    /// [`DEFAULT_TIMEOUT`](Self::DEFAULT_TIMEOUT) unless [`timeout`](Self::timeout) says otherwise.
    pub const fn replicas(n: u32) -> Durability {
        Durability {
            replicas: n,
            local_aof: false,
            timeout: None,
            every: false,
        }
    }

    /// Wait until every replica the master has had acknowledged the write: the most replicas
    /// any delayq process has seen connected to the master in the last 24 hours, at least one.
    /// Each wait reads `connected_slaves` and a record on the master itself
    /// (`delayq_replicas`; in a Cluster `delayq_replicas:{TAG}`, in the written key's slot),
    /// and raises the record when it sees more. A replica that leaves is still waited for, also
    /// by a process started after it left, so a forced `SENTINEL FAILOVER` loses nothing that
    /// was confirmed: the promoted replica stops following the old master, which can then
    /// confirm nothing more (`docs/durability.md`). The price: every write is
    /// [`NotConfirmed`](crate::Error::NotConfirmed) while any replica once seen is missing;
    /// after replicas were removed for good, delete the record (`DEL delayq_replicas`). A user
    /// who may not read and write the record gets a warning, and each process then counts only
    /// the replicas it has seen itself.
    pub const fn every_replica() -> Durability {
        Durability {
            replicas: 0,
            local_aof: false,
            timeout: None,
            every: true,
        }
    }

    /// Also wait until the master fsynced the write to its append-only file: the wait becomes
    /// `WAITAOF 1 n timeout`, in which a replica counts once it has fsynced the write to *its*
    /// AOF (stronger than `WAIT`'s "received"). Needs `appendonly yes` on the servers and a
    /// server with `WAITAOF` (Redis 7.2+, Valkey); without it the first durable call fails with
    /// [`Error::InvalidConfig`](crate::Error::InvalidConfig) before anything is written.
    /// Default: no AOF wait.
    pub const fn local_aof(mut self) -> Durability {
        self.local_aof = true;
        self
    }

    /// The longest a write waits for its confirmations (rounded up to whole milliseconds; at
    /// least 1 ms, as `WAIT 0` would wait forever). Default: [`Durability::DEFAULT_TIMEOUT`], 1 s.
    pub const fn timeout(mut self, timeout: Duration) -> Durability {
        self.timeout = Some(timeout);
        self
    }

    /// Replicas a write waits for (for [`every_replica`](Self::every_replica): 0, as the
    /// number is found at each wait).
    pub const fn wanted_replicas(&self) -> u32 {
        self.replicas
    }

    /// Whether a write waits for every replica the master has had.
    pub const fn waits_for_every_replica(&self) -> bool {
        self.every
    }

    /// Whether a write waits for the master's append-only file.
    pub const fn wants_local_aof(&self) -> bool {
        self.local_aof
    }

    /// Whether the wait is `WAITAOF` rather than `WAIT`.
    pub const fn uses_aof(&self) -> bool {
        self.local_aof
    }

    /// Whether writes wait for nothing (plain offers).
    pub const fn is_none(&self) -> bool {
        self.replicas == 0 && !self.local_aof && !self.every
    }

    /// The wait's timeout in ms, as `WAIT` takes it (at least 1).
    pub fn timeout_ms(&self) -> u64 {
        let timeout = self.timeout.unwrap_or(Self::DEFAULT_TIMEOUT);
        let ms =
            timeout.as_millis() + u128::from(!timeout.subsec_nanos().is_multiple_of(1_000_000));
        u64::try_from(ms).unwrap_or(u64::MAX).max(1)
    }

    /// The wait's timeout.
    pub fn wait_timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms())
    }

    /// Refuses a timeout over [`MAX_TIMEOUT`](Self::MAX_TIMEOUT).
    pub(crate) fn check_timeout(&self) -> crate::Result<()> {
        match self.timeout {
            Some(timeout) if timeout > Self::MAX_TIMEOUT => {
                Err(crate::Error::InvalidConfig(format!(
                    "a durable write's wait timeout of {timeout:?} is over the most, {:?}: the \
                     wait would hold the queue's durable connection that long; nothing was \
                     written",
                    Self::MAX_TIMEOUT
                )))
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_round_up_to_whole_ms_and_never_reach_zero() {
        let d = Durability::replicas(1);
        assert_eq!(d.timeout_ms(), 1000);
        assert_eq!(d.timeout(Duration::ZERO).timeout_ms(), 1);
        assert_eq!(d.timeout(Duration::from_micros(1500)).timeout_ms(), 2);
        assert!(Durability::replicas(0).is_none());
        assert!(!Durability::replicas(0).local_aof().is_none());
    }

    #[test]
    fn timeouts_over_an_hour_are_refused() {
        let d = Durability::replicas(1);
        assert!(d.check_timeout().is_ok());
        assert!(d.timeout(Durability::MAX_TIMEOUT).check_timeout().is_ok());
        let long = d.timeout(Durability::MAX_TIMEOUT + Duration::from_millis(1));
        assert!(long.check_timeout().is_err());
        let forever = d.timeout(Duration::from_secs(1000 * 365 * 86_400));
        assert!(forever.check_timeout().is_err());
    }
}
