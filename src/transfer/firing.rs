//! The group's task firing the recurring schedules of its queues: every tick, the registry of
//! queues with schedules is read once, then each registered queue's due schedules
//! ([`Schedules::fire_due`]), one queue after another, by the queue's clock (the host's, or the
//! server's `TIME` read once a tick); stopped with the group. A queue without schedules costs
//! no command. The task holds each scheduled queue's metric handles while the registry lists
//! the queue, so that its counters are there from 0 and stay between firings.

use super::state::GroupShared;
use crate::metrics::FiringMetrics;
use crate::recurring::{registry, FiringConfig, ScheduleStore};
use crate::time::{now_ms, Clock};
use fred::clients::Client;
use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;
use tracing::Instrument;

/// How often one queue's failing firing is logged (it is tried every tick).
const WARN_EVERY: Duration = Duration::from_secs(60);

/// Starts the firing task of the group `shared` (held weakly: the group's last handle dropped
/// stops it, as it stops the transfers).
pub(super) fn spawn(
    client: Client,
    shared: Weak<GroupShared>,
    config: FiringConfig,
) -> JoinHandle<()> {
    let token = match shared.upgrade() {
        Some(group) => group.token.clone(),
        None => return tokio::spawn(async {}),
    };
    tokio::spawn(async move {
        let mut warned: HashMap<String, Instant> = HashMap::new();
        let mut recorded = Recorded::default();
        let mut ticks = tokio::time::interval(config.tick());
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = token.cancelled() => break,
                _ = ticks.tick() => {}
            }
            let Some(mut queues) = shared.upgrade().map(|group| group.queues()) else {
                break;
            };
            if queues.is_empty() {
                continue;
            }
            // Without the registry (a user whose rights end at its queues' keys) every queue's
            // schedules are read, as the registry would have said nothing.
            match registry::scheduled(&client).await {
                Ok(scheduled) => {
                    queues.retain(|(name, _)| scheduled.contains(name));
                    recorded.keep(&queues);
                }
                Err(err) => warn_once(&mut warned, REGISTRY, &err),
            }
            // The server's clock for the queues that go by it, read once a tick (the host's
            // when it cannot be read: firing early or late never delivers early).
            let server_now = match queues.iter().any(|(_, o)| o.clock == Clock::Server) {
                true => crate::redis::server::time_ms(&client).await,
                false => None,
            };
            let host_now = now_ms();
            for (name, options) in queues {
                if token.is_cancelled() {
                    break;
                }
                let now = match options.clock {
                    Clock::Server => server_now.unwrap_or(host_now),
                    _ => host_now,
                };
                let schedules = ScheduleStore::new(client.clone(), name.clone(), options);
                let span = tracing::debug_span!("schedules", queue = %name);
                let fired = match recorded.of(&name) {
                    Some(metrics) => {
                        let firing = schedules.fire_due_recorded(now, &config, metrics);
                        firing.instrument(span).await
                    }
                    None => schedules.fire_due(now, &config).instrument(span).await,
                };
                match fired {
                    Ok(tally) if tally.offered > 0 => {
                        tracing::debug!(queue = %name, offered = tally.offered, "schedules fired");
                    }
                    Ok(_) => {}
                    Err(err) => warn_once(&mut warned, &name, &err),
                }
            }
        }
    })
}

/// The metric handles of the queues the registry lists, made when a queue appears there and
/// dropped when it leaves (or leaves the group): a queue with schedules has its counters at 0
/// before its first firing, and they are not retired between firings.
#[derive(Default)]
struct Recorded(HashMap<String, Arc<FiringMetrics>>);

impl Recorded {
    /// Keeps the handles of `queues` (the group's scheduled ones), making those missing.
    fn keep(&mut self, queues: &[(String, crate::options::QueueOptions)]) {
        let names: std::collections::HashSet<&str> =
            queues.iter().map(|(name, _)| name.as_str()).collect();
        self.0.retain(|name, _| names.contains(name.as_str()));
        for name in names {
            if !self.0.contains_key(name) {
                let metrics = Arc::new(FiringMetrics::new(name));
                self.0.insert(name.to_owned(), metrics);
            }
        }
    }

    /// The handles of the queue `name`, if the registry listed it at the last read.
    fn of(&self, name: &str) -> Option<&Arc<FiringMetrics>> {
        self.0.get(name)
    }
}

/// What the warnings about reading the registry are filed under (no queue has this name).
const REGISTRY: &str = "";

/// Logs that firing `queue`'s schedules failed, once every [`WARN_EVERY`].
fn warn_once(warned: &mut HashMap<String, Instant>, queue: &str, err: &crate::Error) {
    let last = warned.get(queue).copied();
    if last.is_none_or(|at| at.elapsed() >= WARN_EVERY) {
        match queue {
            REGISTRY => {
                tracing::warn!(error = %err, "reading the registry of scheduled queues failed")
            }
            _ => tracing::warn!(queue = %queue, error = %err, "firing schedules failed"),
        }
        warned.insert(queue.to_owned(), Instant::now());
    }
}
