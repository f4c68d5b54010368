//! Flow control against a real redis-server: `Upstash-Flow-Control-Key` with parallelism and
//! rate observed at the receiver, the values shown by GET message, bad values refused with
//! nothing stored.

mod common;
mod slow;

use common::*;
use slow::SlowReceiver;
use std::time::Duration;

async fn start(redis: &TestRedis, slow: &SlowReceiver) -> (Receiver, TestGateway) {
    let receiver = Receiver::start().await;
    let base = slow.base();
    let gw = TestGateway::start(redis, &receiver, move |c| c.allow_destination(base)).await;
    (receiver, gw)
}

fn flow<'a>(key: &'a str, value: &'a str) -> [(&'a str, &'a str); 2] {
    [
        ("Upstash-Flow-Control-Key", key),
        ("Upstash-Flow-Control-Value", value),
    ]
}

#[tokio::test(flavor = "multi_thread")]
async fn parallelism_one_per_key_and_other_keys_go_on() {
    let redis = TestRedis::start();
    let slow = SlowReceiver::start(Duration::from_millis(250)).await;
    let (_receiver, gw) = start(&redis, &slow).await;
    for i in 0..6 {
        let (status, answer) = gw
            .publish(
                &format!("{}keya/{i}", slow.base()),
                &flow("tenant-a", "parallelism=1"),
                b"a".to_vec(),
            )
            .await;
        assert_eq!(status, 201, "{answer}");
    }
    for i in 0..2 {
        gw.publish(
            &format!("{}keyb/{i}", slow.base()),
            &flow("tenant-b", "parallelism=1"),
            b"b".to_vec(),
        )
        .await;
    }
    let a = slow.wait_for("keya", 6).await;
    let b = slow.wait_for("keyb", 2).await;
    assert_eq!(slow.peak("keya"), 1);
    assert_eq!(slow.peak("keyb"), 1);
    // Key B is not held behind key A's six.
    let a_done = a.iter().map(|c| c.end_ms).max().unwrap();
    assert!(b[0].start_ms < a_done, "{b:?} after {a_done}");
    gw.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn rate_per_period_is_kept_per_key() {
    let redis = TestRedis::start();
    let slow = SlowReceiver::start(Duration::from_millis(1)).await;
    let (_receiver, gw) = start(&redis, &slow).await;
    for i in 0..8 {
        gw.publish(
            &format!("{}rate/{i}", slow.base()),
            &flow("rated", "rate=2, period=1s"),
            b"r".to_vec(),
        )
        .await;
    }
    let mut calls = slow.wait_for("rate", 8).await;
    calls.sort_by_key(|c| c.start_ms);
    // Two per second, spread: eight starts span at least three seconds, and no second holds
    // more than three (the rate's N + 1 bound, with some slack for the way to the receiver).
    let span = calls[7].start_ms - calls[0].start_ms;
    assert!(span >= 3_000, "span {span} ms: {calls:?}");
    for four in calls.windows(4) {
        let within = four[3].start_ms - four[0].start_ms;
        assert!(within >= 900, "4 starts within {within} ms: {four:?}");
    }
    gw.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn values_are_shown_and_bad_ones_refused() {
    let redis = TestRedis::start();
    let slow = SlowReceiver::start(Duration::from_millis(1)).await;
    let (_receiver, gw) = start(&redis, &slow).await;
    let ok = format!("{}fcbad/x", slow.base());
    for value in [
        "",
        "parallelism=0",
        "rate=x",
        "period=1s",
        "parallelism=1, parallelism=2",
        "rate=1, period=8d",
        "burst=3",
    ] {
        let (status, body) = gw.publish(&ok, &flow("k", value), b"x".to_vec()).await;
        assert_eq!(status, 400, "{value:?}: {body}");
        assert!(body["error"].as_str().is_some());
    }
    let (status, _) = gw
        .publish(&ok, &[("Upstash-Flow-Control-Key", "k")], b"x".to_vec())
        .await;
    assert_eq!(status, 400);
    let keys = std::process::Command::new("redis-cli")
        .args(["-p", &redis.port.to_string(), "--raw", "keys", "*"])
        .output()
        .unwrap();
    let keys = String::from_utf8(keys.stdout).unwrap();
    let stored: Vec<&str> = keys
        .lines()
        .filter(|k| k.contains("gateway_messages") || k.contains(":fc:") || k.contains("lanes"))
        .collect();
    assert!(stored.is_empty(), "{stored:?}");
    let (status, answer) = gw
        .publish(
            &format!("{}fcshown/x", slow.base()),
            &[
                ("Upstash-Flow-Control-Key", "shown"),
                (
                    "Upstash-Flow-Control-Value",
                    "parallelism=3, rate=5, period=1m",
                ),
                ("Upstash-Delay", "30s"),
            ],
            b"x".to_vec(),
        )
        .await;
    assert_eq!(status, 201);
    let id = answer["messageId"].as_str().unwrap();
    let (_, message) = gw.call("GET", &format!("/v2/messages/{id}")).await;
    assert_eq!(message["flowControlKey"], "shown");
    assert_eq!(message["parallelism"], 3);
    assert_eq!(message["rate"], 5);
    assert_eq!(message["period"], 60);
    // Cancelled from its lane.
    assert_eq!(
        gw.call("DELETE", &format!("/v2/messages/{id}")).await.0,
        200
    );
    let lane = gw.gateway.queue().name().to_owned() + ":fc:p3-r5-60000";
    let stats = std::process::Command::new("redis-cli")
        .args(["-p", &redis.port.to_string(), "--raw", "zcard"])
        .arg(format!("redisson_delay_queue_timeout:{{{lane}}}"))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8(stats.stdout).unwrap().trim(), "0");
    assert!(slow.calls("fcbad").is_empty());
    gw.shutdown().await;
}
