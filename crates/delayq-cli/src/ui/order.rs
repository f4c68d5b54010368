//! The overview's order and state filter over every queue, not only the page shown: by name
//! (nothing to read), or by what the background read of the gauges last saw of each queue
//! (`/metrics`' snapshot, read within its command budget), so that a request reads no queue
//! outside its page however many there are.

use super::health::{self, Signals, STATES};
use crate::serve::Seen;
use std::collections::HashMap;
use std::time::Duration;

/// The orders `sort=` takes: by name, by trouble ("problems first"), or by a count, largest
/// first.
pub(super) const SORTS: [&str; 8] = [
    "name",
    "problems",
    "pending",
    "ready",
    "in_flight",
    "dead",
    "quarantined",
    "overdue",
];

/// The state of a queue as `seen` at `now_ms` with the lag threshold `lagging_after`: one of
/// [`STATES`], judged without the activity the snapshot does not hold (so never "failing";
/// the page's rows, read in full, are judged again and put in order among themselves).
pub(super) fn state(seen: &Seen, now_ms: i64, lagging_after: Duration) -> &'static str {
    if seen.failing {
        return "unreadable";
    }
    let signals = Signals {
        paused: seen.paused,
        overdue_ms: seen.overdue_since_ms.map_or(0, |due| now_ms - due),
        ready: seen.ready,
        ready_age_ms: seen.ready_since_ms.map(|since| now_ms - since),
        ..Signals::default()
    };
    health::judge(&signals, lagging_after).state
}

/// Where `state` goes in "problems first": smaller first.
pub(super) fn state_rank(state: &str) -> usize {
    STATES
        .iter()
        .position(|&st| st == state)
        .unwrap_or(STATES.len())
}

/// How old the snapshot an order used is: the oldest reading among the queues ordered, and
/// how many of them it has not read yet (they go last, and match no state).
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Staleness {
    pub(super) age_ms: i64,
    pub(super) unread: usize,
}

/// `names` (sorted by name) kept to those in `state` (any, without one) and put in the order
/// `sort` by what `seen` says of them; ties keep name order. `None` for name order with no
/// state: then no snapshot is used.
pub(super) fn arrange(
    names: &mut Vec<String>,
    sort: &str,
    state_wanted: Option<&str>,
    seen: impl FnOnce() -> HashMap<String, Seen>,
    now_ms: i64,
    lagging_after: Duration,
) -> Option<Staleness> {
    if sort == "name" && state_wanted.is_none() {
        return None;
    }
    let seen = seen();
    if let Some(wanted) = state_wanted {
        names.retain(|name| {
            seen.get(name)
                .is_some_and(|s| state(s, now_ms, lagging_after) == wanted)
        });
    }
    // Unread queues after every read one: the key's first part.
    names.sort_by_cached_key(|name| match seen.get(name) {
        Some(s) => (0, rank(s, sort, now_ms, lagging_after)),
        None => (1, 0),
    });
    let read = names.iter().filter_map(|name| seen.get(name));
    let oldest = read.map(|s| s.read_ms).min().unwrap_or(now_ms);
    Some(Staleness {
        age_ms: (now_ms - oldest).max(0),
        unread: names.iter().filter(|n| !seen.contains_key(*n)).count(),
    })
}

/// Where a queue `s` goes in the order `sort`: smaller first.
fn rank(s: &Seen, sort: &str, now_ms: i64, lagging_after: Duration) -> i64 {
    let count = |n: u64| -(n.min(i64::MAX as u64) as i64);
    match sort {
        "problems" => state_rank(state(s, now_ms, lagging_after)) as i64,
        "pending" => count(s.pending),
        "ready" => count(s.ready),
        "in_flight" => count(s.in_flight),
        "dead" => count(s.dead),
        "quarantined" => count(s.quarantined),
        "overdue" => -s.overdue_since_ms.map_or(0, |due| (now_ms - due).max(0)),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ui::health::{LAGGING_AFTER, STUCK_MS};

    fn seen(dead: u64, overdue_since_ms: Option<i64>, paused: bool, failing: bool) -> Seen {
        Seen {
            dead,
            overdue_since_ms,
            paused,
            failing,
            read_ms: 1_000,
            ..Seen::default()
        }
    }

    #[test]
    fn problems_come_first_then_name_order_and_unread_queues_last() {
        let now = 1_000_000;
        // Values waiting since past the threshold, none taken (the snapshot knows of none).
        let lagging = Seen {
            ready: 200,
            ready_since_ms: Some(now - LAGGING_AFTER.as_millis() as i64),
            read_ms: 1_000,
            ..Seen::default()
        };
        let snapshot: HashMap<String, Seen> = [
            ("a", seen(0, None, false, false)),
            ("b", seen(0, None, true, false)),
            ("c", seen(0, Some(now - STUCK_MS), false, false)),
            ("d", seen(5, None, false, true)),
            ("f", seen(2, Some(now + 1), false, false)),
            ("g", lagging),
        ]
        .into_iter()
        .map(|(n, s)| (n.to_owned(), s))
        .collect();
        let all: Vec<String> = ["a", "b", "c", "d", "e", "f", "g"]
            .map(String::from)
            .to_vec();
        let arranged = |sort: &str, state: Option<&str>| {
            let mut names = all.clone();
            let staleness = arrange(
                &mut names,
                sort,
                state,
                || snapshot.clone(),
                now,
                LAGGING_AFTER,
            );
            (names, staleness)
        };
        let (names, staleness) = arranged("problems", None);
        assert_eq!(names, ["d", "c", "g", "b", "a", "f", "e"]);
        let expected = Staleness {
            age_ms: now - 1_000,
            unread: 1,
        };
        assert_eq!(staleness, Some(expected));
        assert_eq!(
            arranged("dead", None).0,
            ["d", "f", "a", "b", "c", "g", "e"]
        );
        assert_eq!(arranged("name", Some("paused")).0, ["b"]);
        assert_eq!(arranged("name", Some("ok")).0, ["a", "f"]);
        assert_eq!(arranged("name", Some("lagging")).0, ["g"]);
        assert_eq!(arranged("name", Some("unreadable")).0, ["d"]);
        assert_eq!(arranged("name", None), (all.clone(), None));
    }
}
