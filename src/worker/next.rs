//! The take loop's next job: from a batch admitted together, from a key held back, or taken
//! from the target lists and admitted by the limits (see `gate.rs`).

use super::gate::{Admit, Gates, Shut, Slot};
use super::taker::{Taker, Took};
use crate::codec::Codec;
use crate::reliable::Delivery;
use std::sync::Arc;
use tokio::sync::Semaphore;

/// The next job to start: one admitted with others first, then a held-back value of a due key,
/// else a value taken from the target lists and admitted by the limits (a single queue with
/// only queue-wide limits takes up to the worker's free `permits` values, each with its slot
/// and token, in one script, and takes nothing while they refuse; under per-key limits, a batch
/// of values is taken and admitted in one script, of which at most the worker's free `permits`
/// start). Nothing is taken from a queue whose stored limits are malformed. `None` once the
/// worker is asked to stop.
pub(super) async fn next_job<C: Codec>(
    gates: &mut Gates<C>,
    taker: &mut Taker<'_, C>,
    permits: &Semaphore,
) -> Option<(Arc<str>, Delivery<C::Value>, Option<Slot>)> {
    loop {
        if let Some((queue, delivery, slot)) = gates.next_ready() {
            return Some((queue, delivery, Some(slot)));
        }
        if let Some((queue, Admit::Start(delivery, slot))) = gates.unpark(taker.sources).await {
            return Some((queue, delivery, slot));
        }
        match gates.keep_closed(taker.sources, taker.stop).await {
            Shut::Open => {}
            Shut::Waited => continue,
            Shut::Stopped => return None,
        }
        // The permit held, and those no job holds.
        let free = permits.available_permits() + 1;
        let gate = gates.take_gate(free);
        match taker.next_until(gates.wake_at(), gate.as_ref()).await {
            Took::Stopped => return None,
            Took::Woke => {}
            Took::Limited(refused) => {
                if !gates.refused(refused, taker.stop).await {
                    return None;
                }
            }
            Took::Granted(queue, deliveries, admitted_ms) => {
                gates.granted(&queue, deliveries, admitted_ms);
            }
            Took::Value(_, delivery) if gates.batching() => {
                if !gates
                    .admit_batch(delivery, free, taker.sources, taker.stop)
                    .await
                {
                    return None;
                }
            }
            Took::Value(queue, delivery) => match gates.admit(&queue, delivery, taker.stop).await {
                Admit::Start(delivery, slot) => return Some((queue, delivery, slot)),
                Admit::Away => {}
                Admit::Rest(until) => taker.sources.rest(&queue, until),
                Admit::Stopped => return None,
            },
        }
    }
}
