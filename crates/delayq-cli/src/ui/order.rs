//! The overview's order and state filter over every queue, not only the page shown: by name
//! (nothing to read), or by what the background read of the gauges last saw of each queue
//! (`/metrics`' snapshot, read within its command budget), so that a request reads no queue
//! outside its page however many there are.

use crate::serve::Seen;
use std::collections::HashMap;

/// A queue whose head has been due this long is "stuck": a running scheduler (delayq's or
/// Redisson's) moves due entries within milliseconds, so no transfer has run for that long.
pub(crate) const STUCK_MS: i64 = 10_000;

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

/// The states `state=` takes, in the order "problems first" puts them: a queue whose read
/// fails, one stuck (its head overdue by [`STUCK_MS`]), one paused, the rest.
pub(super) const STATES: [&str; 4] = ["failing", "stuck", "paused", "ok"];

/// The state of a queue as `seen` at `now_ms`: one of [`STATES`].
pub(super) fn state(seen: &Seen, now_ms: i64) -> &'static str {
    let overdue_ms = seen.overdue_since_ms.map_or(0, |due| now_ms - due);
    match () {
        _ if seen.failing => "failing",
        _ if overdue_ms >= STUCK_MS => "stuck",
        _ if seen.paused => "paused",
        _ => "ok",
    }
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
) -> Option<Staleness> {
    if sort == "name" && state_wanted.is_none() {
        return None;
    }
    let seen = seen();
    if let Some(wanted) = state_wanted {
        names.retain(|name| seen.get(name).is_some_and(|s| state(s, now_ms) == wanted));
    }
    // Unread queues after every read one: the key's first part.
    names.sort_by_cached_key(|name| match seen.get(name) {
        Some(s) => (0, rank(s, sort, now_ms)),
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
fn rank(s: &Seen, sort: &str, now_ms: i64) -> i64 {
    let count = |n: u64| -(n.min(i64::MAX as u64) as i64);
    match sort {
        "problems" => STATES
            .iter()
            .position(|&st| st == state(s, now_ms))
            .unwrap_or(STATES.len()) as i64,
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
        let now = 100_000;
        let snapshot: HashMap<String, Seen> = [
            ("a", seen(0, None, false, false)),
            ("b", seen(0, None, true, false)),
            ("c", seen(0, Some(now - STUCK_MS), true, false)),
            ("d", seen(5, None, false, true)),
            ("f", seen(2, Some(now + 1), false, false)),
        ]
        .into_iter()
        .map(|(n, s)| (n.to_owned(), s))
        .collect();
        let all: Vec<String> = ["a", "b", "c", "d", "e", "f"].map(String::from).to_vec();
        let arranged = |sort: &str, state: Option<&str>| {
            let mut names = all.clone();
            let staleness = arrange(&mut names, sort, state, || snapshot.clone(), now);
            (names, staleness)
        };
        let (names, staleness) = arranged("problems", None);
        assert_eq!(names, ["d", "c", "b", "a", "f", "e"]);
        let expected = Staleness {
            age_ms: now - 1_000,
            unread: 1,
        };
        assert_eq!(staleness, Some(expected));
        assert_eq!(arranged("dead", None).0, ["d", "f", "a", "b", "c", "e"]);
        assert_eq!(arranged("name", Some("paused")).0, ["b"]);
        assert_eq!(arranged("name", Some("ok")).0, ["a", "f"]);
        assert_eq!(arranged("name", None), (all.clone(), None));
    }
}
