//! When a call to Redis last succeeded, the one record `/healthz` reads: a connection can stay
//! up while the server answers every call with an error (BUSY with a script that runs on,
//! LOADING) or not at all.

use delayq::fred::clients::Client;
use delayq::fred::types::scripts::Script;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How often the probe calls Redis.
const EVERY: Duration = Duration::from_secs(1);
/// How long one probe waits for its answer.
const WAIT: Duration = Duration::from_secs(5);
/// The probe: a script, because the ACL delayq documents allows EVALSHA and no PING, and a
/// script call is refused like every other while the server is busy.
const PROBE: &str = "return 1";

/// The time (epoch ms) of the last call Redis answered without an error.
#[derive(Debug)]
pub(crate) struct Pulse {
    last_ok_ms: AtomicI64,
}

impl Pulse {
    /// Starts with now: the command connected just before.
    pub(crate) fn new() -> Arc<Pulse> {
        Arc::new(Pulse {
            last_ok_ms: AtomicI64::new(delayq::time::now_ms()),
        })
    }

    /// How long ago the last call succeeded (ms).
    pub(crate) fn age_ms(&self, now_ms: i64) -> i64 {
        now_ms
            .saturating_sub(self.last_ok_ms.load(Ordering::Relaxed))
            .max(0)
    }

    /// Calls the probe script every second until `stop`, recording each success.
    pub(crate) async fn run(self: Arc<Self>, client: Client, stop: CancellationToken) {
        let probe = Script::from_lua(PROBE);
        let mut tick = tokio::time::interval(EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = stop.cancelled() => break,
                _ = tick.tick() => {}
            }
            let call = probe.evalsha_with_reload::<i64, _, _>(&client, (), ());
            let answered = tokio::select! {
                _ = stop.cancelled() => break,
                answered = tokio::time::timeout(WAIT, call) => answered,
            };
            match answered {
                Ok(Ok(_)) => self
                    .last_ok_ms
                    .store(delayq::time::now_ms(), Ordering::Relaxed),
                Ok(Err(err)) => tracing::debug!(error = %err, "the health probe failed"),
                Err(_) => tracing::debug!("the health probe got no answer"),
            }
        }
    }
}
