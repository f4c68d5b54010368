//! Schedules against a real redis-server and the recording receiver: each occurrence a signed
//! message of its own, get/list/pause/resume/upsert/delete, time zones, two processes firing
//! each occurrence once, and bad input refused with nothing stored.

mod common;

use common::*;
use serde_json::Value;
use std::time::{Duration, Instant};

/// `method` to `path` with the token and `headers`: status and JSON (null for an empty body).
async fn send(
    gw: &TestGateway,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, Value) {
    let mut request = reqwest::Client::new()
        .request(method.parse().unwrap(), format!("{}{path}", gw.base))
        .bearer_auth(TOKEN)
        .body(body.to_vec());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let bytes = response.bytes().await.unwrap();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn occurrences_are_messages_and_the_schedule_is_managed() {
    let redis = TestRedis::start();
    let receiver = Receiver::start().await;
    let gw = TestGateway::start(&redis, &receiver, |c| {
        c.with_keep_delivered(Duration::from_secs(600))
    })
    .await;
    let url = format!("{}200/sched?x=1", receiver.base());
    let created = now_ms();
    let (status, answer) = send(
        &gw,
        "POST",
        &format!("/v2/schedules/{url}"),
        &[
            ("Upstash-Cron", "*/2 * * * * *"),
            ("Upstash-Schedule-Id", "report-1"),
            ("Upstash-Method", "PUT"),
            ("Upstash-Delay", "1s"),
            ("Upstash-Retries", "1"),
            ("Upstash-Forward-X-A", "a"),
            ("Content-Type", "text/plain"),
        ],
        b"tick",
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["scheduleId"], "report-1");

    let got = receiver.wait_for("/200/sched", 2).await;
    let ids: Vec<&str> = got.iter().map(|r| r.header("upstash-message-id")).collect();
    assert_ne!(ids[0], ids[1], "each occurrence is a message of its own");
    for r in &got[..2] {
        assert_eq!(r.method, "PUT");
        assert_eq!(r.body, b"tick");
        assert_eq!(r.header("x-a"), "a");
        assert_eq!(r.header("upstash-schedule-id"), "report-1");
        assert_eq!(r.header("upstash-retried"), "0");
        verify(r.header("upstash-signature"), CURRENT_KEY, &url, b"tick");
        assert!(r.at_ms >= created + 1000, "the delay applies");
    }
    let (status, message) = gw.call("GET", &format!("/v2/messages/{}", ids[0])).await;
    assert_eq!(status, 200, "{message}");
    assert_eq!(message["scheduleId"], "report-1");
    assert_eq!(message["maxRetries"], 1);
    let created_at = message["createdAt"].as_i64().unwrap();
    assert_eq!(message["notBefore"].as_i64().unwrap(), created_at + 1000);

    let (status, schedule) = gw.call("GET", "/v2/schedules/report-1").await;
    assert_eq!(status, 200, "{schedule}");
    assert_eq!(schedule["scheduleId"], "report-1");
    assert_eq!(schedule["cron"], "*/2 * * * * *");
    assert_eq!(schedule["destination"], url);
    assert_eq!(schedule["method"], "PUT");
    assert_eq!(schedule["body"], "tick");
    assert_eq!(schedule["retries"], 1);
    assert_eq!(schedule["delay"], 1);
    assert_eq!(schedule["isPaused"], false);
    assert_eq!(schedule["header"]["x-a"], serde_json::json!(["a"]));
    assert!(schedule["createdAt"].as_i64().unwrap() >= created);
    assert!(schedule["lastScheduleTime"].as_i64().unwrap() >= created);
    assert!(schedule["nextScheduleTime"].as_i64().unwrap() > created);
    let (_, list) = gw.call("GET", "/v2/schedules").await;
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");
    assert_eq!(list[0]["scheduleId"], "report-1");

    // Paused (PATCH, as the SDKs send it): nothing more arrives once the occurrences offered
    // ahead (up to 2 s) and delayed (1 s) are in. Those are waited for as the queue's state
    // (nothing left in it to deliver), however slow the machine.
    let (status, _) = send(&gw, "PATCH", "/v2/schedules/report-1/pause", &[], b"").await;
    assert_eq!(status, 200);
    assert_eq!(
        gw.call("GET", "/v2/schedules/report-1").await.1["isPaused"],
        true
    );
    wait_idle(&redis).await;
    let paused_count = receiver.to("/200/sched").len();
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(
        receiver.to("/200/sched").len(),
        paused_count,
        "fired while paused"
    );
    // Nor offered one due later.
    assert_eq!(pending_entries(&redis).await, 0, "fired while paused");
    // Resumed (POST, as QStash's docs say).
    let (status, _) = send(&gw, "POST", "/v2/schedules/report-1/resume", &[], b"").await;
    assert_eq!(status, 200);
    receiver.wait_for("/200/sched", paused_count + 1).await;

    // Replaced by id: the new definition only.
    let (status, _) = send(
        &gw,
        "POST",
        &format!("/v2/schedules/{url}"),
        &[
            ("Upstash-Cron", "*/2 * * * * *"),
            ("Upstash-Schedule-Id", "report-1"),
        ],
        b"new",
    )
    .await;
    assert_eq!(status, 200);
    let (_, schedule) = gw.call("GET", "/v2/schedules/report-1").await;
    assert_eq!(schedule["body"], "new");
    assert_eq!(schedule["method"], "POST");
    assert_eq!(schedule["retries"], 3);
    assert!(schedule.get("delay").is_none(), "{schedule}");
    let deadline = Instant::now() + PATIENCE;
    while !receiver.to("/200/sched").iter().any(|r| r.body == b"new") {
        assert!(
            Instant::now() < deadline,
            "no occurrence of the new definition"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let (status, _) = send(&gw, "DELETE", "/v2/schedules/report-1", &[], b"").await;
    assert_eq!(status, 200);
    for (method, path) in [
        ("GET", "/v2/schedules/report-1"),
        ("DELETE", "/v2/schedules/report-1"),
        ("PATCH", "/v2/schedules/report-1/pause"),
        ("POST", "/v2/schedules/report-1/resume"),
    ] {
        let (status, answer) = send(&gw, method, path, &[], b"").await;
        assert_eq!(status, 404, "{method} {path}: {answer}");
        assert!(answer["error"].is_string());
    }
    assert_eq!(
        gw.call("GET", "/v2/schedules").await.1,
        serde_json::json!([])
    );
    gw.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn zones_and_bad_input() {
    let redis = TestRedis::start();
    let receiver = Receiver::start().await;
    let gw = TestGateway::start(&redis, &receiver, |c| c).await;
    let url = format!("{}200/zone", receiver.base());
    let path = format!("/v2/schedules/{url}");
    // 09:00 in Tokyo (no daylight saving) is 00:00 UTC.
    let (status, answer) = send(
        &gw,
        "POST",
        &path,
        &[("Upstash-Cron", "CRON_TZ=Asia/Tokyo 0 9 * * *")],
        b"",
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    let id = answer["scheduleId"].as_str().unwrap().to_owned();
    assert!(id.starts_with("scd_"), "{id}");
    let (_, schedule) = gw.call("GET", &format!("/v2/schedules/{id}")).await;
    assert_eq!(schedule["cron"], "CRON_TZ=Asia/Tokyo 0 9 * * *");
    let next = schedule["nextScheduleTime"].as_i64().unwrap();
    let day = 86_400_000;
    assert_eq!(next % day, 0, "{schedule}");
    assert!(next > now_ms() && next <= now_ms() + day);
    assert!(schedule.get("body").is_some());

    // Each refused with 400.
    let bad: &[&[(&str, &str)]] = &[
        &[],
        &[("Upstash-Cron", "61 * * * *")],
        &[("Upstash-Cron", "* * *")],
        &[("Upstash-Cron", "every minute")],
        &[("Upstash-Cron", "CRON_TZ=Mars/Olympus 0 * * * *")],
        &[
            ("Upstash-Cron", "* * * * *"),
            ("Upstash-Schedule-Id", "a{b}"),
        ],
        &[
            ("Upstash-Cron", "* * * * *"),
            ("Upstash-Deduplication-Id", "d"),
        ],
        &[("Upstash-Cron", "* * * * *"), ("Upstash-Retries", "9999")],
        &[("Upstash-Cron", "* * * * *"), ("Upstash-Delay", "soon")],
        &[("Upstash-Cron", "* * * * *"), ("Upstash-Not-Before", "1")],
        &[
            ("Upstash-Cron", "* * * * *"),
            ("Upstash-Flow-Control-Key", "k"),
            ("Upstash-Flow-Control-Value", "parallelism=1"),
        ],
    ];
    for headers in bad {
        let (status, answer) = send(&gw, "POST", &path, headers, b"x").await;
        assert_eq!(status, 400, "{headers:?}: {answer}");
        assert!(answer["error"].is_string(), "{answer}");
    }
    let (status, answer) = send(
        &gw,
        "POST",
        "/v2/schedules/http://169.254.169.254/latest",
        &[("Upstash-Cron", "* * * * *")],
        b"",
    )
    .await;
    assert_eq!(status, 403, "{answer}");
    // A callback outside the allow-list: refused like the destination.
    let (status, answer) = send(
        &gw,
        "POST",
        &path,
        &[
            ("Upstash-Cron", "* * * * *"),
            ("Upstash-Callback", "http://127.0.0.1:9/"),
        ],
        b"x",
    )
    .await;
    assert_eq!(status, 403, "{answer}");
    let (status, _) = send(
        &gw,
        "POST",
        "/v2/schedules/not-a-url",
        &[("Upstash-Cron", "* * * * *")],
        b"",
    )
    .await;
    assert_eq!(status, 400);
    let (status, _) = send(&gw, "PUT", &format!("/v2/schedules/{id}"), &[], b"").await;
    assert_eq!(status, 405);
    // Nothing stored but the first.
    let (_, list) = gw.call("GET", "/v2/schedules").await;
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");
    gw.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn two_processes_fire_each_occurrence_once() {
    let redis = TestRedis::start();
    let receiver = Receiver::start().await;
    let one = TestGateway::start(&redis, &receiver, |c| c).await;
    let two = TestGateway::start(&redis, &receiver, |c| c).await;
    let url = format!("{}200/once", receiver.base());
    let set_ms = now_ms();
    let (status, _) = send(
        &one,
        "POST",
        &format!("/v2/schedules/{url}"),
        &[
            ("Upstash-Cron", "* * * * * *"),
            ("Upstash-Schedule-Id", "every-second"),
        ],
        b"",
    )
    .await;
    assert_eq!(status, 200);
    receiver.wait_for("/200/once", 6).await;
    let (status, _) = send(&two, "DELETE", "/v2/schedules/every-second", &[], b"").await;
    assert_eq!(status, 200);
    let deleted_ms = now_ms();
    // Those offered ahead arrive: waited for as the queue's state (nothing left in it to
    // deliver), however slow the machine.
    wait_idle(&redis).await;
    let got = receiver.to("/200/once");
    let mut ids: Vec<&str> = got.iter().map(|r| r.header("upstash-message-id")).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), got.len(), "a message delivered twice");
    // One message per occurrence: the occurrences fired are the whole seconds from the one the
    // schedule was set in to 2 s (the lead they are fired with) past its deletion; twice as
    // many messages if both processes fired them. (Bounded by the times this test read around
    // the set and the delete, which a slow machine only moves apart: times seen at the
    // receiver would bunch up when a delivery is late.)
    let occurrences = (deleted_ms + 2_000) / 1000 - set_ms / 1000 + 1;
    assert!(
        got.len() as i64 <= occurrences,
        "{} messages, {occurrences} occurrences at most",
        got.len()
    );
    one.shutdown().await;
    two.shutdown().await;
}
