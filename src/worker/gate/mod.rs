//! The queues' limits in the take loop (see [`crate::limit`] for the design): before a value's
//! handler runs, its slots and tokens are acquired, or it is held back on its key's list, or
//! the loop waits holding it; held-back values of due keys are taken before the target lists.

use super::sources::Sources;
use super::LimitKeyFn;
use crate::codec::Codec;
use crate::limit::{KeyReader, Limits};
use crate::metrics::LimitMetrics;
use crate::queue::DelayedQueue;
use crate::redis::ops::limit_acquire;
use crate::redis::ops::limit_admit::{self, Admitted, Batch};
use crate::redis::ops::limit_take::TakeGate;
use crate::redis::reply::{Decision, WaitFor};
use crate::reliable::Delivery;
use crate::time::Delay;
use crate::{Error, Result};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

mod slot;
mod unpark;

pub(super) use slot::Slot;

/// How often a worker without limits looks for new ones.
const READ_EVERY: Duration = Duration::from_secs(1);
/// How often malformed stored limits are logged again while they last.
const SAY_MALFORMED_EVERY: Duration = Duration::from_secs(60);
/// The longest a worker waits on a concurrency cap (or for a key held back) before asking
/// again: other processes' releases are not announced.
const POLL_CAP: Duration = Duration::from_millis(50);
/// The longest a worker sleeps for a token before asking again (so a change of limits is seen).
const POLL_TOKEN: Duration = Duration::from_secs(1);
/// The most values one take brings under per-key limits: one admitting script settles them
/// all, so a burst of one key is moved aside that many at a time.
const BATCH_MOST: usize = 64;
/// Values taken beyond the worker's free permits: those whose keys are held back cost it no
/// permit, so a batch reaches past a burst of one key; those that cannot start go back.
const BATCH_BEYOND_PERMITS: usize = 16;

/// The limits a worker goes by, as last read: their version (the scripts read the numbers
/// from the stored hash, and answer "stale" when its version changed), how a value's key is
/// read, and whether per-key limits are set.
struct Active {
    version: String,
    reader: Option<KeyReader>,
    per_key: bool,
}

impl Active {
    fn new(limits: &Limits, version: String) -> Active {
        // A rule that does not compile was refused when stored; one that cannot run here (a
        // pointer without JSON support) leaves the values keyless.
        let reader = limits.key.as_ref().and_then(|rule| rule.compile().ok());
        Active {
            version,
            reader,
            per_key: limits.per_key(),
        }
    }
}

/// One queue's limits.
struct Gate<C: Codec> {
    queue: DelayedQueue<C>,
    active: Option<Active>,
    read_at: Option<Instant>,
    /// When to look for a due key held back next.
    held_check_at: Instant,
    warned: bool,
    /// While the stored limits are malformed (read so, or so answered by a script): when that
    /// was last logged. The gate is closed then: nothing is taken from its queue.
    malformed: Option<Instant>,
    /// While the limits cannot be read and the last good ones stay in force: when that was
    /// last logged.
    unreadable_said: Option<Instant>,
    metrics: LimitMetrics,
}

impl<C: Codec> Gate<C> {
    /// Whether nothing may be taken from the queue: its stored limits are malformed, and have
    /// not read well since.
    fn closed(&self) -> bool {
        self.active.is_none() && self.malformed.is_some()
    }

    /// Closes the gate: its stored limits are malformed (`reason`). Logged at most once a
    /// [`SAY_MALFORMED_EVERY`] while it lasts.
    fn close(&mut self, reason: &str) {
        self.active = None;
        let now = Instant::now();
        let say = self
            .malformed
            .is_none_or(|said| now.duration_since(said) >= SAY_MALFORMED_EVERY);
        if !say {
            tracing::debug!(queue = %self.queue.name(), reason = %reason, "the stored limits are still malformed");
            return;
        }
        self.malformed = Some(now);
        let repeat_s = SAY_MALFORMED_EVERY.as_secs();
        let key = self.queue.keys().limits();
        tracing::error!(queue = %self.queue.name(), key = %key, reason = %reason, repeat_s, "the stored limits are malformed or unreadable: taking nothing from the queue until they are stored again (`delayq limit set --replace`, or `limit clear`; a key of another type must be deleted)");
    }
}

/// What became of a value taken (one per take, moved on at once: not worth a box).
#[allow(clippy::large_enum_variant)]
pub(super) enum Admit<V> {
    /// Its handler may run; the slot (if the queue has limits) is released after it settles.
    Start(Delivery<V>, Option<Slot>),
    /// It is held back on its key's list, or no longer ours.
    Away,
    /// Given back: its queue lets nothing start until then (its limits refuse, or are
    /// malformed).
    Rest(Instant),
    /// The worker is asked to stop (the value goes back, like any unsettled delivery).
    Stopped,
}

/// Whether the takes may go on (see [`Gates::keep_closed`]).
pub(super) enum Shut {
    /// Some queue's limits are readable (or none are stored).
    Open,
    /// Every queue's limits are malformed: the worker waited for their next read.
    Waited,
    /// The worker is asked to stop.
    Stopped,
}

/// The limits of every queue of a worker.
pub(super) struct Gates<C: Codec> {
    gates: Vec<Gate<C>>,
    key_fn: Option<LimitKeyFn<C::Value>>,
    lease: Duration,
    /// Woken when a job of this worker releases its slot.
    released: Arc<Notify>,
    /// Jobs of a batch admitted together, started in their take order (each has a permit free).
    ready: VecDeque<(Arc<str>, Delivery<C::Value>, Slot)>,
}

impl<C: Codec> Gates<C> {
    /// The gates of `queues`; leases last `lease` (the visibility timeout).
    pub(super) fn new(
        queues: &[DelayedQueue<C>],
        key_fn: Option<LimitKeyFn<C::Value>>,
        lease: Duration,
    ) -> Self {
        let now = Instant::now();
        let gates = queues
            .iter()
            .map(|queue| Gate {
                queue: queue.clone(),
                active: None,
                read_at: None,
                held_check_at: now,
                warned: false,
                malformed: None,
                unreadable_said: None,
                metrics: LimitMetrics::new(queue.name()),
            })
            .collect();
        Gates {
            gates,
            key_fn,
            lease,
            released: Arc::new(Notify::new()),
            ready: VecDeque::new(),
        }
    }

    /// Whether values are admitted in batches: a single queue under per-key limits.
    pub(super) fn batching(&self) -> bool {
        self.gates.len() == 1 && self.gates[0].active.as_ref().is_some_and(|a| a.per_key)
    }

    /// The next job of a batch admitted together, if any is left.
    pub(super) fn next_ready(&mut self) -> Option<(Arc<str>, Delivery<C::Value>, Slot)> {
        self.ready.pop_front()
    }

    /// Values of queue `name` taken each with its slot and token (a gated take, at most the
    /// worker's free permits), granted at `admitted_ms`: queued to start in their take order.
    pub(super) fn granted(
        &mut self,
        name: &Arc<str>,
        deliveries: Vec<Delivery<C::Value>>,
        admitted_ms: i64,
    ) {
        for mut delivery in deliveries {
            let slot = Slot::hold(&mut delivery, String::new(), admitted_ms, self);
            self.ready.push_back((name.clone(), delivery, slot));
        }
    }

    /// Gives back the jobs admitted but not started (the worker stops).
    pub(super) fn drop_ready(&mut self) {
        self.ready.clear();
    }

    /// Takes more values behind `first` (up to [`BATCH_MOST`] in all) and settles them all in
    /// one script call, in take order: at most `free` start (queued in `ready`), the others are
    /// held back on their keys' lists or given back to the head of the target list. False on
    /// a stop.
    pub(super) async fn admit_batch(
        &mut self,
        first: Delivery<C::Value>,
        free: usize,
        sources: &Sources<C>,
        stop: &CancellationToken,
    ) -> bool {
        let name: Arc<str> = Arc::from(self.gates[0].queue.name());
        let want = (free + BATCH_BEYOND_PERMITS).min(BATCH_MOST);
        let mut batch = vec![first];
        if let Some(consumer) = sources.consumer(&name) {
            match consumer.try_take(want.saturating_sub(1)).await {
                Ok(more) => batch.extend(more),
                Err(err) => {
                    tracing::warn!(queue = %name, error = %err, "limits: taking a batch failed")
                }
            }
        }
        loop {
            let keys: Vec<String> = batch.iter().map(|d| self.key_of(0, d)).collect();
            let gate = &self.gates[0];
            let Some(active) = gate.active.as_ref().filter(|a| a.per_key) else {
                // Cleared since: the values go back, and are taken again under what is now.
                return true;
            };
            let values: Vec<(&str, &str)> = batch
                .iter()
                .zip(&keys)
                .map(|(d, k)| (d.id(), k.as_str()))
                .collect();
            let lease = match Delay::span(self.lease) {
                Ok(lease) => lease,
                Err(_) => return true,
            };
            let queue = &gate.queue;
            let reply = limit_admit::run(
                queue.client(),
                queue.spec(),
                &active.version,
                lease,
                free,
                &values,
            );
            match reply.await {
                Ok(Batch::Limited(Decision::Malformed(field))) => {
                    // The values go back (dropped, they are given back).
                    return self.refused(Decision::Malformed(field), stop).await;
                }
                Ok(Batch::Limited(_)) => self.refresh(0, true).await,
                Ok(Batch::Done(outcomes, refused)) => {
                    self.settle_batch(&name, batch, keys, outcomes);
                    let Some((wait, why)) = refused else {
                        return true;
                    };
                    return self.refused(Decision::Wait(wait, why), stop).await;
                }
                Err(err) => {
                    // The values stay in flight: dropped, they are given back.
                    tracing::warn!(queue = %name, error = %err, "limits: admitting a batch failed");
                    return self.wait(POLL_CAP * 4, WaitFor::Slot, stop).await;
                }
            }
        }
    }

    /// Follows the admitting script's outcome for each value of a batch.
    fn settle_batch(
        &mut self,
        name: &Arc<str>,
        batch: Vec<Delivery<C::Value>>,
        keys: Vec<String>,
        outcomes: Vec<Admitted>,
    ) {
        for ((mut delivery, key), outcome) in batch.into_iter().zip(keys).zip(outcomes) {
            match outcome {
                Admitted::Settled(Decision::Started { admitted_ms }) => {
                    let slot = Slot::hold(&mut delivery, key, admitted_ms, self);
                    self.ready.push_back((name.clone(), delivery, slot));
                }
                Admitted::Settled(Decision::HeldBack { wait, first }) => {
                    self.held_back(0, &key, wait, first);
                    delivery.forget();
                }
                Admitted::Settled(_) | Admitted::GivenBack => delivery.forget(),
            }
        }
    }

    fn index(&self, name: &str) -> usize {
        self.gates
            .iter()
            .position(|g| g.queue.name() == name)
            .unwrap_or(0)
    }

    /// Reads the limits of gate `i` again when `force`d or when the last read is a second old.
    async fn refresh(&mut self, i: usize, force: bool) {
        let gate = &mut self.gates[i];
        if !force && gate.read_at.is_some_and(|at| at.elapsed() < READ_EVERY) {
            return;
        }
        gate.read_at = Some(Instant::now());
        match gate.queue.limits_versioned().await {
            Ok(found) => {
                let active = found.map(|(limits, version)| Active::new(&limits, version));
                if active.is_some() != gate.active.is_some() || gate.malformed.is_some() {
                    tracing::info!(queue = %gate.queue.name(), limited = active.is_some(), "limits read");
                }
                gate.active = active;
                gate.malformed = None;
                gate.unreadable_said = None;
                gate.held_check_at = Instant::now();
            }
            // Fail closed: limits that cannot be read limit nothing, so nothing is taken.
            Err(Error::MalformedLimits { reason, .. }) => self.close(i, &reason),
            // A key of another type is limits that cannot be read either (removing it opens
            // the gate again: `limit set` refuses to overwrite it).
            Err(Error::WrongType { detail, .. }) => self.close(i, &detail),
            // With none read yet, nothing says the queue may run unlimited: closed too.
            Err(err) if gate.active.is_none() => {
                self.close(i, &format!("reading them failed: {err}"))
            }
            // The last good limits stay in force.
            Err(err) => {
                let now = Instant::now();
                if gate
                    .unreadable_said
                    .is_none_or(|said| now.duration_since(said) >= SAY_MALFORMED_EVERY)
                {
                    gate.unreadable_said = Some(now);
                    let repeat_s = SAY_MALFORMED_EVERY.as_secs();
                    tracing::error!(queue = %gate.queue.name(), error = %err, repeat_s, "cannot read the queue's limits; keeping the last good ones");
                }
            }
        }
    }

    /// Closes gate `i`: its stored limits are malformed (`reason`), so nothing is taken from
    /// its queue until they read well again (looked at every [`READ_EVERY`]).
    fn close(&mut self, i: usize, reason: &str) {
        self.gates[i].close(reason);
    }

    /// Keeps the takes off the queues whose stored limits are malformed: rests those of a
    /// worker over several queues until their next read, and when every queue is closed,
    /// waits for that read.
    pub(super) async fn keep_closed(
        &mut self,
        sources: &mut Sources<C>,
        stop: &CancellationToken,
    ) -> Shut {
        let now = Instant::now();
        let mut open = false;
        for gate in &self.gates {
            if !gate.closed() {
                open = true;
                continue;
            }
            let until = gate.read_at.map_or(now, |at| at + READ_EVERY);
            sources.rest(gate.queue.name(), until);
        }
        if open {
            return Shut::Open;
        }
        let until = self.wake_at().unwrap_or(now + READ_EVERY);
        tokio::select! {
            biased;
            _ = stop.cancelled() => Shut::Stopped,
            _ = tokio::time::sleep_until(until) => Shut::Waited,
        }
    }

    /// The gate a single queue with only queue-wide limits takes under: at most `most` values
    /// a take.
    pub(super) fn take_gate(&self, most: usize) -> Option<TakeGate> {
        let [gate] = self.gates.as_slice() else {
            return None;
        };
        let active = gate.active.as_ref().filter(|a| !a.per_key)?;
        Some(TakeGate {
            version: active.version.clone(),
            most,
        })
    }

    /// Follows the limits' refusal of a gated take (nothing was taken): waits the time named,
    /// or reads the limits again; false on a stop.
    pub(super) async fn refused(&mut self, refused: Decision, stop: &CancellationToken) -> bool {
        match refused {
            Decision::Wait(wait, why) => {
                let started = Instant::now();
                tracing::debug!(queue = %self.gates[0].queue.name(), reason = why.label(), wait_ms = wait.as_millis() as u64, "waiting for the limits before taking");
                let going = self.wait(wait, why, stop).await;
                self.gates[0]
                    .metrics
                    .waiting(why == WaitFor::Slot, started.elapsed());
                going
            }
            Decision::Stale => {
                self.refresh(0, true).await;
                true
            }
            Decision::Malformed(field) => {
                self.close(0, &format!("field {field:?} (as the limit script read it)"));
                true
            }
            _ => true,
        }
    }

    /// When the take loop should stop waiting on the target lists: to read the limits again
    /// (a worker without limits learns of new ones so), or to look at keys held back.
    pub(super) fn wake_at(&self) -> Option<Instant> {
        let now = Instant::now();
        self.gates
            .iter()
            .map(|g| {
                let read = g.read_at.map_or(now, |at| at + READ_EVERY);
                match g.active.as_ref().is_some_and(|a| a.per_key) {
                    true => read.min(g.held_check_at),
                    false => read,
                }
            })
            .min()
    }

    /// The value's key under gate `i`'s limits.
    fn key_of(&mut self, i: usize, delivery: &Delivery<C::Value>) -> String {
        let gate = &mut self.gates[i];
        let Some(active) = gate.active.as_ref().filter(|a| a.per_key) else {
            return String::new();
        };
        let key = match (&self.key_fn, delivery.value(), &active.reader) {
            (Some(key_fn), Some(value), _) => key_fn(value),
            (Some(_), None, _) => None,
            (None, _, Some(reader)) => reader.key_of(delivery.raw()),
            (None, _, None) => {
                if !std::mem::replace(&mut gate.warned, true) {
                    tracing::warn!(queue = %gate.queue.name(), "per-key limits without a key rule or a limit_key closure: only the queue-wide limits apply");
                }
                None
            }
        };
        key.unwrap_or_default()
    }

    /// Acquires the slots and tokens of `delivery` (of queue `name`), holds it back, or waits
    /// holding it (heartbeats on) until the limits let it start.
    pub(super) async fn admit(
        &mut self,
        name: &str,
        mut delivery: Delivery<C::Value>,
        stop: &CancellationToken,
    ) -> Admit<C::Value> {
        let i = self.index(name);
        let mut beat_at = Instant::now() + self.lease / 3;
        loop {
            self.refresh(i, false).await;
            if self.gates[i].closed() {
                // Its limits turned malformed since the take: the value goes back.
                if let Err(err) = delivery.give_back().await {
                    tracing::warn!(queue = %name, error = %err, "giving a value back failed; it returns after its deadline");
                }
                return Admit::Rest(Instant::now() + READ_EVERY);
            }
            if self.gates[i].active.is_none() {
                return Admit::Start(delivery, None);
            }
            let key = self.key_of(i, &delivery);
            let started = Instant::now();
            match self.acquire(i, delivery.id(), &key).await {
                Ok(Decision::Started { admitted_ms }) => {
                    let slot = Slot::hold(&mut delivery, key, admitted_ms, self);
                    return Admit::Start(delivery, Some(slot));
                }
                Ok(Decision::HeldBack { wait, first }) => {
                    self.held_back(i, &key, wait, first);
                    delivery.forget();
                    return Admit::Away;
                }
                Ok(Decision::Gone) => {
                    delivery.forget();
                    return Admit::Away;
                }
                Ok(Decision::Stale) => self.refresh(i, true).await,
                Ok(Decision::Malformed(field)) => {
                    self.close(i, &format!("field {field:?} (as the limit script read it)"))
                }
                Ok(Decision::Wait(wait, why)) if self.gates.len() > 1 => {
                    tracing::debug!(queue = %name, reason = why.label(), wait_ms = wait.as_millis() as u64, "limits: the queue rests, its value given back");
                    if let Err(err) = delivery.give_back().await {
                        tracing::warn!(queue = %name, error = %err, "giving a value back failed; it returns after its deadline");
                    }
                    return Admit::Rest(Instant::now() + wait.min(poll_most(why)));
                }
                Ok(Decision::Wait(wait, why)) => {
                    tracing::debug!(queue = %name, reason = why.label(), wait_ms = wait.as_millis() as u64, "waiting for the limits");
                    if !self.wait(wait, why, stop).await {
                        return Admit::Stopped;
                    }
                    let spent = started.elapsed();
                    self.gates[i].metrics.waiting(why == WaitFor::Slot, spent);
                }
                Err(err) => {
                    tracing::warn!(queue = %name, error = %err, "limits: acquiring failed; trying again");
                    if !self.wait(POLL_CAP * 4, WaitFor::Slot, stop).await {
                        return Admit::Stopped;
                    }
                }
            }
            if Instant::now() >= beat_at {
                beat_at = Instant::now() + self.lease / 3;
                if let Err(err) = delivery.extend(self.lease).await {
                    tracing::warn!(queue = %name, error = %err, "heartbeat of a value held for the limits failed");
                }
            }
        }
    }

    async fn acquire(&self, i: usize, id: &str, key: &str) -> Result<Decision> {
        let gate = &self.gates[i];
        let Some(active) = &gate.active else {
            // Cleared since the caller looked: read them again.
            return Ok(Decision::Stale);
        };
        let queue = &gate.queue;
        let lease = Delay::span(self.lease)?;
        limit_acquire::run(
            queue.client(),
            queue.spec(),
            &active.version,
            lease,
            id,
            key,
        )
        .await
    }

    fn held_back(&mut self, i: usize, key: &str, wait: Duration, first: bool) {
        let gate = &mut self.gates[i];
        gate.metrics.held_back();
        let wait_ms = wait.as_millis() as u64;
        if first {
            tracing::info!(queue = %gate.queue.name(), key, wait_ms, "key at its limits: its values are held back");
        } else {
            tracing::debug!(queue = %gate.queue.name(), key, wait_ms, "value held back behind its key");
        }
    }

    /// Sleeps for a refused start: `wait` for a token (at most [`POLL_TOKEN`]), at most
    /// [`POLL_CAP`] for a slot, less when a job of this worker releases one; false on a stop.
    async fn wait(&self, wait: Duration, why: WaitFor, stop: &CancellationToken) -> bool {
        let sleep = wait.clamp(Duration::from_millis(1), poll_most(why));
        tokio::select! {
            biased;
            _ = stop.cancelled() => false,
            _ = self.released.notified() => true,
            _ = tokio::time::sleep(sleep) => true,
        }
    }
}

/// The longest a refused start waits before asking again.
fn poll_most(why: WaitFor) -> Duration {
    match why {
        WaitFor::Slot => POLL_CAP,
        WaitFor::Token => POLL_TOKEN,
    }
}
