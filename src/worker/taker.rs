//! The worker's takes: from the target lists, retried with backoff, and ended by a wake-up
//! time when the limits want to look at Redis again (see `gate.rs`).

use super::sources::{take_backoff, Sources};
use super::Counters;
use crate::codec::Codec;
use crate::redis::ops::limit_take::TakeGate;
use crate::redis::reply::Decision;
use crate::reliable::{Delivery, GatedTake};
use crate::retry::{FailureLog, Retrying};
use std::sync::Arc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// What a take brought (one per take, moved on at once: not worth a box).
#[allow(clippy::large_enum_variant)]
pub(super) enum Took<V> {
    /// A value of the queue named, taken without limits.
    Value(Arc<str>, Delivery<V>),
    /// Values of the queue named taken under a gate, in take order, each with its slot and
    /// token, granted at the time given (the Redis server's clock, epoch ms).
    Granted(Arc<str>, Vec<Delivery<V>>, i64),
    /// The queue-wide limits refused (nothing taken), changed, or are malformed.
    Limited(Decision),
    /// The wake-up time passed first.
    Woke,
    /// The worker is asked to stop.
    Stopped,
}

/// Takes the worker's values, retrying failed takes with backoff until a stop.
pub(super) struct Taker<'a, C: Codec> {
    pub(super) sources: &'a mut Sources<C>,
    pub(super) stop: &'a CancellationToken,
    pub(super) counters: &'a Counters,
    pub(super) name: &'a str,
    pub(super) retrying: Retrying,
    pub(super) failures: FailureLog,
}

impl<'a, C: Codec> Taker<'a, C> {
    /// A taker of `sources` (of the worker named `name`), retrying with the take backoff.
    pub(super) fn new(
        sources: &'a mut Sources<C>,
        stop: &'a CancellationToken,
        counters: &'a Counters,
        name: &'a str,
    ) -> Self {
        Taker {
            sources,
            stop,
            counters,
            name,
            retrying: Retrying::new(take_backoff()),
            failures: FailureLog::default(),
        }
    }

    /// The next delivery; [`Took::Woke`] once `wake` has passed, [`Took::Stopped`] once the
    /// worker is asked to stop. Each kind of error is logged once, then again only when it
    /// changes; the recovery is logged too.
    pub(super) async fn next_until(
        &mut self,
        wake: Option<Instant>,
        gate: Option<&TakeGate>,
    ) -> Took<C::Value> {
        let name = self.name;
        loop {
            match self
                .sources
                .next(self.stop, wake, gate, self.counters)
                .await
            {
                Ok(Some((queue, taken))) => {
                    self.retrying.succeeded();
                    if self.failures.recovered() > 0 {
                        tracing::info!(queue = %name, "takes work again");
                    }
                    return match taken {
                        GatedTake::Value(delivery) => Took::Value(queue, delivery),
                        GatedTake::Granted(deliveries, admitted_ms) => {
                            Took::Granted(queue, deliveries, admitted_ms)
                        }
                        GatedTake::Limited(refused) => Took::Limited(refused),
                        // The sources wait a pause out themselves and never return it; were
                        // one returned, the loop would look at the limits and take again.
                        GatedTake::Paused => Took::Woke,
                    };
                }
                Ok(None) if self.stop.is_cancelled() => return Took::Stopped,
                Ok(None) => return Took::Woke,
                Err(err) => {
                    Counters::bump(&self.counters.errors);
                    let wait = self.retrying.failed();
                    let retry_in_ms = wait.as_millis() as u64;
                    if self.failures.first_of_kind(&err.to_string()) {
                        tracing::warn!(queue = %name, error = %err, retry_in_ms, "take failed; retrying (repeats of this error are logged at debug)");
                    } else {
                        tracing::debug!(queue = %name, error = %err, retry_in_ms, "take failed again");
                    }
                    tokio::select! {
                        _ = self.stop.cancelled() => return Took::Stopped,
                        _ = tokio::time::sleep(wait) => {}
                    }
                }
            }
        }
    }
}
