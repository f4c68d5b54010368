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
    // Key A's deliveries wait at the receiver until key B's are in: B is seen not to queue
    // behind A however slow the machine (a race of B's publishes against A's six would not).
    slow.close("keya");
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
    slow.wait_running("keya", 1).await;
    slow.wait_for("keyb", 2).await;
    // Key B is not held behind key A: both of B's answered while A's first is still held.
    assert!(slow.calls("keya").is_empty(), "{:?}", slow.calls("keya"));
    assert_eq!(slow.running("keya"), 1);
    slow.open("keya");
    slow.wait_for("keya", 6).await;
    assert_eq!(slow.peak("keya"), 1);
    assert_eq!(slow.peak("keyb"), 1);
    gw.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn rate_per_period_is_kept_per_key() {
    let redis = TestRedis::start();
    let slow = SlowReceiver::start(Duration::from_millis(1)).await;
    let (receiver, gw) = start(&redis, &slow).await;
    // All eight due at one instant, so that the limit alone spreads their starts.
    let due_secs = now_ms() / 1000 + 2;
    let not_before = due_secs.to_string();
    for i in 0..8 {
        let mut headers = flow("rated", "rate=2, period=1s").to_vec();
        headers.push(("Upstash-Not-Before", &not_before));
        let (status, answer) = gw
            .publish(
                &format!("{}200/rate/{i}", receiver.base()),
                &headers,
                b"r".to_vec(),
            )
            .await;
        assert_eq!(status, 201, "{answer}");
    }
    let mut calls = receiver.wait_for("/200/rate/", 8).await;
    calls.sort_by_key(|c| c.at_ms);
    // Two per second, spread: the limit's GCRA (lua/lib/limit.lua, T = 500 ms) grants a start
    // once its arrival time is reached and moves that time to at least T/2 past the grant, then
    // T further for each next one; the first is granted no sooner than the due time. So start
    // k (from 0) is granted no sooner than kT - T/2 after the due time (2 ms less for rounding
    // to whole milliseconds), and the receiver sees each request after its grant: lower bounds
    // that hold whatever the machine's load (differences of the receiver's times would not: a
    // late first request shortens them).
    let due_ms = due_secs * 1000;
    assert!(
        calls[0].at_ms >= due_ms,
        "{} before {due_ms}",
        calls[0].at_ms
    );
    for (k, call) in calls.iter().enumerate().skip(1) {
        let earliest = due_ms + k as i64 * 500 - 250 - 2;
        assert!(
            call.at_ms >= earliest,
            "start {k} at {} ms, before {earliest}: {:?}",
            call.at_ms,
            calls.iter().map(|c| c.at_ms - due_ms).collect::<Vec<_>>()
        );
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
                // Still pending when read and cancelled below, however slow the machine.
                ("Upstash-Delay", "1h"),
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

/// Polls `GET path` until `done` holds for its answer (60 s at most); the last answer.
async fn wait_answer(
    gw: &TestGateway,
    path: &str,
    done: impl Fn(u16, &serde_json::Value) -> bool,
) -> serde_json::Value {
    let deadline = std::time::Instant::now() + PATIENCE;
    loop {
        let (status, answer) = gw.call("GET", path).await;
        if done(status, &answer) {
            return answer;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{path}: {status} {answer}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn flow_control_key_read_with_its_wait_list() {
    let redis = TestRedis::start();
    let slow = SlowReceiver::start(Duration::from_millis(50)).await;
    let (_receiver, gw) = start(&redis, &slow).await;
    // Unknown before any publish; bad keys and the calls that change a key refused.
    let (status, answer) = gw.call("GET", "/v2/flowControl/tenant-r").await;
    assert_eq!(status, 404, "{answer}");
    assert!(answer["error"].is_string());
    assert_eq!(
        gw.call("GET", "/v2/flowControl").await.1,
        serde_json::json!([])
    );
    let (status, answer) = gw.call("GET", "/v2/flowControl/a%20b").await;
    assert_eq!(status, 400, "{answer}");
    let long = "k".repeat(257);
    assert_eq!(
        gw.call("GET", &format!("/v2/flowControl/{long}")).await.0,
        400
    );
    for action in ["pin", "unpin"] {
        let (status, answer) = gw
            .call("POST", &format!("/v2/flowControl/tenant-r/{action}"))
            .await;
        assert_eq!(status, 405, "{action}: {answer}");
        assert!(answer["error"].is_string(), "{action}: {answer}");
    }

    // One start an hour: the first delivery is held at the receiver, the three others wait.
    slow.close("fcr");
    for i in 0..4 {
        let (status, answer) = gw
            .publish(
                &format!("{}fcr/{i}", slow.base()),
                &flow("tenant-r", "parallelism=1, rate=1, period=1h"),
                b"r".to_vec(),
            )
            .await;
        assert_eq!(status, 201, "{answer}");
    }
    slow.wait_running("fcr", 1).await;
    let info = wait_answer(&gw, "/v2/flowControl/tenant-r", |status, a| {
        status == 200 && a["waitListSize"] == 3
    })
    .await;
    assert_eq!(info["flowControlKey"], "tenant-r");
    assert_eq!(info["parallelismMax"], 1);
    assert_eq!(info["parallelismCount"], 1, "{info}");
    assert_eq!(info["rateMax"], 1);
    assert_eq!(info["rateCount"], 1, "{info}");
    assert_eq!(info["ratePeriod"], 3600);
    assert_eq!(info["isPaused"], false);
    let (status, listed) = gw.call("GET", "/v2/flowControl").await;
    assert_eq!(status, 200);
    let listed = listed.as_array().unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["flowControlKey"], "tenant-r");
    assert_eq!(listed[0]["waitListSize"], 3);

    // The first delivery answered: nothing under way, the three still wait for the rate.
    slow.open("fcr");
    slow.wait_for("fcr", 1).await;
    let info = wait_answer(&gw, "/v2/flowControl/tenant-r", |status, a| {
        status == 200 && a["parallelismCount"] == 0
    })
    .await;
    assert_eq!(info["waitListSize"], 3, "{info}");
    assert_eq!(slow.calls("fcr").len(), 1);
    gw.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn reset_rate_lets_the_key_start_afresh() {
    let redis = TestRedis::start();
    let slow = SlowReceiver::start(Duration::from_millis(1)).await;
    let (_receiver, gw) = start(&redis, &slow).await;
    // Refused with nothing changed: a key nothing is kept for, a bad key, an unknown call.
    let (status, answer) = gw.call("POST", "/v2/flowControl/tenant-z/resetRate").await;
    assert_eq!(status, 404, "{answer}");
    assert!(answer["error"].is_string(), "{answer}");
    let (status, answer) = gw.call("POST", "/v2/flowControl/a%20b/resetRate").await;
    assert_eq!(status, 400, "{answer}");
    let (status, answer) = gw.call("POST", "/v2/flowControl/tenant-z/rewind").await;
    assert_eq!(status, 404, "{answer}");

    // One start an hour: the first is delivered, the two others wait for the rate.
    for i in 0..3 {
        let (status, answer) = gw
            .publish(
                &format!("{}fcreset/{i}", slow.base()),
                &flow("tenant-z", "rate=1, period=1h"),
                b"z".to_vec(),
            )
            .await;
        assert_eq!(status, 201, "{answer}");
    }
    slow.wait_for("fcreset", 1).await;
    wait_answer(&gw, "/v2/flowControl/tenant-z", |status, a| {
        status == 200 && a["waitListSize"] == 2 && a["rateCount"] == 1
    })
    .await;
    // Reset: the count starts afresh, so one more starts now, and the last waits again.
    let (status, answer) = gw.call("POST", "/v2/flowControl/tenant-z/resetRate").await;
    assert_eq!(status, 200, "{answer}");
    slow.wait_for("fcreset", 2).await;
    let info = wait_answer(&gw, "/v2/flowControl/tenant-z", |status, a| {
        status == 200 && a["waitListSize"] == 1
    })
    .await;
    assert_eq!(info["rateCount"], 1, "{info}");
    assert_eq!(slow.calls("fcreset").len(), 2);
    gw.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn paused_key_starts_nothing_in_any_process_until_resumed() {
    let redis = TestRedis::start();
    let slow = SlowReceiver::start(Duration::from_millis(1)).await;
    let (_receiver, gw) = start(&redis, &slow).await;
    // A second process on the same Redis, delivering too: the pause must hold it as well.
    let (_receiver2, other) = start(&redis, &slow).await;
    let (status, answer) = gw.call("POST", "/v2/flowControl/tenant-p/pause").await;
    assert_eq!(status, 404, "{answer}");
    let (status, answer) = gw.call("POST", "/v2/flowControl/a%20b/pause").await;
    assert_eq!(status, 400, "{answer}");

    // One under way (held at the receiver) when the key is paused.
    slow.close("fcp");
    let publish = |i: usize| {
        let url = format!("{}fcp/{i}", slow.base());
        let gw = &gw;
        async move {
            let (status, answer) = gw
                .publish(&url, &flow("tenant-p", "parallelism=2"), b"p".to_vec())
                .await;
            assert_eq!(status, 201, "{answer}");
        }
    };
    publish(0).await;
    slow.wait_running("fcp", 1).await;
    let (status, answer) = other.call("POST", "/v2/flowControl/tenant-p/pause").await;
    assert_eq!(status, 200, "{answer}");
    let info = wait_answer(&gw, "/v2/flowControl/tenant-p", |status, _| status == 200).await;
    assert_eq!(info["isPaused"], true, "{info}");
    for i in 1..4 {
        publish(i).await;
    }
    // Published with values never used before (a new lane): paused all the same.
    let (status, answer) = gw
        .publish(
            &format!("{}fcp/new", slow.base()),
            &flow("tenant-p", "parallelism=3"),
            b"p".to_vec(),
        )
        .await;
    assert_eq!(status, 201, "{answer}");
    // The one under way finishes; the four others are held back, none under way.
    slow.open("fcp");
    slow.wait_for("fcp", 1).await;
    let info = wait_answer(&gw, "/v2/flowControl/tenant-p", |status, a| {
        status == 200 && a["waitListSize"] == 4 && a["parallelismCount"] == 0
    })
    .await;
    assert_eq!(info["isPaused"], true, "{info}");
    assert_eq!(slow.calls("fcp").len(), 1);

    // Resumed through the other process: all four delivered.
    let (status, answer) = other.call("POST", "/v2/flowControl/tenant-p/resume").await;
    assert_eq!(status, 200, "{answer}");
    slow.wait_for("fcp", 5).await;
    // Nothing of the key is left (404), or what is kept is no longer paused.
    let (status, info) = gw.call("GET", "/v2/flowControl/tenant-p").await;
    assert!(
        status == 404 || info["isPaused"] == false,
        "{status} {info}"
    );
    other.shutdown().await;
    gw.shutdown().await;
}
