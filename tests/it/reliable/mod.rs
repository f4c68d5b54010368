//! Beyond Redisson: the reliable consumer (acknowledged takes, visibility, dead letters) and
//! workers over one or several queues.

mod consumer;
mod worker;
mod worker_pause;
mod worker_priority;
mod worker_queues;

use crate::common::PATIENCE;
use std::time::{Duration, Instant};

/// Waits (up to `PATIENCE`) until `done` holds; the workers' tests watch what their handlers
/// record with it.
async fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while Instant::now() < deadline {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("timed out waiting for {what}");
}
