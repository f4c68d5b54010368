//! The handles of one queue's schedule firings: occurrences offered, their lateness, and the
//! decisions of the missed-occurrence policies.

/// One queue's handles for a firing pass; made only when the pass has due schedules, so that
/// a queue without schedules has no series.
#[derive(Debug)]
pub(crate) struct FiringMetrics {
    #[cfg(feature = "metrics")]
    labels: Vec<metrics::Label>,
    #[cfg(feature = "metrics")]
    fired: metrics::Counter,
    #[cfg(feature = "metrics")]
    lateness: metrics::Histogram,
}

impl FiringMetrics {
    /// The handles of queue `name`.
    pub(crate) fn new(name: &str) -> FiringMetrics {
        #[cfg(feature = "metrics")]
        {
            let labels = super::queue_labels(name);
            FiringMetrics {
                fired: metrics::counter!("delayq_schedule_fired_total", labels.clone()),
                lateness: metrics::histogram!("delayq_schedule_lateness_seconds", labels.clone()),
                labels,
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
        {
            let mut labels = self.labels.clone();
            labels.push(metrics::Label::new("policy", policy));
            metrics::counter!("delayq_schedule_missed_total", labels).increment(1);
        }
        #[cfg(not(feature = "metrics"))]
        let _ = policy;
    }
}
