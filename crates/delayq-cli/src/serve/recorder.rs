//! The process's metrics recorder: Prometheus text, with the `queue` labels kept or summed
//! away as `--metrics` says, and a queue's series retired once nothing records them.
//!
//! The Prometheus recorder can only forget a series it has seen idle (unchanged) through an
//! idle timeout. So every handle with a `queue` label is handed out wrapped, and the wrapper is
//! touched (a change of nothing) before each render while someone holds it: a queue's series
//! live as long as its scheduler or worker holds their handles, and go at the render after it
//! drops them. Series without a queue label are held here and never go.

use anyhow::Context;
use metrics::{
    Counter, CounterFn, Gauge, GaugeFn, Histogram, Key, KeyName, Label, Metadata, Recorder,
    SharedString, Unit,
};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use metrics_util::MetricKindMask;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};
use std::time::Duration;

/// Histogram buckets (seconds): 1 ms to 60 s.
const BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];
/// How long a series nobody holds outlives its last render. Live ones are touched before
/// every render, so any span shorter than a scrape interval would do.
const RETIRE_AFTER: Duration = Duration::from_millis(1);
/// The labels naming a queue.
const QUEUE_LABELS: [&str; 2] = ["queue", "logical_queue"];
/// The scheduler's histograms: one per process whatever `--metrics` says (eighteen lines a
/// queue each would be most of a scrape of thousands of queues).
const PROCESS_HISTOGRAMS: [&str; 3] = [
    "delayq_transfer_duration_seconds",
    "delayq_transfer_lateness_seconds",
    "delayq_schedule_lateness_seconds",
];

/// Which series `/metrics` shows (`--metrics`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum MetricsMode {
    /// A series per queue (labels `queue`, and `logical_queue` on a shard).
    PerQueue,
    /// Sums over the queues, without queue labels: for thousands of queues.
    Aggregate,
}

/// The process's recorder, installed once with the mode of the first caller.
pub(crate) fn recorder(mode: MetricsMode) -> anyhow::Result<Exporter> {
    static EXPORTER: OnceLock<Exporter> = OnceLock::new();
    if let Some(exporter) = EXPORTER.get() {
        return Ok(exporter.clone());
    }
    let prometheus = PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), BUCKETS)
        .context("bad histogram buckets")?
        .idle_timeout(
            MetricKindMask::COUNTER | MetricKindMask::GAUGE,
            Some(RETIRE_AFTER),
        )
        .build_recorder();
    let exporter = Exporter {
        prometheus: prometheus.handle(),
        held: Arc::new(Held::default()),
        mode,
    };
    let layer = Layer {
        inner: prometheus,
        held: exporter.held.clone(),
        mode,
    };
    metrics::set_global_recorder(layer).context("cannot install the metrics recorder")?;
    delayq::metrics::describe();
    Ok(EXPORTER.get_or_init(|| exporter).clone())
}

/// What `/metrics` renders the recorded metrics with.
#[derive(Clone)]
pub(crate) struct Exporter {
    prometheus: PrometheusHandle,
    held: Arc<Held>,
    pub(crate) mode: MetricsMode,
}

impl Exporter {
    /// The recorded metrics as Prometheus text; the series nobody holds any more left out
    /// (and forgotten).
    pub(crate) fn render(&self) -> String {
        self.held.touch();
        self.prometheus.run_upkeep();
        self.prometheus.render()
    }
}

/// The handles given out: per-queue ones weakly (their holder decides how long they live),
/// the others strongly.
#[derive(Default)]
struct Held {
    counters: Mutex<HashMap<Key, Kept<Counter>>>,
    gauges: Mutex<HashMap<Key, Kept<Gauge>>>,
}

enum Kept<H> {
    Always(H),
    WhileHeld(Weak<Touched<H>>),
}

/// A handle of the Prometheus recorder that can be touched.
struct Touched<H>(H);

impl CounterFn for Touched<Counter> {
    fn increment(&self, value: u64) {
        self.0.increment(value);
    }

    fn absolute(&self, value: u64) {
        self.0.absolute(value);
    }
}

impl GaugeFn for Touched<Gauge> {
    fn increment(&self, value: f64) {
        self.0.increment(value);
    }

    fn decrement(&self, value: f64) {
        self.0.decrement(value);
    }

    fn set(&self, value: f64) {
        self.0.set(value);
    }
}

/// Touching a handle: a change of nothing, which the recorder sees as a change.
trait Touch {
    fn touch(&self);
}

impl Touch for Counter {
    fn touch(&self) {
        self.increment(0);
    }
}

impl Touch for Gauge {
    fn touch(&self) {
        self.increment(0.0);
    }
}

impl Held {
    fn touch(&self) {
        touch_all(&self.counters);
        touch_all(&self.gauges);
    }
}

/// Touches every handle still held, and forgets the others.
fn touch_all<H: Touch>(kept: &Mutex<HashMap<Key, Kept<H>>>) {
    let mut kept = kept.lock().unwrap_or_else(PoisonError::into_inner);
    kept.retain(|_, kept| match kept {
        Kept::Always(handle) => {
            handle.touch();
            true
        }
        Kept::WhileHeld(weak) => match weak.upgrade() {
            Some(touched) => {
                touched.0.touch();
                true
            }
            None => false,
        },
    });
}

/// The handle of `key` from `kept`, made with `make` the first time (or again once its last
/// holder dropped it); `wrap` turns a touchable handle into one to hand out.
fn kept_handle<H: Clone>(
    kept: &Mutex<HashMap<Key, Kept<H>>>,
    key: Key,
    per_queue: bool,
    make: impl FnOnce(&Key) -> H,
    wrap: impl FnOnce(Arc<Touched<H>>) -> H,
) -> H {
    let mut kept = kept.lock().unwrap_or_else(PoisonError::into_inner);
    match kept.get(&key) {
        Some(Kept::Always(handle)) => return handle.clone(),
        Some(Kept::WhileHeld(weak)) => {
            if let Some(touched) = weak.upgrade() {
                return wrap(touched);
            }
        }
        None => {}
    }
    let handle = make(&key);
    if !per_queue {
        kept.insert(key, Kept::Always(handle.clone()));
        return handle;
    }
    let touched = Arc::new(Touched(handle));
    kept.insert(key, Kept::WhileHeld(Arc::downgrade(&touched)));
    wrap(touched)
}

/// The recorder installed: the Prometheus recorder behind the mode's label rule and the
/// handles' keeping.
struct Layer {
    inner: metrics_exporter_prometheus::PrometheusRecorder,
    held: Arc<Held>,
    mode: MetricsMode,
}

impl Layer {
    /// `key` as recorded in this mode, and whether it still names a queue.
    fn recorded(&self, key: &Key, histogram: bool) -> (Key, bool) {
        let names_queue = key.labels().any(|l| QUEUE_LABELS.contains(&l.key()));
        let per_process = self.mode == MetricsMode::Aggregate
            || (histogram && PROCESS_HISTOGRAMS.contains(&key.name()));
        if !names_queue || !per_process {
            return (key.clone(), names_queue);
        }
        let labels: Vec<Label> = key
            .labels()
            .filter(|l| !QUEUE_LABELS.contains(&l.key()))
            .cloned()
            .collect();
        (Key::from_parts(key.name().to_owned(), labels), false)
    }
}

impl Recorder for Layer {
    fn describe_counter(&self, key: KeyName, unit: Option<Unit>, description: SharedString) {
        self.inner.describe_counter(key, unit, description);
    }

    fn describe_gauge(&self, key: KeyName, unit: Option<Unit>, description: SharedString) {
        self.inner.describe_gauge(key, unit, description);
    }

    fn describe_histogram(&self, key: KeyName, unit: Option<Unit>, description: SharedString) {
        self.inner.describe_histogram(key, unit, description);
    }

    fn register_counter(&self, key: &Key, metadata: &Metadata<'_>) -> Counter {
        let (key, per_queue) = self.recorded(key, false);
        kept_handle(
            &self.held.counters,
            key,
            per_queue,
            |key| self.inner.register_counter(key, metadata),
            Counter::from_arc,
        )
    }

    fn register_gauge(&self, key: &Key, metadata: &Metadata<'_>) -> Gauge {
        let (key, per_queue) = self.recorded(key, false);
        kept_handle(
            &self.held.gauges,
            key,
            per_queue,
            |key| self.inner.register_gauge(key, metadata),
            Gauge::from_arc,
        )
    }

    fn register_histogram(&self, key: &Key, metadata: &Metadata<'_>) -> Histogram {
        let (key, _) = self.recorded(key, true);
        self.inner.register_histogram(&key, metadata)
    }
}
