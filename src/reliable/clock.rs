//! Whose clock stamps due times and decides what is due.

use fred::prelude::Value;

/// Which clock stamps due times (offer, retry, reschedule) and decides what is due (transfer,
/// visibility deadlines of the reliable consumer).
///
/// Redisson always uses the clock of the JVM that offers or transfers
/// (`System.currentTimeMillis()`), so every Java peer's clock error shows up as early or late
/// delivery. [`Clock::Server`] makes delayq's scripts read the Redis server's `TIME` instead:
/// one clock for every Rust process, whatever their hosts' clocks say.
///
/// # Trade-off with Java peers
///
/// Java peers still stamp and transfer with their own clocks. If a Java host is `s` ms ahead of
/// the Redis server, values it offers are due `s` ms later by the server's clock, and its
/// scheduler transfers Rust-offered values up to `s` ms early (or late when it is behind).
/// `Clock::Server` removes the skew among Rust processes only; it cannot fix Java's. Keep hosts on
/// NTP either way. The Rust scheduler still sleeps by its local clock until the next due time,
/// so with a skewed host a Rust-transferred value may also arrive up to the skew late, bounded by
/// the scheduler's safety sweep (1 s by default).
///
/// The scripts call `TIME`, which Redis 7 allows in scripts because it replicates their
/// effects, not the scripts; on Redis before 5 (whole-script replication) use `Clock::Client`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Clock {
    /// This process's clock, as Redisson does (the default).
    #[default]
    Client,
    /// The Redis server's clock (`TIME`, read inside each script).
    Server,
}

impl Clock {
    /// The `now` argument of delayq's scripts: epoch ms, or `"server"`.
    pub(crate) fn lua_now(self) -> Value {
        match self {
            Clock::Client => crate::scheduler::now_ms().into(),
            Clock::Server => "server".into(),
        }
    }
}
