//! Where a worker's values come from: one queue (a blocking wait on its own connection), or
//! several queues taken in turn, with no blocking connection per queue.
//!
//! Several queues are watched by looking at the lengths of their target lists (one round trip
//! for all of them) and by the "moved" notices of the client's scheduler group, which say at
//! once which queue a transfer filled. The worker's [`Priority`] picks among the queues found
//! ready (in turn by default, one value each; by weight; or in strict order, looking at the
//! lengths again before taking from any queue but the first), and the lengths are looked at
//! again at least every [`PROBE_EVERY`], so that a flooded queue cannot keep a quiet one
//! waiting. With nothing ready, the worker waits for a notice or a while, doubling from
//! [`FIRST_IDLE_WAIT`] up to a cap that grows with the number of queues (values moved by another
//! process, which sends the worker no notice, are seen within it).
//!
//! A paused queue's take finds it paused and takes nothing (the take script reads the flag);
//! the queue is then left alone for [`PAUSED_RECHECK`] before its next take looks again.

use super::priority::{Picker, Priority};
use super::Counters;
use crate::codec::Codec;
use crate::keys::PAUSED_RECHECK;
use crate::queue::DelayedQueue;
use crate::redis::ops::limit_take::TakeGate;
use crate::reliable::{Delivery, Found, GatedTake, ReliableConfig, ReliableConsumer};
use crate::retry::{Backoff, FailureLog, Retrying};
use crate::Result;
use fred::interfaces::ListInterface;
use futures::future::{join_all, select_all, FutureExt};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::sync::broadcast::Receiver;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// How often the lengths of every queue are looked at while values keep coming.
const PROBE_EVERY: Duration = Duration::from_millis(100);
/// The first wait when no queue has a value.
const FIRST_IDLE_WAIT: Duration = Duration::from_millis(10);

/// Waits after a failed take: 100 ms doubling to 5 s.
pub(super) fn take_backoff() -> Backoff {
    Backoff::doubling(Duration::from_millis(100), Duration::from_secs(5))
}

/// The longest wait with no queue ready: 10 ms per queue, from 100 ms to 2 s (so that an idle
/// worker sends at most about 500 length probes a second, however many queues it watches).
fn max_idle_wait(queues: usize) -> Duration {
    (Duration::from_millis(10) * queues as u32)
        .clamp(Duration::from_millis(100), Duration::from_secs(2))
}

/// Whether a queue was last found paused: the worker says so once when it is, and once when
/// it is resumed, and counts every take that found it paused.
#[derive(Debug, Default)]
pub(super) struct PauseNote {
    paused: bool,
}

impl PauseNote {
    /// A take of the queue `name` found it `paused`, or not.
    fn found(&mut self, name: &str, paused: bool, counters: &Counters) {
        if paused {
            Counters::bump(&counters.paused_takes);
        }
        if std::mem::replace(&mut self.paused, paused) == paused {
            return;
        }
        let recheck_ms = PAUSED_RECHECK.as_millis() as u64;
        match paused {
            true => {
                tracing::info!(queue = %name, recheck_ms, "queue is paused: the worker takes none of its values until it is resumed")
            }
            false => {
                tracing::info!(queue = %name, "queue resumed: the worker takes its values again")
            }
        }
    }
}

/// A worker's consumers.
pub(super) enum Sources<C: Codec> {
    One(ReliableConsumer<C>, PauseNote),
    Many(Many<C>),
}

impl<C: Codec> Sources<C> {
    /// One consumer per queue: a blocking one for a single queue, polling ones for several,
    /// chosen among by `priority`.
    pub(super) async fn open(
        queues: &[DelayedQueue<C>],
        config: &ReliableConfig,
        priority: &Priority,
    ) -> Result<Self> {
        if let [queue] = queues {
            return Ok(Sources::One(
                queue.reliable_consumer_with(config.clone()).await?,
                PauseNote::default(),
            ));
        }
        let consumers = queues
            .iter()
            .map(|queue| ReliableConsumer::polling(queue, config.clone()))
            .collect::<Result<Vec<_>>>()?;
        let mut notices = HashMap::new();
        for queue in queues {
            if let Some((key, rx)) = queue.moved_rx() {
                notices.entry(key).or_insert(rx);
            }
        }
        Ok(Sources::Many(Many::new(
            consumers,
            notices.into_values().collect(),
            Picker::new(priority, queues.len()),
        )))
    }

    /// The next value and the name of its queue, or `None` once `stop` is cancelled or `until`
    /// has passed. A single queue takes under `gate` (its queue-wide limits), if given.
    ///
    /// An error of the single queue is returned (the caller backs off); with several queues, a
    /// queue that fails is logged and benched for its own backoff while the others go on. A
    /// paused queue is waited out here (looked at again every [`PAUSED_RECHECK`]): the result
    /// is never [`GatedTake::Paused`].
    pub(super) async fn next(
        &mut self,
        stop: &CancellationToken,
        until: Option<Instant>,
        gate: Option<&TakeGate>,
        counters: &Counters,
    ) -> Result<Option<(Arc<str>, GatedTake<C::Value>)>> {
        match self {
            Sources::One(consumer, pause) => loop {
                match consumer.take_or_stop(stop, until, gate).await? {
                    Some(GatedTake::Paused) => {
                        pause.found(consumer.name(), true, counters);
                        let look_again = Instant::now() + PAUSED_RECHECK;
                        let wake = until.map_or(look_again, |until| until.min(look_again));
                        tokio::select! {
                            biased;
                            _ = stop.cancelled() => return Ok(None),
                            _ = tokio::time::sleep_until(wake) => {}
                        }
                        if until.is_some_and(|until| until <= Instant::now()) {
                            return Ok(None);
                        }
                    }
                    None if stop.is_cancelled() => return Ok(None),
                    // Any other answer came from a take that found the queue not paused.
                    taken => {
                        pause.found(consumer.name(), false, counters);
                        return Ok(taken.map(|taken| (Arc::from(consumer.name()), taken)));
                    }
                }
            },
            Sources::Many(many) => {
                let value = |taken: Option<(Arc<str>, Delivery<C::Value>)>| {
                    taken.map(|(name, delivery)| (name, GatedTake::Value(delivery)))
                };
                let Some(until) = until else {
                    return Ok(value(many.next(stop, counters).await));
                };
                // Polling queues wait in sleeps, which a cut ends cleanly.
                let cut = stop.child_token();
                let timer = async {
                    tokio::time::sleep_until(until).await;
                    cut.cancel();
                    std::future::pending::<()>().await
                };
                tokio::select! {
                    taken = many.next(&cut, counters) => Ok(value(taken)),
                    () = timer => Ok(None),
                }
            }
        }
    }

    /// The consumer of the queue `name`.
    pub(super) fn consumer(&self, name: &str) -> Option<&ReliableConsumer<C>> {
        match self {
            Sources::One(consumer, _) => Some(consumer).filter(|c| c.name() == name),
            Sources::Many(many) => many
                .sources
                .iter()
                .find(|s| &*s.name == name)
                .map(|s| &s.consumer),
        }
    }

    /// Takes nothing from the queue `name` until `until` (its limits let nothing start before);
    /// a single queue's worker waits holding its value instead.
    pub(super) fn rest(&mut self, name: &str, until: Instant) {
        if let Sources::Many(many) = self {
            if let Some(source) = many.sources.iter_mut().find(|s| &*s.name == name) {
                source.resting_until = Some(until);
            }
        }
    }

    /// Closes every consumer (gives back what they hold unsettled).
    pub(super) async fn close(self) {
        match self {
            Sources::One(consumer, _) => consumer.close().await,
            Sources::Many(many) => {
                join_all(many.sources.into_iter().map(|s| s.consumer.close())).await;
            }
        }
    }
}

/// One of several queues.
struct Source<C: Codec> {
    consumer: ReliableConsumer<C>,
    name: Arc<str>,
    /// Believed to hold values (its length was found above zero, a notice named it, or its
    /// last take brought a value).
    ready: bool,
    /// Its own errors: a queue that fails (a wrong-type key, an ACL refusal) waits out its own
    /// backoff while the others are served.
    retrying: Retrying,
    failures: FailureLog,
    benched_until: Option<Instant>,
    /// Until when the queue's limits let none of its values start (see `gate.rs`).
    resting_until: Option<Instant>,
    /// Until when it is left alone: its last take found it paused.
    paused_until: Option<Instant>,
    pause: PauseNote,
}

impl<C: Codec> Source<C> {
    fn benched(&self, now: Instant) -> bool {
        [self.benched_until, self.resting_until, self.paused_until]
            .into_iter()
            .flatten()
            .any(|until| until > now)
    }

    /// Takes a value, if the queue has one and is not paused.
    async fn take(&mut self, counters: &Counters) -> Option<Delivery<C::Value>> {
        let found = self.consumer.take_now(1).await;
        let found = self.record(found, counters);
        let paused = matches!(found, Some(Found::Paused));
        if found.is_some() {
            self.pause.found(&self.name, paused, counters);
        }
        if paused {
            self.paused_until = Some(Instant::now() + PAUSED_RECHECK);
        }
        let taken = match found {
            Some(Found::Values(mut taken)) => taken.pop(),
            _ => None,
        };
        // A queue that gave a value may hold more.
        self.ready = taken.is_some();
        taken
    }

    /// Notes how a call on this queue went; an error benches the queue for its backoff.
    fn record<T>(&mut self, result: Result<T>, counters: &Counters) -> Option<T> {
        match result {
            Ok(value) => {
                self.benched_until = None;
                self.retrying.succeeded();
                if self.failures.recovered() > 0 {
                    tracing::info!(queue = %self.name, "takes work again");
                }
                Some(value)
            }
            Err(err) => {
                Counters::bump(&counters.errors);
                let wait = self.retrying.failed();
                self.benched_until = Some(Instant::now() + wait);
                let retry_in_ms = wait.as_millis() as u64;
                if self.failures.first_of_kind(&err.to_string()) {
                    tracing::warn!(queue = %self.name, error = %err, retry_in_ms, "take failed; the other queues go on (repeats of this error are logged at debug)");
                } else {
                    tracing::debug!(queue = %self.name, error = %err, retry_in_ms, "take failed again");
                }
                None
            }
        }
    }
}

/// Several queues, chosen among by the worker's [`Priority`].
pub(super) struct Many<C: Codec> {
    sources: Vec<Source<C>>,
    by_name: HashMap<Arc<str>, usize>,
    picker: Picker,
    last_probe: Option<Instant>,
    /// A value was taken since the last probe: under a strict priority the lengths are looked
    /// at again before a take from any queue but the first.
    taken_since_probe: bool,
    idle_wait: Duration,
    notices: Vec<Receiver<Arc<str>>>,
}

impl<C: Codec> Many<C> {
    fn new(
        consumers: Vec<ReliableConsumer<C>>,
        notices: Vec<Receiver<Arc<str>>>,
        picker: Picker,
    ) -> Self {
        let sources: Vec<Source<C>> = consumers
            .into_iter()
            .map(|consumer| Source {
                name: Arc::from(consumer.name()),
                consumer,
                ready: false,
                retrying: Retrying::new(take_backoff()),
                failures: FailureLog::default(),
                benched_until: None,
                resting_until: None,
                paused_until: None,
                pause: PauseNote::default(),
            })
            .collect();
        let by_name = sources.iter().map(|s| s.name.clone()).zip(0..).collect();
        Many {
            sources,
            by_name,
            picker,
            last_probe: None,
            taken_since_probe: false,
            idle_wait: FIRST_IDLE_WAIT,
            notices,
        }
    }

    async fn next(
        &mut self,
        stop: &CancellationToken,
        counters: &Counters,
    ) -> Option<(Arc<str>, Delivery<C::Value>)> {
        loop {
            if stop.is_cancelled() {
                return None;
            }
            self.housekeeping(counters).await;
            self.read_notices();
            if self.probe_due() {
                self.probe(counters).await;
            }
            while let Some(index) = self.pick() {
                if self.picker.strict() && index > 0 && self.taken_since_probe {
                    // Values may have come to a queue before it since the lengths were read.
                    self.probe(counters).await;
                    continue;
                }
                if let Some(delivery) = self.sources[index].take(counters).await {
                    self.idle_wait = FIRST_IDLE_WAIT;
                    self.taken_since_probe = true;
                    return Some((self.sources[index].name.clone(), delivery));
                }
            }
            self.probe(counters).await;
            if self.any_ready() {
                continue;
            }
            if !self.idle(stop).await {
                return None;
            }
        }
    }

    /// Gives back dropped deliveries and reaps, queue by queue (concurrently).
    async fn housekeeping(&mut self, counters: &Counters) {
        let now = Instant::now();
        let results = join_all(self.sources.iter().map(|source| async move {
            match source.benched(now) {
                true => None,
                false => Some(source.consumer.housekeeping().await),
            }
        }))
        .await;
        for (source, result) in self.sources.iter_mut().zip(results) {
            if let Some(Err(err)) = result {
                source.record::<()>(Err(err), counters);
            }
        }
    }

    /// The queue to take from next, by the priority, among those believed to hold values.
    fn pick(&mut self) -> Option<usize> {
        let now = Instant::now();
        let candidates: Vec<bool> = self
            .sources
            .iter()
            .map(|s| s.ready && !s.benched(now))
            .collect();
        self.picker.pick(&candidates)
    }

    /// Whether some queue that may be taken from is believed to hold values.
    fn any_ready(&self) -> bool {
        let now = Instant::now();
        self.sources.iter().any(|s| s.ready && !s.benched(now))
    }

    /// Whether the lengths are to be looked at before taking: nothing known ready, or the last
    /// look is older than [`PROBE_EVERY`].
    fn probe_due(&self) -> bool {
        !self.any_ready() || self.last_probe.is_none_or(|at| at.elapsed() >= PROBE_EVERY)
    }

    /// Looks at the length of every target list (one round trip: the commands are pipelined):
    /// those with values are ready, and so is a queue last found paused (its next take looks
    /// whether it still is).
    async fn probe(&mut self, counters: &Counters) {
        let now = Instant::now();
        let lengths = join_all(self.sources.iter().map(|source| async move {
            match source.benched(now) {
                true => None,
                false => Some(
                    source
                        .consumer
                        .client()
                        .llen::<u64, _>(source.consumer.name())
                        .await
                        .map_err(crate::Error::from),
                ),
            }
        }))
        .await;
        self.last_probe = Some(Instant::now());
        self.taken_since_probe = false;
        for (source, length) in self.sources.iter_mut().zip(lengths) {
            if let Some(length) = length {
                let length = source.record(length, counters);
                source.ready = length.is_some_and(|n| n > 0) || source.pause.paused;
            }
        }
    }

    fn mark_ready(&mut self, index: usize) {
        self.sources[index].ready = true;
    }

    /// Queues up the queues named by notices received so far; after a lag, probes next time.
    fn read_notices(&mut self) {
        let mut named = Vec::new();
        for rx in &mut self.notices {
            loop {
                match rx.try_recv() {
                    Ok(name) => named.push(name),
                    Err(TryRecvError::Lagged(_)) => self.last_probe = None,
                    Err(TryRecvError::Empty | TryRecvError::Closed) => break,
                }
            }
        }
        for name in named {
            if let Some(&index) = self.by_name.get(&name) {
                self.mark_ready(index);
            }
        }
    }

    /// Waits for a notice about one of our queues, a stop, or the idle wait; false on a stop.
    async fn idle(&mut self, stop: &CancellationToken) -> bool {
        let wait = self.idle_wait;
        self.idle_wait = (wait * 2).min(max_idle_wait(self.sources.len()));
        let by_name = &self.by_name;
        let notices = &mut self.notices;
        let notice = async {
            if notices.is_empty() {
                return std::future::pending().await;
            }
            loop {
                let waits = notices.iter_mut().map(|rx| rx.recv().boxed());
                let (received, _, _) = select_all(waits).await;
                match received {
                    Ok(name) => {
                        if let Some(&index) = by_name.get(&name) {
                            return Some(index);
                        }
                    }
                    Err(RecvError::Lagged(_)) => return None,
                    // The group stopped: nothing more comes from it; the idle wait still ends.
                    Err(RecvError::Closed) => return std::future::pending().await,
                }
            }
        };
        let noticed = tokio::select! {
            biased;
            _ = stop.cancelled() => return false,
            noticed = notice => noticed,
            _ = tokio::time::sleep(wait) => return true,
        };
        match noticed {
            Some(index) => self.mark_ready(index),
            None => self.last_probe = None,
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_wait_grows_with_the_queues_within_bounds() {
        assert_eq!(max_idle_wait(2), Duration::from_millis(100));
        assert_eq!(max_idle_wait(50), Duration::from_millis(500));
        assert_eq!(max_idle_wait(10_000), Duration::from_secs(2));
    }
}
