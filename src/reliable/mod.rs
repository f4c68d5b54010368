//! Beyond Redisson: acknowledged consumption, retries and dead letters, without changing
//! anything a Java peer sees.
//!
//! - `config.rs`: [`ReliableConfig`].
//! - `settle.rs`: the settle calls (ack, nack, dead letter, extend) a delivery makes.
//! - `delivery.rs`: [`Receipt`] and [`Delivery`], the settle API.
//! - `delivery_id.rs`: what a delivery id says ([`DeliveryOrigin`]: process, start, attempt).
//! - `in_flight.rs`: the in-flight deliveries as a console lists them ([`InFlightPage`]).
//! - `consumer.rs`: [`ReliableConsumer`] (take, the blocking wait, housekeeping, close).
//! - `reaper.rs`: giving back overdue values and lapsed claim lists.
//! - `dead.rs`: the dead-letter record and [`DelayedQueue`]'s dead-letter tools.
//!
//! # How a reliable take works
//!
//! Redisson's consumers `BLPOP` the target list: a value leaves Redis before the work is done,
//! so a crash loses it. A [`ReliableConsumer`] instead moves the value, in one script
//! (`take.lua`), from the target list into two keys of ours in the queue's hash slot:
//!
//! - `delayq_inflight:{NAME}`, a zset: delivery id → visibility deadline (epoch ms);
//! - `delayq_inflight_data:{NAME}`, a hash: delivery id → the value's bytes.
//!
//! Acks, nacks and dead letters also note the delivery id for a minute in the zset
//! `delayq_settled:{NAME}`, so that a call sent again after a dropped connection (the first one
//! ran, its reply was lost; sent again by the caller, or by a fred client that retries) reports
//! its own success instead of "no longer ours".
//!
//! Lua cannot block, so when the list is empty the consumer waits with
//! `BLMOVE NAME delayq_claim:{NAME}:ID LEFT RIGHT` on its own connection: Redis serves it in turn
//! with any Java `BLPOP` waiting on the same list, and moves the value into this consumer's own
//! claim list; the next `take.lua` call registers it in flight from there. Every `take.lua` call
//! renews the consumer's lease on its claim list (zset `delayq_claims:{NAME}`); if the process
//! dies between the `BLMOVE` and the take, its lease runs out and any reaper puts the claim list
//! back onto the head of the target list (`unclaim.lua`). So at every moment a value is on the
//! target list, on a claim list under a lease, or in flight under a deadline: if the process dies
//! anywhere, nothing is lost.
//!
//! The claim list (rather than waiting with `BLMOVE NAME NAME`, which takes nothing away)
//! keeps Redis's first-come, first-served order between reliable consumers and Java `BLPOP`
//! consumers: a value moved back onto the list would go at once to a waiting Java consumer.
//!
//! While the queue is [paused](crate::admin::Admin::pause), `take.lua` takes nothing (it reads
//! the pause flag in the same call, so no take follows a pause) and puts a value its blocking
//! wait claimed back onto the head of the target list; the consumer does not wait with `BLMOVE`
//! then, and looks at the flag again about every second. Values already in flight settle as
//! usual. Java's `BLPOP` consumers, and delayq's own [`Consumer`](crate::Consumer), which takes
//! as they do, do not know the flag.
//!
//! [`ack`](Delivery::ack) deletes the in-flight value; [`nack`](Delivery::nack) gives it back
//! (onto the target list, or with a delay as a normal Redisson entry of the delayed queue, so Java
//! sees it as pending); dropping a [`Delivery`] unsettled gives it back at the consumer's next
//! call. A reaper (`reap.lua`, run by every reliable consumer about once a second, and safe with
//! any number of them) puts values whose deadline passed back onto the target list:
//! a consumer that died or hung with a value loses it to the next consumer after the visibility
//! timeout. Long jobs push their deadline back with [`extend`](Delivery::extend) (the
//! [worker](crate::worker) does it by itself).
//!
//! Delivery is therefore *at least once*: a value is delivered again only when its consumer did
//! not settle it before its deadline (crash, hang, lost connection).
//!
//! # Attempt counts
//!
//! Retried values go back into the delayed queue as ordinary entries, with the same value bytes
//! (Java peers must see the value unchanged). The number of deliveries is kept apart, in the hash
//! `delayq_attempts:{NAME}`, keyed by the value's bytes: `take.lua` increments it, `ack` and dead
//! lettering delete it. So **equal values share one counter**: two equal values in flight at once
//! count each other's attempts, and acknowledging one resets the other's. Give values an identity
//! (an order id, a job id) when exact counts matter. Counters of values that left our hands
//! (taken by a Java consumer after a retry) are pruned by the reaper after
//! [`attempts_retention`](ReliableConfig::attempts_retention) (7 days by default), using the zset
//! `delayq_attempts_seen:{NAME}`.
//!
//! # Dead letters
//!
//! A value that failed its last attempt goes to the list `delayq_dead:{NAME}` with its attempt
//! count and last error ([`DeadLetter`]); [`Inspect::dead_letters`] lists them,
//! [`Admin::replay_dead_letters`] and [`Admin::purge_dead_letters`] (and
//! `delayq dead list|replay|purge`) manage them.

mod config;
mod consumer;
mod dead;
mod delivery;
mod delivery_id;
mod in_flight;
mod reaper;
mod settle;

pub use config::ReliableConfig;
pub use consumer::ReliableConsumer;
pub(crate) use consumer::{Found, GatedTake};
pub use dead::{bounded_error, dead_letter, DeadLetter, MAX_ERROR_BYTES};
pub use delivery::{Delivery, Receipt};
pub(crate) use delivery_id::fresh as fresh_delivery_id;
pub use delivery_id::DeliveryOrigin;
pub use in_flight::{InFlightDelivery, InFlightPage};
pub use reaper::ReapOutcome;

use crate::codec::Codec;
use crate::inspect::{Inspect, ReliableStats};
use crate::queue::{Admin, DelayedQueue};
use crate::redis::ops::{nack, reliable_stats};
use crate::Result;

/// **Reliable consumption**: acknowledged takes (delayq only; Java peers see none of its
/// keys).
impl<C: Codec> DelayedQueue<C> {
    /// A [`ReliableConsumer`] with the default [`ReliableConfig`]: values are taken with
    /// acknowledgement (**at least once**; a value comes back when its consumer dies or hangs
    /// before settling it), unlike [`consumer`](DelayedQueue::consumer) (at most once).
    ///
    /// # Errors
    ///
    /// No connection for the consumer's blocking waits.
    pub async fn reliable_consumer(&self) -> Result<ReliableConsumer<C>> {
        ReliableConsumer::new(self, ReliableConfig::default()).await
    }

    /// A [`ReliableConsumer`] with `config`.
    ///
    /// # Errors
    ///
    /// An invalid config, or no connection.
    pub async fn reliable_consumer_with(
        &self,
        config: ReliableConfig,
    ) -> Result<ReliableConsumer<C>> {
        ReliableConsumer::new(self, config).await
    }
}

/// The reliable consumers' counters (delayq only).
impl<C: Codec> Inspect<'_, DelayedQueue<C>> {
    /// Counters of delayq's own keys (in flight, dead letters, quarantine), read atomically.
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn reliable_stats(self) -> Result<ReliableStats> {
        let counts = reliable_stats::run(self.queue.client(), self.queue.spec()).await?;
        Ok(counts.into())
    }
}

/// An in-flight value given back by hand (delayq only).
impl<C: Codec> Admin<'_, DelayedQueue<C>> {
    /// Gives the in-flight value of the delivery `delivery_id` (a member of
    /// `delayq_inflight:{NAME}`) back onto the head of the target list, unprocessed, uncounting
    /// its attempt, as [`Receipt::give_back`] does, without the receipt: an operator's hand on a
    /// value whose consumer hangs. The consumer's later ack or nack then finds it no longer
    /// its own. False when the delivery is no longer in flight.
    ///
    /// # Errors
    ///
    /// A Redis error.
    pub async fn give_back_in_flight(self, delivery_id: &str) -> Result<bool> {
        let now = crate::time::Delay::checked(std::time::Duration::ZERO)?;
        nack::run(
            self.queue.client(),
            self.queue.spec(),
            delivery_id,
            now,
            true,
        )
        .await
    }
}
