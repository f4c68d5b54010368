//! Values held back by per-key limits: a due key's oldest value taken into flight with its
//! slots (`limit_unpark.lua`), one queue at a time.

use super::{Admit, Gates, Slot, POLL_CAP, READ_EVERY};
use crate::codec::Codec;
use crate::keys::PAUSED_RECHECK;
use crate::redis::ops::limit_unpark::{self, Unparked};
use crate::redis::reply::Decision;
use crate::time::Delay;
use crate::worker::sources::Sources;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

impl<C: Codec> Gates<C> {
    /// A held-back value of a due key, taken into flight with its slots, if a queue has one.
    pub(in crate::worker) async fn unpark(
        &mut self,
        sources: &Sources<C>,
    ) -> Option<(Arc<str>, Admit<C::Value>)> {
        for i in 0..self.gates.len() {
            self.refresh(i, false).await;
            let due = self.gates[i].held_check_at <= Instant::now();
            if !due || !self.gates[i].active.as_ref().is_some_and(|a| a.per_key) {
                continue;
            }
            if let Some(found) = self.unpark_one(i, sources).await {
                return Some(found);
            }
        }
        None
    }

    async fn unpark_one(
        &mut self,
        i: usize,
        sources: &Sources<C>,
    ) -> Option<(Arc<str>, Admit<C::Value>)> {
        self.gates[i].held_check_at = Instant::now() + POLL_CAP;
        let gate = &self.gates[i];
        let active = gate.active.as_ref()?;
        let name: Arc<str> = Arc::from(gate.queue.name());
        let consumer = sources.consumer(&name)?;
        let id = crate::reliable::fresh_delivery_id(crate::time::now_ms());
        let lease = Delay::span(self.lease).ok()?;
        let queue = &gate.queue;
        let reply =
            limit_unpark::run(queue.client(), queue.spec(), &active.version, lease, &id).await;
        let next_check = match reply {
            Ok(Unparked::Taken {
                deadline_ms,
                admitted_ms,
                key,
                taken,
            }) => {
                let mut delivery = consumer.adopt(taken.id, taken.raw, taken.attempt, deadline_ms);
                let slot = Slot::hold(&mut delivery, key, admitted_ms, self);
                return Some((name, Admit::Start(delivery, Some(slot))));
            }
            Ok(Unparked::NoneDue(next)) => next.unwrap_or(POLL_CAP).min(POLL_CAP),
            // The takes of its queue say so and count it; nothing held back leaves meanwhile.
            Ok(Unparked::Paused) => PAUSED_RECHECK,
            Ok(Unparked::Other(Decision::Stale)) => {
                self.refresh(i, true).await;
                Duration::ZERO
            }
            Ok(Unparked::Other(Decision::Wait(wait, _))) => wait.min(POLL_CAP),
            Ok(Unparked::Other(Decision::Malformed(field))) => {
                self.close(i, &format!("field {field:?} (as the limit script read it)"));
                READ_EVERY
            }
            Ok(Unparked::Other(_)) => POLL_CAP,
            Err(err) => {
                tracing::warn!(queue = %name, error = %err, "limits: taking a held-back value failed");
                POLL_CAP * 4
            }
        };
        self.gates[i].held_check_at = Instant::now() + next_check;
        None
    }
}
