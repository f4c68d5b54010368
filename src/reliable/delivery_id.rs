//! Delivery ids that say who took the value, when, and which attempt it is, at no cost in
//! Redis: `PROCESS.STARTED_MS.RANDOM.ATTEMPT`. The taking process writes the first three parts
//! (its [process id](crate::process::id), its clock at the take in epoch ms, 16 hex digits);
//! the take script appends the attempt it counted. The in-flight keys hold nothing more than
//! before, and a listing of them reads it all from the members.
//!
//! Ids of the earlier form (32 hex digits, nothing else; still in flight from an older delayq
//! when a newer one is deployed) stay valid everywhere; they read with every part unknown.

use serde::Serialize;

/// What a delivery id says of its delivery; all unknown for an id of the old form (or one
/// that is not delayq's). Serializes with its fields' names (`process`, `started_ms`,
/// `attempt`), the names the dashboard's API and the CLI use for them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct DeliveryOrigin {
    /// The id of the process that took the value: a [`ProcessInfo::id`](crate::inspect::ProcessInfo::id)
    /// while that process lives.
    pub process: Option<String>,
    /// When that process took it, epoch ms (by its clock).
    pub started_ms: Option<i64>,
    /// Which delivery of the value this is (1 for the first).
    pub attempt: Option<u32>,
}

impl DeliveryOrigin {
    /// Reads a delivery id.
    ///
    /// ```
    /// use delayq::reliable::DeliveryOrigin;
    ///
    /// let origin = DeliveryOrigin::of("box-7-0a1b2c3d.1700000000000.00112233445566ff.2");
    /// assert_eq!(origin.process.as_deref(), Some("box-7-0a1b2c3d"));
    /// assert_eq!((origin.started_ms, origin.attempt), (Some(1_700_000_000_000), Some(2)));
    /// assert_eq!(DeliveryOrigin::of("00112233445566778899aabbccddeeff"), DeliveryOrigin::default());
    /// ```
    pub fn of(id: &str) -> DeliveryOrigin {
        // From the right: the process's part may hold dots (a host name's).
        let mut parts = id.rsplitn(4, '.');
        let (Some(attempt), Some(random), Some(started), Some(process)) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return DeliveryOrigin::default();
        };
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        let well_formed = random.len() == RANDOM_HEX
            && random.bytes().all(|b| b.is_ascii_hexdigit())
            && digits(started)
            && digits(attempt)
            && !process.is_empty();
        match (well_formed, started.parse(), attempt.parse()) {
            (true, Ok(started_ms), Ok(attempt)) => DeliveryOrigin {
                process: Some(process.to_owned()),
                started_ms: Some(started_ms),
                attempt: Some(attempt),
            },
            _ => DeliveryOrigin::default(),
        }
    }
}

/// How many hex digits a delivery id's random part has (64 bits: the process and the
/// millisecond already set ids apart, so this only has to beat takes within one).
const RANDOM_HEX: usize = 16;

/// The first parts of a fresh delivery id, for a take at `now_ms` by this process: the take
/// script appends the attempt.
pub(crate) fn fresh(now_ms: i64) -> String {
    format!(
        "{}.{now_ms}.{:016x}.",
        crate::process::id(),
        rand::random::<u64>()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_id_reads_back_once_the_attempt_is_appended() {
        let id = format!("{}3", fresh(1_733_000_000_123));
        let origin = DeliveryOrigin::of(&id);
        assert_eq!(origin.process.as_deref(), Some(crate::process::id()));
        assert_eq!(origin.started_ms, Some(1_733_000_000_123));
        assert_eq!(origin.attempt, Some(3));
        assert_ne!(fresh(1), fresh(1));
    }

    #[test]
    fn hosts_with_dots_and_other_ids_read_as_they_should() {
        let origin = DeliveryOrigin::of("a.b.example-1-00000001.5.0123456789abcdef.1");
        assert_eq!(origin.process.as_deref(), Some("a.b.example-1-00000001"));
        for other in [
            "0123456789abcdef0123456789abcdef",
            "",
            "p.5.0123456789abcdef.",
            "p.5.0123456789abcdeg.1",
            "p.x.0123456789abcdef.1",
            ".5.0123456789abcdef.1",
            "p.5.0123.1",
        ] {
            assert_eq!(
                DeliveryOrigin::of(other),
                DeliveryOrigin::default(),
                "{other}"
            );
        }
    }
}
