//! What the gateway costs Redis, counted in `INFO commandstats` of a real redis-server (counts,
//! never wall time): its scripts run as EVALSHA (Redis compiles a script sent with EVAL on
//! every call), and a script cache flushed under a running gateway is loaded again.

mod common;

use common::*;
use std::time::{Duration, Instant};

/// Waits until the events of `id` include `state`.
async fn wait_event(gw: &TestGateway, id: &str, state: &str) {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let (status, answer) = gw.call("GET", &format!("/v2/events?messageId={id}")).await;
        assert_eq!(status, 200, "{answer}");
        let found = answer["events"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["state"] == state);
        if found {
            return;
        }
        assert!(Instant::now() < deadline, "{id}: no {state} in {answer}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn scripts_run_by_sha_and_reload_after_a_flush() {
    let redis = TestRedis::start();
    let receiver = Receiver::start().await;
    let gw = TestGateway::start(&redis, &receiver, |c| {
        c.with_keep_delivered(Duration::from_secs(60))
    })
    .await;
    let url = format!("{}200/cost", receiver.base());
    // Published (one with a deduplication id, twice), delivered, kept, with their events.
    let mut ids = Vec::new();
    for i in 0..5 {
        let dedup = format!("cost-{}", i % 4);
        let (status, answer) = gw
            .publish(&url, &[("Upstash-Deduplication-Id", &dedup)], b"x".to_vec())
            .await;
        assert!(status == 201 || status == 202, "{answer}");
        if status == 201 {
            ids.push(answer["messageId"].as_str().unwrap().to_owned());
        }
    }
    assert_eq!(ids.len(), 4);
    receiver.wait_for("/200/cost", 4).await;
    for id in &ids {
        wait_event(&gw, id, "DELIVERED").await;
    }
    // Cancelled while pending.
    let (status, answer) = gw
        .publish(&url, &[("Upstash-Delay", "1h")], b"later".to_vec())
        .await;
    assert_eq!(status, 201, "{answer}");
    let later = answer["messageId"].as_str().unwrap().to_owned();
    let (status, answer) = gw.call("DELETE", &format!("/v2/messages/{later}")).await;
    assert_eq!(status, 200, "{answer}");
    wait_event(&gw, &later, "CANCELED").await;
    let (status, answer) = gw.call("POST", "/v2/keys/rotate").await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(redis.command_calls("eval"), 0, "scripts sent with EVAL");

    // The script cache flushed: the next calls load their scripts again.
    assert_eq!(redis.cli(&["SCRIPT", "FLUSH"]).trim(), "OK");
    let (status, answer) = gw.publish(&url, &[], b"after".to_vec()).await;
    assert_eq!(status, 201, "{answer}");
    let after = answer["messageId"].as_str().unwrap().to_owned();
    receiver.wait_for("/200/cost", 5).await;
    wait_event(&gw, &after, "DELIVERED").await;
    assert_eq!(redis.command_calls("eval"), 0, "scripts sent with EVAL");
    gw.shutdown().await;
}
