//! The workers of the lanes (see `lanes.rs`): a task reads the registry every
//! [`LOOK_EVERY`] and keeps one delivery worker per lane that is not paused, starting one for
//! a lane made meanwhile (by this process or another), stopping the one of a lane paused or
//! removed, and restarting one whose queue's parallelism changed.

use crate::lanes::{flow_key, Lane};
use crate::Shared;
use delayq::{CancellationToken, RetryPolicy, WorkerHandle};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// How often the registry is read.
const LOOK_EVERY: Duration = Duration::from_millis(250);

/// Serves the lanes until `stop`, then stops every lane worker it started.
pub(crate) async fn supervise(shared: Arc<Shared>, policy: RetryPolicy, stop: CancellationToken) {
    let mut running: HashMap<String, (Lane, WorkerHandle)> = HashMap::new();
    loop {
        match shared.lanes.all().await {
            Ok(lanes) => {
                // Stopped: lanes gone, paused, or changed (started again below).
                let stale: Vec<String> = running
                    .iter()
                    .filter(|(name, (lane, _))| {
                        lanes
                            .get(*name)
                            .is_none_or(|now| now.paused || now.parallelism != lane.parallelism)
                    })
                    .map(|(name, _)| name.clone())
                    .collect();
                // Stopped on tasks of their own: attempts under way finish (a queue's message
                // between retries, within the worker's grace) without holding up the others;
                // the queue's limits in Redis still count their slots.
                for name in stale {
                    if let Some((_, worker)) = running.remove(&name) {
                        tokio::spawn(async move { stop_worker(&name, worker).await });
                    }
                }
                for (name, lane) in lanes {
                    if lane.paused || running.contains_key(&name) {
                        continue;
                    }
                    match start(&shared, &name, &lane, policy.clone()).await {
                        Ok(worker) => {
                            tracing::debug!(lane = %name, "gateway: serving a lane");
                            running.insert(name, (lane, worker));
                        }
                        Err(err) => {
                            tracing::warn!(lane = %name, error = %err, "gateway: cannot serve a lane")
                        }
                    }
                }
            }
            Err(err) => tracing::warn!(error = %err, "gateway: cannot read the lanes"),
        }
        tokio::select! {
            () = stop.cancelled() => break,
            () = tokio::time::sleep(LOOK_EVERY) => {}
        }
    }
    for (name, (_, worker)) in running {
        stop_worker(&name, worker).await;
    }
}

async fn stop_worker(name: &str, worker: WorkerHandle) {
    tracing::debug!(lane = %name, "gateway: stopping a lane's worker");
    if let Err(err) = worker.shutdown().await {
        tracing::warn!(lane = %name, error = %err, "gateway: a lane worker stopped with an error");
    }
}

async fn start(
    shared: &Arc<Shared>,
    name: &str,
    lane: &Lane,
    policy: RetryPolicy,
) -> Result<WorkerHandle, Box<dyn std::error::Error + Send + Sync>> {
    let queue = shared.lanes.queue(name).await?;
    let concurrency = match lane.queue {
        Some(_) => lane.parallelism.unwrap_or(1).max(1) as usize,
        None => shared.config.concurrency,
    };
    let handler_shared = shared.clone();
    let mut worker = queue
        .worker(concurrency, move |job| {
            crate::deliver::deliver(handler_shared.clone(), job)
        })
        .retry(policy);
    if lane.queue.is_none() {
        worker = worker.limit_key(|value: &Vec<u8>| flow_key(value));
    }
    Ok(worker.spawn()?)
}
