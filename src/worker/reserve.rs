//! The limits of a sharded queue as a whole, in a worker over its shards: before each take, a
//! slot and a token of the logical queue's queue-wide limits (`delayq_limits:{NAME}`) are
//! reserved under an id of their own (`lua/limit_reserve.lua`), held while the worker waits for
//! a value and while its job runs (renewed every third of the visibility timeout), and released
//! when the job settles, or at once when the take brings nothing.
//!
//! The logical queue's slot holds none of the shards' values, so the reservation cannot be one
//! script with the take, as `limit_take.lua` is for one queue: a killed worker's reservations
//! run out with their lease, as its deliveries' slots do. Per-key limits stay each shard's own.

use crate::codec::Codec;
use crate::limit::Limits;
use crate::queue::DelayedQueue;
use crate::redis::ops::limit_lease;
use crate::redis::ops::limit_reserve;
use crate::redis::reply::{Decision, WaitFor};
use crate::time::Delay;
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

/// How often a worker without such limits looks for new ones.
const READ_EVERY: Duration = Duration::from_secs(1);
/// The longest wait for a slot before asking again (other processes' releases are not
/// announced).
const POLL_SLOT: Duration = Duration::from_millis(50);
/// The longest wait for a token before asking again (so a change of limits is seen).
const POLL_TOKEN: Duration = Duration::from_secs(1);

/// The stored limits a reservation goes by: their version (the script reads their numbers).
#[derive(Debug)]
struct Stored {
    version: String,
}

impl Stored {
    /// `None` when `limits` has no queue-wide part.
    fn of(limits: &Limits, version: String) -> Option<Stored> {
        let queue_wide = limits.concurrency.is_some() || limits.rate.is_some();
        queue_wide.then_some(Stored { version })
    }
}

/// Reserves the logical queue's slots and tokens for one worker.
pub(super) struct Reserver<C: Codec> {
    logical: DelayedQueue<C>,
    lease: Delay,
    stored: Option<Stored>,
    read_at: Option<Instant>,
}

impl<C: Codec> Reserver<C> {
    /// Reservations in `logical`'s keys, each leased for `visibility`.
    pub(super) fn new(logical: DelayedQueue<C>, visibility: Duration) -> Reserver<C> {
        // The visibility timeout was checked when the worker was configured.
        let lease = Delay::span(visibility).expect("a checked visibility timeout");
        Reserver {
            logical,
            lease,
            stored: None,
            read_at: None,
        }
    }

    /// Reads the stored limits when they are due to be read again (or `force`).
    async fn refresh(&mut self, force: bool) {
        if !force && self.read_at.is_some_and(|at| at.elapsed() < READ_EVERY) {
            return;
        }
        self.read_at = Some(Instant::now());
        match self.logical.limits_versioned().await {
            Ok(read) => {
                self.stored = read.and_then(|(limits, version)| Stored::of(&limits, version));
            }
            Err(err) => {
                tracing::warn!(queue = %self.logical.name(), error = %err, "reading the sharded queue's limits failed; going by the last ones read");
            }
        }
    }

    /// A reservation for the next take: `Some(None)` when the logical queue has no queue-wide
    /// limits, `None` when `stop` came first. Waits as the limits say (asking again at least
    /// every 50 ms for a slot, every second for a token).
    pub(super) async fn reserve(
        &mut self,
        stop: &CancellationToken,
    ) -> Option<Option<Reservation>> {
        let mut force = false;
        loop {
            self.refresh(force).await;
            force = false;
            let Some(stored) = &self.stored else {
                return Some(None);
            };
            let id = format!("reserve:{:032x}", rand::random::<u128>());
            let spec = self.logical.spec();
            let client = self.logical.client();
            let version = &stored.version;
            let wait = match limit_reserve::run(client, spec, version, self.lease, &id).await {
                Ok(Decision::Started { .. }) => return Some(Some(self.hold(id))),
                Ok(Decision::Wait(wait, WaitFor::Slot)) => wait.min(POLL_SLOT),
                Ok(Decision::Wait(wait, WaitFor::Token)) => wait.min(POLL_TOKEN),
                Ok(Decision::Malformed(field)) => {
                    // Fail closed, as a queue's own gate does: nothing starts until the limits
                    // are stored again.
                    tracing::warn!(queue = %self.logical.name(), field, "the sharded queue's stored limits are malformed; nothing starts until they are stored again");
                    POLL_TOKEN
                }
                Ok(_) => {
                    force = true;
                    Duration::ZERO
                }
                Err(err) => {
                    tracing::warn!(queue = %self.logical.name(), error = %err, "reserving under the sharded queue's limits failed; trying again");
                    POLL_TOKEN
                }
            };
            tokio::select! {
                () = stop.cancelled() => return None,
                () = tokio::time::sleep(wait) => {}
            }
        }
    }

    /// Holds the reservation `id`: renewed every third of its lease until released.
    fn hold(&self, id: String) -> Reservation {
        let done = CancellationToken::new();
        let (logical, lease, until) = (self.logical.clone(), self.lease, done.clone());
        let renew_id = id.clone();
        let every = Duration::from_millis(self.lease.ms().max(3) as u64 / 3);
        let span = tracing::debug_span!("limit.reservation", queue = %logical.name());
        tokio::spawn(
            async move {
                loop {
                    tokio::select! {
                        () = until.cancelled() => break,
                        () = tokio::time::sleep(every) => {}
                    }
                    let (client, spec) = (logical.client(), logical.spec());
                    match limit_lease::run(client, spec, &renew_id, "", Some(lease)).await {
                        Ok(true) => {}
                        Ok(false) => tracing::warn!("a reservation under the sharded queue's limits ran out before it was renewed"),
                        Err(err) => tracing::warn!(error = %err, "renewing a reservation failed"),
                    }
                }
                let (client, spec) = (logical.client(), logical.spec());
                if let Err(err) = limit_lease::run(client, spec, &renew_id, "", None).await {
                    tracing::warn!(error = %err, "releasing a reservation failed; it runs out with its lease");
                }
            }
            .instrument(span),
        );
        Reservation { _id: id, done }
    }
}

/// A slot (and the token taken with it) of the logical queue's limits, held until dropped:
/// dropping it releases it (in the background).
#[derive(Debug)]
pub(super) struct Reservation {
    _id: String,
    done: CancellationToken,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.done.cancel();
    }
}
