//! The handles of one queue's schedule firings: occurrences offered, their lateness, and the
//! decisions of the missed-occurrence policies.

/// The `policy` label of `delayq_schedule_missed_total`: each missed-occurrence policy's name.
#[cfg(feature = "metrics")]
const POLICIES: [&str; 3] = ["skip", "latest", "all"];

/// One queue's handles for its schedules' firings, every counter made at 0 (a counter first
/// seen at 1 has no earlier sample, and `increase()` misses that first rise). A scheduler
/// group holds them as long as the queue has schedules, so that the series live as long; a
/// program firing by hand makes them per call, and a recorder that retires idle series may
/// then drop them between calls.
#[derive(Debug)]
pub(crate) struct FiringMetrics {
    #[cfg(feature = "metrics")]
    fired: metrics::Counter,
    #[cfg(feature = "metrics")]
    lateness: metrics::Histogram,
    /// `delayq_schedule_missed_total` by policy, in the order of [`POLICIES`].
    #[cfg(feature = "metrics")]
    missed: [metrics::Counter; 3],
}

impl FiringMetrics {
    /// The handles of queue `name`.
    pub(crate) fn new(name: &str) -> FiringMetrics {
        #[cfg(feature = "metrics")]
        {
            let labels = super::queue_labels(name);
            let fired = metrics::counter!("delayq_schedule_fired_total", labels.clone());
            fired.absolute(0);
            let missed = POLICIES.map(|policy| {
                let mut labels = labels.clone();
                labels.push(metrics::Label::new("policy", policy));
                let counter = metrics::counter!("delayq_schedule_missed_total", labels);
                counter.absolute(0);
                counter
            });
            FiringMetrics {
                fired,
                lateness: metrics::histogram!("delayq_schedule_lateness_seconds", labels),
                missed,
            }
        }
        #[cfg(not(feature = "metrics"))]
        {
            let _ = name;
            FiringMetrics {}
        }
    }

    /// A firing at `now_ms` offered the entries of `occurrences` (epoch ms). An occurrence
    /// offered ahead of its time (the firing lead) is 0 late: its entry is due at its time.
    pub(crate) fn fired(&self, now_ms: i64, occurrences: &[i64]) {
        #[cfg(feature = "metrics")]
        {
            self.fired.increment(occurrences.len() as u64);
            for at in occurrences {
                self.lateness
                    .record(now_ms.saturating_sub(*at).max(0) as f64 / 1000.0);
            }
        }
        #[cfg(not(feature = "metrics"))]
        let _ = (now_ms, occurrences);
    }

    /// A missed-occurrence policy (`skip`, `latest` or `all`) decided on a schedule's missed
    /// occurrences.
    pub(crate) fn missed(&self, policy: &'static str) {
        #[cfg(feature = "metrics")]
        if let Some(at) = POLICIES.iter().position(|p| *p == policy) {
            self.missed[at].increment(1);
        }
        #[cfg(not(feature = "metrics"))]
        let _ = policy;
    }
}
