//! A queue's health as the overview judges it: one of [`STATES`] and the reason in words, from
//! what its row read (pause flag, most overdue entry, the last minutes' activity) and how long
//! the background read has seen its list holding values. Every threshold lives here
//! (docs/dashboard.md describes them).

use std::time::Duration;

/// A queue whose head has been due this long is "stuck": a running scheduler (delayq's or
/// Redisson's) moves due entries within milliseconds, so no transfer has run for that long.
pub(crate) const STUCK_MS: i64 = 10_000;
/// Failures (retried plus dead-lettered) over the activity's minutes that make a queue
/// "failing", when they are also at least [`FAILING_SHARE_PERCENT`] of the outcomes: a single
/// failure among few jobs is noise.
pub(super) const FAILING_AT_LEAST: u64 = 5;
/// The share of outcomes (acked, retried, dead) that failed at or above which a queue with
/// [`FAILING_AT_LEAST`] failures is "failing".
pub(super) const FAILING_SHARE_PERCENT: u64 = 50;
/// How long the queue's list may be seen holding values, with fewer taken over the activity's
/// minutes than wait, before it is "lagging" (`delayq ui --lagging-after`).
pub(crate) const LAGGING_AFTER: Duration = Duration::from_secs(5 * 60);

/// The states, worst first: the order "problems first" puts queues in. `unreadable`: a key of
/// the queue cannot be read (wrong type, say).
pub(super) const STATES: [&str; 6] = ["unreadable", "stuck", "failing", "lagging", "paused", "ok"];

/// What a queue's health is judged from.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Signals {
    pub(super) paused: bool,
    /// How long its earliest pending entry has been due (0: none due).
    pub(super) overdue_ms: i64,
    /// Values on its list now.
    pub(super) ready: u64,
    /// How long its list has been seen holding values without emptying (none: empty, or not
    /// read yet): the age of the oldest ready value, as near as the background read tells.
    pub(super) ready_age_ms: Option<i64>,
    /// Over the last [`RATE_MINUTES`](super::activity::RATE_MINUTES) (all 0 where not read).
    pub(super) taken: u64,
    pub(super) acked: u64,
    pub(super) retried: u64,
    pub(super) dead: u64,
}

/// A state of [`STATES`] and why, in words ("" for `ok`, and for `paused` unless its head is
/// overdue).
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Health {
    pub(super) state: &'static str,
    pub(super) reason: String,
}

/// The health `signals` show with the lag threshold `lagging_after`. When several apply, the
/// one that explains the others wins: stuck (nothing moves), failing, paused (a paused queue's
/// values wait on purpose, so its overdue head is the pause's doing, not a stuck scheduler's),
/// lagging.
pub(super) fn judge(signals: &Signals, lagging_after: Duration) -> Health {
    let s = signals;
    let health = |state, reason: String| Health { state, reason };
    let failures = s.retried + s.dead;
    let outcomes = failures + s.acked;
    let minutes = super::activity::RATE_MINUTES;
    let lag_ms = i64::try_from(lagging_after.as_millis()).unwrap_or(i64::MAX);
    let lagging = s
        .ready_age_ms
        .filter(|&age| age >= lag_ms && s.taken < s.ready);
    let overdue = (s.overdue_ms >= STUCK_MS).then(|| span(s.overdue_ms));
    if let (Some(overdue), false) = (&overdue, s.paused) {
        return health("stuck", format!("overdue {overdue}, no transfer seen"));
    }
    if failures >= FAILING_AT_LEAST && failures * 100 >= FAILING_SHARE_PERCENT * outcomes {
        let retried = match s.retried {
            0 => String::new(),
            n => format!("{n} retried, "),
        };
        let (dead, acked) = (s.dead, s.acked);
        let reason = format!("{dead} dead, {retried}{acked} acked in {minutes} min");
        return health("failing", reason);
    }
    if s.paused {
        let reason = overdue.map(|o| format!("overdue {o}")).unwrap_or_default();
        return health("paused", reason);
    }
    if let Some(age) = lagging {
        let reason = format!(
            "oldest ready {}, {} waiting, {} taken in {minutes} min",
            span(age),
            s.ready,
            s.taken
        );
        return health("lagging", reason);
    }
    health("ok", String::new())
}

/// `ms` as people say it, to the two largest units: "12 s", "25 min", "17 h 41 min", "3 d 2 h".
pub(super) fn span(ms: i64) -> String {
    const UNITS: [(i64, &str); 4] = [(86_400, "d"), (3_600, "h"), (60, "min"), (1, "s")];
    let mut seconds = ms.max(0) / 1_000;
    let mut parts = Vec::new();
    for (size, unit) in UNITS {
        if seconds >= size || (parts.is_empty() && size == 1) {
            parts.push(format!("{} {unit}", seconds / size));
            seconds %= size;
        }
        if parts.len() == 2 || (!parts.is_empty() && seconds == 0) {
            break;
        }
    }
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const LAG: Duration = LAGGING_AFTER;

    #[test]
    fn a_paused_queue_whose_head_is_overdue_is_paused_not_stuck() {
        let paused = Signals {
            paused: true,
            overdue_ms: 90_000,
            ..Signals::default()
        };
        let expected = Health {
            state: "paused",
            reason: "overdue 1 min 30 s".to_owned(),
        };
        assert_eq!(judge(&paused, LAG), expected);
        let running = Signals {
            paused: false,
            ..paused
        };
        assert_eq!(judge(&running, LAG).state, "stuck");
        let due_now = Signals {
            overdue_ms: 0,
            ..paused
        };
        assert_eq!(judge(&due_now, LAG).reason, "");
    }

    #[test]
    fn a_queue_whose_every_job_failed_is_failing_with_its_counts() {
        let all_dead = Signals {
            dead: 20,
            ..Signals::default()
        };
        let expected = Health {
            state: "failing",
            reason: "20 dead, 0 acked in 5 min".to_owned(),
        };
        assert_eq!(judge(&all_dead, LAG), expected);
        let mostly_acked = Signals {
            dead: 5,
            retried: 1,
            acked: 100,
            ..Signals::default()
        };
        assert_eq!(judge(&mostly_acked, LAG).state, "ok");
        let few = Signals {
            dead: 4,
            ..Signals::default()
        };
        assert_eq!(judge(&few, LAG).state, "ok");
        let retried = Signals {
            retried: 3,
            dead: 2,
            acked: 5,
            ..Signals::default()
        };
        let health = judge(&retried, LAG);
        assert_eq!(health.reason, "2 dead, 3 retried, 5 acked in 5 min");
    }

    #[test]
    fn values_waiting_past_the_threshold_lag_unless_consumers_keep_up() {
        let waiting = Signals {
            ready: 200,
            ready_age_ms: Some(25 * 60_000),
            ..Signals::default()
        };
        let expected = Health {
            state: "lagging",
            reason: "oldest ready 25 min, 200 waiting, 0 taken in 5 min".to_owned(),
        };
        assert_eq!(judge(&waiting, LAG), expected);
        let keeping_up = Signals {
            taken: 5_000,
            ..waiting
        };
        assert_eq!(judge(&keeping_up, LAG).state, "ok");
        let young = Signals {
            ready_age_ms: Some(60_000),
            ..waiting
        };
        assert_eq!(judge(&young, LAG).state, "ok");
        let paused = Signals {
            paused: true,
            ..waiting
        };
        assert_eq!(judge(&paused, LAG).state, "paused");
        let stuck = Signals {
            overdue_ms: STUCK_MS,
            paused: false,
            ..waiting
        };
        let health = judge(&stuck, LAG);
        assert_eq!(health.reason, "overdue 10 s, no transfer seen");
    }

    #[test]
    fn spans_read_in_the_two_largest_units() {
        assert_eq!(span(0), "0 s");
        assert_eq!(span(12_400), "12 s");
        assert_eq!(span(25 * 60_000), "25 min");
        assert_eq!(span(((17 * 60 + 41) * 60 + 5) * 1_000), "17 h 41 min");
        assert_eq!(span((3 * 86_400 + 2 * 3_600) * 1_000), "3 d 2 h");
        assert_eq!(span(90_000), "1 min 30 s");
        assert_eq!(span(-5), "0 s");
    }
}
