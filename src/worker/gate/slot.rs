//! What a started job of a limited queue holds until it settles.

use super::Gates;
use crate::codec::Codec;
use crate::reliable::Delivery;
use std::sync::Arc;
use tokio::sync::Notify;

/// The slots a started job holds. Its receipt carries them: the job's heartbeats renew their
/// leases (every third of the lease: the visibility timeout) and settling releases them, an
/// ack in the same script call; a killed process's run out with their lease. What is left here
/// is waking this worker's waits on a cap once the job has settled.
#[derive(Debug)]
pub(in crate::worker) struct Slot {
    released: Arc<Notify>,
}

impl Slot {
    /// The slots of `delivery` (limit key `key`, `""` for none), granted at `admitted_ms`,
    /// noted on its receipt.
    pub(in crate::worker) fn hold<C: Codec>(
        delivery: &mut Delivery<C::Value>,
        key: String,
        admitted_ms: i64,
        gates: &Gates<C>,
    ) -> Slot {
        delivery.hold_slots(key, admitted_ms);
        Slot {
            released: gates.released.clone(),
        }
    }

    /// The job holding `slot` (if the queue has limits) has settled: its slots are released,
    /// so this worker's waits on a cap may ask again.
    pub(in crate::worker) fn settled(slot: Option<Slot>) {
        if let Some(slot) = slot {
            slot.released.notify_waiters();
        }
    }
}
