//! Limits across processes: stored per queue, enforced by every worker (several workers in
//! one test process stand for several processes: they share nothing but Redis).

mod config;

use crate::common::{unique_name, TestRedis, PATIENCE};
use delayq::codec::StringCodec;
use delayq::DelayedQueue;
use std::time::{Duration, Instant};

/// A redis-server, a client on it and a fresh queue named after `prefix`.
async fn setup(prefix: &str) -> (TestRedis, fred::clients::Client, DelayedQueue<StringCodec>) {
    let redis = TestRedis::start();
    let client = delayq::connect(&redis.url()).await.unwrap();
    let queue = DelayedQueue::builder(client.clone(), unique_name(prefix), StringCodec)
        .build()
        .await
        .unwrap();
    (redis, client, queue)
}

/// Waits (up to `PATIENCE`) until `done` holds.
#[allow(dead_code)]
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
