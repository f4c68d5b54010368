//! Time: the current epoch millisecond, whose clock stamps due times, and the range of a due
//! time.
//!
//! Redisson's due times are wall-clock epoch milliseconds (`System.currentTimeMillis()` plus the
//! delay), stored as zset scores. A score holds an integer exactly up to 2^53, so every delay is
//! checked here before anything is sent: a due time past [`MAX_DUE_MS`] is refused with
//! [`Error::InvalidDelay`].
//!
//! "Now" reaches the Lua scripts in one way only: the first argument of every script, either
//! this process's epoch ms ([`Clock::Client`]) or the word `server`, which makes the script read
//! the Redis server's `TIME` ([`Clock::Server`]); see `lua/lib/time.lua`.

use crate::{Error, Result};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Largest due time (epoch ms) a zset score holds exactly: 2^53 - 1.
pub const MAX_DUE_MS: i64 = (1 << 53) - 1;

/// The current time in epoch milliseconds, as Java's `System.currentTimeMillis()`.
///
/// # Examples
///
/// ```
/// let now = delayq::time::now_ms();
/// assert!(now > 1_700_000_000_000);
/// ```
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// The current time in epoch microseconds (the scheduler's timer wakes to well under a
/// millisecond).
pub(crate) fn now_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

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
/// NTP either way. The Rust scheduler sleeps until the next due time by the server's clock too
/// (each transfer reports the time it went by, and the scheduler keeps the difference).
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
    /// "Now" by this clock, as the scripts take it.
    pub(crate) fn now(self) -> Now {
        match self {
            Clock::Client => Now::Millis(now_ms()),
            Clock::Server => Now::Server,
        }
    }
}

/// The current time as a script's first argument: epoch ms read here, or the server's `TIME`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Now {
    /// This process's clock, read when the call was built.
    Millis(i64),
    /// The script reads the Redis server's `TIME`.
    Server,
}

impl Now {
    /// The wire form: decimal epoch ms, or `server`.
    pub(crate) fn to_arg(self) -> fred::types::Value {
        match self {
            Now::Millis(ms) => ms.into(),
            Now::Server => "server".into(),
        }
    }
}

/// A delay in whole milliseconds that, added to the current time, still fits a score.
///
/// Built only by [`Delay::checked`], so every delay sent to a script has been range-checked
/// against this host's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Delay(i64);

impl Delay {
    /// `delay`, truncated to milliseconds, refused when `now + delay` leaves the exact range
    /// of a zset score.
    pub(crate) fn checked(delay: Duration) -> Result<Delay> {
        due_time(now_ms(), delay)?;
        Ok(Delay(whole_ms(delay).unwrap_or(i64::MAX)))
    }

    /// A length of time that is not a due time (a visibility timeout, a lease, a retention),
    /// refused when it alone does not fit a score.
    pub(crate) fn span(span: Duration) -> Result<Delay> {
        due_time(0, span)?;
        Ok(Delay(whole_ms(span).unwrap_or(i64::MAX)))
    }

    /// The delay in milliseconds.
    pub(crate) fn ms(self) -> i64 {
        self.0
    }
}

fn whole_ms(d: Duration) -> Option<i64> {
    i64::try_from(d.as_millis()).ok()
}

/// Due time for `delay` from `now_ms`, refused when it leaves the exact range of a zset score.
pub(crate) fn due_time(now_ms: i64, delay: Duration) -> Result<i64> {
    whole_ms(delay)
        .and_then(|ms| now_ms.checked_add(ms))
        .filter(|due| *due <= MAX_DUE_MS)
        .ok_or_else(|| {
            Error::InvalidDelay(format!(
                "a delay of {delay:?} puts the due time past {MAX_DUE_MS} ms since the epoch"
            ))
        })
}

/// An instant typed by a person or a config file: RFC 3339 with its offset
/// (`2026-12-01T00:00:00Z`, `2026-12-01T01:00:00+01:00`) or epoch milliseconds; epoch ms.
///
/// ```
/// use delayq::time::parse_instant;
///
/// assert_eq!(parse_instant("1970-01-01T01:00:01+01:00").unwrap(), 1_000);
/// assert_eq!(parse_instant("1764547200000").unwrap(), 1_764_547_200_000);
/// assert!(parse_instant("tomorrow").is_err());
/// ```
pub fn parse_instant(text: &str) -> Result<i64> {
    if let Ok(ms) = text.trim().parse::<i64>() {
        return Ok(ms);
    }
    text.trim()
        .parse::<jiff::Timestamp>()
        .map(|at| at.as_millisecond())
        .map_err(|err| {
            Error::InvalidSchedule(format!(
                "{text:?} is not a time ({err}); use RFC 3339 (2026-12-01T00:00:00Z) or epoch ms"
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_times_are_bounded() {
        assert_eq!(due_time(1_000, Duration::from_millis(1500)).unwrap(), 2_500);
        assert_eq!(due_time(1_000, Duration::from_micros(1999)).unwrap(), 1_001);
        assert!(matches!(
            due_time(1_000, Duration::from_secs(u64::MAX)),
            Err(Error::InvalidDelay(_))
        ));
        assert!(due_time(MAX_DUE_MS - 5, Duration::from_millis(5)).is_ok());
        assert!(due_time(MAX_DUE_MS - 5, Duration::from_millis(6)).is_err());
    }

    #[test]
    fn delays_are_checked_against_now_and_spans_alone() {
        assert_eq!(
            Delay::checked(Duration::from_millis(1500)).unwrap().ms(),
            1500
        );
        let huge = Duration::from_millis(MAX_DUE_MS as u64);
        assert!(Delay::checked(huge).is_err());
        assert_eq!(Delay::span(huge).unwrap().ms(), MAX_DUE_MS);
        assert!(Delay::span(huge + Duration::from_millis(1)).is_err());
    }

    #[test]
    fn now_goes_to_the_scripts_as_ms_or_server() {
        assert_eq!(Now::Server.to_arg(), "server".into());
        assert_eq!(Now::Millis(42).to_arg(), 42.into());
        assert!(matches!(Clock::Client.now(), Now::Millis(ms) if ms > 0));
        assert_eq!(Clock::Server.now(), Now::Server);
    }
}
