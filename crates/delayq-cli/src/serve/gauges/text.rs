//! The queues' gauges as Prometheus text: each gauge's series from the last readings, per
//! queue or summed (`--metrics aggregate`), with its HELP and TYPE lines.

use super::{LimitUse, Reading, Readings};
use crate::serve::recorder::MetricsMode;
use std::collections::BTreeMap;
use std::fmt::Write;

impl Readings {
    /// The gauges as Prometheus text, each with its HELP and TYPE lines: a series per queue,
    /// or (aggregate) one per gauge, the counts summed and the ages their maximum. The limits'
    /// gauges have series only for queues with limits (the cap's only for those with a cap);
    /// `delayq_unreadable` has one for every queue read so far, its last read failed or not.
    pub(crate) fn render(&self, mode: MetricsMode, now_ms: i64) -> String {
        let held = self.lock();
        let readings = &held.readings;
        let mut out = String::new();
        for (name, aggregate, value) in GAUGES {
            let values = readings.iter().map(|(q, r)| (q, value(r, now_ms)));
            write_gauge(&mut out, (name, aggregate), mode, values);
        }
        let mut unreadable: BTreeMap<&String, f64> = readings.keys().map(|q| (q, 0.0)).collect();
        unreadable.extend(held.failing.keys().map(|q| (q, 1.0)));
        let unreadable = unreadable.into_iter();
        write_gauge(
            &mut out,
            ("delayq_unreadable", Aggregate::Sum),
            mode,
            unreadable,
        );
        for (name, value) in LIMIT_GAUGES {
            let values = readings
                .iter()
                .filter_map(|(q, r)| Some((q, value(r.limit_use?)?)));
            write_gauge(&mut out, (name, Aggregate::Sum), mode, values);
        }
        out
    }
}

/// One gauge with its HELP and TYPE lines: a series per queue of `values`, or (aggregate) one
/// series of them all.
fn write_gauge<'a>(
    out: &mut String,
    (name, aggregate): (&str, Aggregate),
    mode: MetricsMode,
    values: impl Iterator<Item = (&'a String, f64)>,
) {
    let help = delayq::metrics::metric(name).map_or("", |m| m.help);
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge");
    match mode {
        MetricsMode::PerQueue => {
            for (queue, value) in values {
                let _ = writeln!(out, "{name}{{{}}} {value}", labels(queue));
            }
        }
        MetricsMode::Aggregate => {
            let values = values.map(|(_, value)| value);
            let total = match aggregate {
                Aggregate::Sum => values.sum(),
                Aggregate::Max => values.fold(0.0, f64::max),
            };
            let _ = writeln!(out, "{name} {total}");
        }
    }
    out.push('\n');
}

/// A gauge of a queue's limits: its name, and its value from what they hold (none: no series).
type LimitGauge = (&'static str, fn(LimitUse) -> Option<f64>);

const LIMIT_GAUGES: [LimitGauge; 3] = [
    ("delayq_limit_slots_held", |u| Some(u.slots_held as f64)),
    ("delayq_limit_held_values", |u| Some(u.values_held as f64)),
    ("delayq_limit_concurrency", |u| u.concurrency.map(f64::from)),
];

/// A gauge read from Redis: its name, how it sums over the queues, and its value for one
/// queue's reading at a time (epoch ms).
type QueueGauge = (&'static str, Aggregate, fn(&Reading, i64) -> f64);

const GAUGES: [QueueGauge; 10] = [
    ("delayq_pending", Aggregate::Sum, |r, _| r.pending as f64),
    ("delayq_ready", Aggregate::Sum, |r, _| r.ready as f64),
    ("delayq_quarantine_size", Aggregate::Sum, |r, _| {
        r.quarantined as f64
    }),
    ("delayq_in_flight", Aggregate::Sum, |r, _| {
        r.in_flight as f64
    }),
    ("delayq_inflight_overdue", Aggregate::Sum, |r, _| {
        r.inflight_overdue as f64
    }),
    ("delayq_dead", Aggregate::Sum, |r, _| r.dead as f64),
    ("delayq_paused", Aggregate::Sum, |r, _| {
        f64::from(u8::from(r.paused))
    }),
    ("delayq_oldest_overdue_seconds", Aggregate::Max, |r, now| {
        age(r.overdue_since_ms, now)
    }),
    (
        "delayq_oldest_ready_age_seconds",
        Aggregate::Max,
        |r, now| age(r.ready_since_ms, now),
    ),
    ("delayq_memory_bytes", Aggregate::Sum, |r, _| {
        r.memory.unwrap_or(0) as f64
    }),
];

/// Seconds from `since` to `now_ms` (0 without one, or when it is later).
fn age(since: Option<i64>, now_ms: i64) -> f64 {
    since.map_or(0.0, |ms| now_ms.saturating_sub(ms).max(0) as f64 / 1e3)
}

/// How a gauge is summed over the queues.
#[derive(Clone, Copy)]
enum Aggregate {
    Sum,
    Max,
}

/// The labels of queue `queue`'s series, as the library's handles carry them.
fn labels(queue: &str) -> String {
    let mut out = format!("queue=\"{}\"", escaped(queue));
    if let Some(logical) = delayq::names::logical_queue(queue) {
        let _ = write!(out, ",logical_queue=\"{}\"", escaped(logical));
    }
    out
}

/// A label value in Prometheus text: backslash, double quote and newline escaped.
fn escaped(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped_and_shards_named() {
        assert_eq!(labels("a\"b\\c\n"), "queue=\"a\\\"b\\\\c\\n\"");
        assert_eq!(
            labels("orders:{2}"),
            "queue=\"orders:{2}\",logical_queue=\"orders\""
        );
    }
}
