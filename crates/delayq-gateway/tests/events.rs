//! Events (`GET /v2/events`, `GET /v2/logs`) against a real redis-server and the recording
//! receiver: the states of delivered, failed and cancelled messages, newest first, filters, the
//! cursor, and the retention by count and by age.

mod common;

use common::*;
use serde_json::Value;
use std::time::{Duration, Instant};

/// The states of `id`'s events, newest first.
async fn states(gw: &TestGateway, id: &str) -> Vec<String> {
    let (status, answer) = gw.call("GET", &format!("/v2/events?messageId={id}")).await;
    assert_eq!(status, 200, "{answer}");
    answer["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["state"].as_str().unwrap().to_owned())
        .collect()
}

/// Waits until `id`'s newest event is `state`; its states.
async fn wait_state(gw: &TestGateway, id: &str, state: &str) -> Vec<String> {
    wait_state_of_run(gw, id, state, 1).await
}

/// Waits until `id` has been CREATED `runs` times (published, then retried from the DLQ) and
/// its newest event is `state`: that of its last run, never one its earlier runs left (a
/// retried dead letter's newest event is FAILED before its retry too).
async fn wait_state_of_run(gw: &TestGateway, id: &str, state: &str, runs: usize) -> Vec<String> {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let got = states(gw, id).await;
        let created = got.iter().filter(|s| *s == "CREATED").count();
        if created >= runs && got.first().map(String::as_str) == Some(state) {
            return got;
        }
        assert!(Instant::now() < deadline, "{id}: {got:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn ids_of(answer: &Value, name: &str) -> Vec<String> {
    answer[name]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            format!(
                "{}/{}",
                e["messageId"].as_str().unwrap(),
                e["state"].as_str().unwrap()
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn states_filters_and_cursor() {
    let redis = TestRedis::start();
    let receiver = Receiver::start().await;
    let gw = TestGateway::start(&redis, &receiver, |c| c).await;
    let ok_url = format!("{}200/ev-ok", receiver.base());
    let (_, a) = gw
        .publish(&ok_url, &[("Upstash-Label", "l1")], b"a".to_vec())
        .await;
    let a = a["messageId"].as_str().unwrap().to_owned();
    assert_eq!(
        wait_state(&gw, &a, "DELIVERED").await,
        ["DELIVERED", "ACTIVE", "CREATED"]
    );
    // Published once a is delivered: b's FAILED is the newer of the two (the listing by state
    // below), however slow the machine (b fails after a retry, a succeeds at once, but under
    // load a's attempt may take longer than both of b's).
    let (_, b) = gw
        .publish(
            &format!("{}500/ev-fail", receiver.base()),
            &[("Upstash-Retries", "1")],
            b"b".to_vec(),
        )
        .await;
    let b = b["messageId"].as_str().unwrap().to_owned();
    let (_, c) = gw
        .publish(
            &format!("{}200/ev-cancel", receiver.base()),
            &[("Upstash-Delay", "1h")],
            b"c".to_vec(),
        )
        .await;
    let c = c["messageId"].as_str().unwrap().to_owned();
    assert_eq!(gw.call("DELETE", &format!("/v2/messages/{c}")).await.0, 200);

    assert_eq!(
        wait_state(&gw, &b, "FAILED").await,
        ["FAILED", "ERROR", "ACTIVE", "RETRY", "ERROR", "ACTIVE", "CREATED"]
    );
    assert_eq!(states(&gw, &c).await, ["CANCELED", "CREATED"]);

    // /v2/logs answers the same under "logs"; the error carries the answer.
    let (status, logs) = gw.call("GET", &format!("/v2/logs?messageId={b}")).await;
    assert_eq!(status, 200, "{logs}");
    let logs = logs["logs"].as_array().unwrap();
    assert_eq!(logs[1]["state"], "ERROR");
    assert_eq!(logs[1]["responseStatus"], 500);
    assert_eq!(logs[1]["responseBody"], "answer");
    assert_eq!(logs[0]["url"], format!("{}500/ev-fail", receiver.base()));
    assert_eq!(logs[0]["maxRetries"], 1);
    let times: Vec<i64> = logs.iter().map(|e| e["time"].as_i64().unwrap()).collect();
    assert!(
        times.windows(2).all(|w| w[0] >= w[1]),
        "newest first: {times:?}"
    );
    let (_, events) = gw.call("GET", &format!("/v2/events?messageId={a}")).await;
    assert_eq!(events["events"][0]["responseStatus"], 200);
    assert_eq!(events["events"][0]["labels"], serde_json::json!(["l1"]));

    // Filters: state (several), url, label, several ids, dates.
    let (_, got) = gw.call("GET", "/v2/events?state=CANCELED").await;
    assert_eq!(ids_of(&got, "events"), [format!("{c}/CANCELED")]);
    let (_, got) = gw.call("GET", "/v2/events?state=DELIVERED,FAILED").await;
    assert_eq!(
        ids_of(&got, "events"),
        [format!("{b}/FAILED"), format!("{a}/DELIVERED")]
    );
    let (_, got) = gw
        .call("GET", &format!("/v2/events?url={ok_url}&state=CREATED"))
        .await;
    assert_eq!(ids_of(&got, "events"), [format!("{a}/CREATED")]);
    let (_, got) = gw.call("GET", "/v2/events?label=l1&state=ACTIVE").await;
    assert_eq!(ids_of(&got, "events"), [format!("{a}/ACTIVE")]);
    let (_, got) = gw
        .call(
            "GET",
            &format!("/v2/events?messageIds={a}&messageIds={c}&state=CREATED"),
        )
        .await;
    assert_eq!(got["events"].as_array().unwrap().len(), 2, "{got}");
    let (_, got) = gw
        .call(
            "GET",
            &format!("/v2/events?toDate={}", now_ms() - 3_600_000),
        )
        .await;
    assert_eq!(got["events"], serde_json::json!([]));
    assert!(got.get("cursor").is_none());

    // Pages of 2 with the cursor: all 12 events, in order, each once.
    let (_, all) = gw.call("GET", "/v2/events").await;
    let all = ids_of(&all, "events");
    assert_eq!(all.len(), 12, "{all:?}");
    let mut paged = Vec::new();
    let mut cursor = String::new();
    loop {
        let (status, page) = gw
            .call("GET", &format!("/v2/events?count=2&cursor={cursor}"))
            .await;
        assert_eq!(status, 200, "{page}");
        let ids = ids_of(&page, "events");
        assert!(ids.len() <= 2);
        paged.extend(ids);
        match page["cursor"].as_str() {
            Some(next) => cursor = next.to_owned(),
            None => break,
        }
        assert!(paged.len() <= all.len(), "the cursor does not end");
    }
    assert_eq!(paged, all);

    // Retried from the DLQ: CREATED again, then its attempts.
    gw.wait_dead(&b).await;
    assert_eq!(gw.call("POST", &format!("/v2/dlq/retry/{b}")).await.0, 201);
    let again = wait_state_of_run(&gw, &b, "FAILED", 2).await;
    assert_eq!(
        again[..7],
        ["FAILED", "ERROR", "ACTIVE", "RETRY", "ERROR", "ACTIVE", "CREATED"].map(String::from),
        "{again:?}"
    );

    for bad in [
        "state=NOPE",
        "count=0",
        "count=5000",
        "cursor=zzz",
        "callerIp=1.2.3.4",
        "fromDate=soon",
    ] {
        let (status, answer) = gw.call("GET", &format!("/v2/events?{bad}")).await;
        assert_eq!(status, 400, "{bad}: {answer}");
        assert!(answer["error"].is_string());
    }
    gw.shutdown().await;
}

/// A dead letter retried from the DLQ has its CREATED event written before it is back in the
/// queue, as a publish writes it before the entry: a worker taking it at once writes its
/// attempt's events after it. (Written after the replay, it came after the first attempt's
/// events now and then on a loaded machine: `[FAILED, ERROR, ACTIVE, CREATED, RETRY, ...]`,
/// which reads as a retry given up after one attempt.) Deterministic: the retry goes through
/// a proxy that holds every command after the one carrying that event, the only CREATED this
/// gateway writes, so the message must still be a dead letter then.
#[tokio::test(flavor = "multi_thread")]
async fn a_dead_letter_retried_is_created_again_before_it_is_due() {
    let redis = TestRedis::start();
    let receiver = Receiver::start().await;
    let first = TestGateway::start(&redis, &receiver, |c| c).await;
    // Fails once (a dead letter: no retries), then is delivered: never a dead letter again.
    let url = format!("{}500-200/ev-again", receiver.base());
    let (_, answer) = first
        .publish(&url, &[("Upstash-Retries", "0")], b"b".to_vec())
        .await;
    let id = answer["messageId"].as_str().unwrap().to_owned();
    first.wait_dead(&id).await;
    first.shutdown().await;

    let proxy = FreezingProxy::start(&redis, br#""state":"CREATED""#).await;
    let frozen = TestGateway::start_at(&proxy.url(), &receiver, |c| c).await;
    let retry = {
        let (base, id) = (frozen.base.clone(), id.clone());
        tokio::spawn(async move {
            let _ = reqwest::Client::new()
                .post(format!("{base}/v2/dlq/retry/{id}"))
                .bearer_auth(TOKEN)
                .send()
                .await;
        })
    };
    let deadline = Instant::now() + PATIENCE;
    while !proxy.is_frozen() {
        assert!(
            Instant::now() < deadline,
            "the retry wrote no CREATED event"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let client = delayq::connect(&redis.url()).await.unwrap();
    let dead = delayq::QueueKeys::new("delayq-gateway").dead().to_owned();
    let letters: Vec<delayq::fred::prelude::Value> =
        delayq::fred::interfaces::ListInterface::lrange(&client, &dead, 0, -1)
            .await
            .unwrap();
    let held = letters
        .iter()
        .filter_map(|l| l.as_bytes())
        .any(|letter| letter.windows(id.len()).any(|w| w == id.as_bytes()));
    assert!(
        held,
        "the CREATED event was written after the message was back in the queue"
    );
    proxy.cut();
    retry.abort();
    drop(frozen);

    // Retried for good once the frozen retry's claim of the letter has lapsed (404 until
    // then, nothing written): its new attempt's events after the CREATED (the frozen retry's
    // CREATED stays, as a publish cut off before its entry leaves its own).
    let gw = TestGateway::start(&redis, &receiver, |c| c).await;
    let deadline = Instant::now() + PATIENCE;
    loop {
        match gw.call("POST", &format!("/v2/dlq/retry/{id}")).await {
            (201, _) => break,
            (404, _) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            other => panic!("retry answered {other:?}"),
        }
    }
    assert_eq!(
        wait_state_of_run(&gw, &id, "DELIVERED", 3).await,
        [
            "DELIVERED",
            "ACTIVE",
            "CREATED",
            "CREATED",
            "FAILED",
            "ERROR",
            "ACTIVE",
            "CREATED"
        ]
    );
    gw.shutdown().await;
}

/// Retries of one dead letter at once: one replays it, the others answer 404, and only the
/// one that replayed it leaves a CREATED event (one that found the letter gone between its
/// read and its replay takes its event back).
#[tokio::test(flavor = "multi_thread")]
async fn retries_of_one_dead_letter_at_once_leave_one_created() {
    let redis = TestRedis::start();
    let receiver = Receiver::start().await;
    let gw = std::sync::Arc::new(TestGateway::start(&redis, &receiver, |c| c).await);
    let url = format!("{}500-200/ev-at-once", receiver.base());
    let (_, answer) = gw
        .publish(&url, &[("Upstash-Retries", "0")], b"b".to_vec())
        .await;
    let id = answer["messageId"].as_str().unwrap().to_owned();
    gw.wait_dead(&id).await;
    let mut retries = Vec::new();
    for _ in 0..10 {
        let (gw, id) = (gw.clone(), id.clone());
        retries.push(tokio::spawn(async move {
            gw.call("POST", &format!("/v2/dlq/retry/{id}")).await.0
        }));
    }
    let mut statuses = Vec::new();
    for retry in retries {
        statuses.push(retry.await.unwrap());
    }
    statuses.sort_unstable();
    assert_eq!(statuses, [201, 404, 404, 404, 404, 404, 404, 404, 404, 404]);
    receiver.wait_for("/500-200/ev-at-once", 2).await;
    assert_eq!(
        wait_state_of_run(&gw, &id, "DELIVERED", 2).await,
        [
            "DELIVERED",
            "ACTIVE",
            "CREATED",
            "FAILED",
            "ERROR",
            "ACTIVE",
            "CREATED"
        ]
    );
    std::sync::Arc::into_inner(gw).unwrap().shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn retention_by_count_and_age() {
    let redis = TestRedis::start();
    let receiver = Receiver::start().await;
    let url = format!("{}200/kept", receiver.base());
    let by_count = TestGateway::start(&redis, &receiver, |c| {
        c.with_queue("count")
            .with_events_kept(5, Duration::from_secs(3600))
    })
    .await;
    let mut ids = Vec::new();
    for _ in 0..10 {
        let (_, answer) = by_count
            .publish(&url, &[("Upstash-Delay", "1h")], vec![])
            .await;
        ids.push(answer["messageId"].as_str().unwrap().to_owned());
    }
    let (_, got) = by_count.call("GET", "/v2/events").await;
    let kept: Vec<&str> = got["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["messageId"].as_str().unwrap())
        .collect();
    let newest: Vec<&str> = ids.iter().rev().take(5).map(String::as_str).collect();
    assert_eq!(kept, newest);
    by_count.shutdown().await;

    // By age: the same events, at least 1.5 s old when the next one is written, are kept by a
    // gateway keeping an hour of them and trimmed by one keeping a second. (Three written within
    // the second and all still there would hold only on a machine fast enough: the age is
    // measured from each event's write, and the trim comes with the next write.)
    let by_age = TestGateway::start(&redis, &receiver, |c| {
        c.with_queue("age")
            .with_events_kept(1000, Duration::from_secs(1))
    })
    .await;
    let by_hour = TestGateway::start(&redis, &receiver, |c| {
        c.with_queue("hour")
            .with_events_kept(1000, Duration::from_secs(3600))
    })
    .await;
    for gw in [&by_age, &by_hour] {
        for _ in 0..3 {
            gw.publish(&url, &[("Upstash-Delay", "1h")], vec![]).await;
        }
    }
    // At least this long: a sleep that the machine's load can only make longer.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let (_, last) = by_age
        .publish(&url, &[("Upstash-Delay", "1h")], vec![])
        .await;
    let (_, got) = by_age.call("GET", "/v2/events").await;
    assert_eq!(
        ids_of(&got, "events"),
        [format!("{}/CREATED", last["messageId"].as_str().unwrap())]
    );
    by_hour
        .publish(&url, &[("Upstash-Delay", "1h")], vec![])
        .await;
    let (_, got) = by_hour.call("GET", "/v2/events").await;
    assert_eq!(got["events"].as_array().unwrap().len(), 4, "{got}");
    by_age.shutdown().await;
    by_hour.shutdown().await;

    // 0: none written.
    let off = TestGateway::start(&redis, &receiver, |c| {
        c.with_queue("off")
            .with_events_kept(0, Duration::from_secs(60))
    })
    .await;
    let (status, _) = off.publish(&url, &[("Upstash-Delay", "1h")], vec![]).await;
    assert_eq!(status, 201);
    let (_, got) = off.call("GET", "/v2/events").await;
    assert_eq!(got["events"], serde_json::json!([]));
    off.shutdown().await;
}
