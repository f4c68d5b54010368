//! Delivery against a real redis-server and a recording loopback receiver: signed requests with
//! the body byte for byte, delays, retries, dead letters, 489, cancel.

mod common;

use common::*;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread")]
async fn delivers_signed_with_headers_and_body() {
    let redis = TestRedis::start();
    let receiver = Receiver::start().await;
    let gw = TestGateway::start(&redis, &receiver, |c| c).await;
    let url = format!("{}200/a%20b?x=1&y=%2F", receiver.base());
    let body: Vec<u8> = (0..=255u8).chain(b"\r\n\0end".iter().copied()).collect();
    let (status, answer) = gw
        .publish(
            &url,
            &[
                ("Upstash-Method", "PUT"),
                ("Upstash-Forward-X-Order", "17"),
                ("Content-Type", "application/octet-stream"),
                ("Upstash-Telemetry-Sdk", "test"),
            ],
            body.clone(),
        )
        .await;
    assert_eq!(status, 201, "{answer}");
    let id = answer["messageId"].as_str().unwrap().to_owned();
    assert!(id.starts_with("msg_"));
    assert_eq!(answer["url"], url);
    let got = receiver.wait_for("/200/", 1).await;
    let got = &got[0];
    assert_eq!(got.method, "PUT");
    assert_eq!(got.target, "/200/a%20b?x=1&y=%2F");
    assert_eq!(got.body, body);
    assert_eq!(got.header("x-order"), "17");
    assert_eq!(got.header("content-type"), "application/octet-stream");
    assert_eq!(got.header("upstash-message-id"), id);
    assert_eq!(got.header("upstash-retried"), "0");
    assert_eq!(got.header("user-agent"), "Upstash-QStash");
    assert_eq!(got.header("upstash-telemetry-sdk"), "");
    let claims = verify(got.header("upstash-signature"), CURRENT_KEY, &url, &body);
    assert!(claims["jti"].as_str().unwrap().starts_with("jwt_"));
    // Delivered: no longer a message.
    wait_gone(&gw, &id).await;
    gw.shutdown().await;
}

async fn wait_gone(gw: &TestGateway, id: &str) {
    let deadline = std::time::Instant::now() + PATIENCE;
    while gw.call("GET", &format!("/v2/messages/{id}")).await.0 != 404 {
        assert!(std::time::Instant::now() < deadline, "{id} still listed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn delay_and_not_before_are_kept() {
    let redis = TestRedis::start();
    let receiver = Receiver::start().await;
    // Delivered messages stay readable: the GET below may come after the delivery on a slow
    // machine.
    let keep = |c: delayq_gateway::GatewayConfig| c.with_keep_delivered(Duration::from_secs(600));
    let gw = TestGateway::start(&redis, &receiver, keep).await;
    let published = now_ms();
    let (status, answer) = gw
        .publish(
            &format!("{}200/delay", receiver.base()),
            &[("Upstash-Delay", "2s"), ("Upstash-Label", "a,b")],
            b"d".to_vec(),
        )
        .await;
    assert_eq!(status, 201);
    let id = answer["messageId"].as_str().unwrap();
    let (status, message) = gw.call("GET", &format!("/v2/messages/{id}")).await;
    assert_eq!(status, 200, "{message}");
    assert_eq!(message["method"], "POST");
    assert_eq!(message["maxRetries"], 3);
    assert_eq!(message["labels"], serde_json::json!(["a", "b"]));
    assert_eq!(message["label"], "a");
    let not_before = message["notBefore"].as_i64().unwrap();
    assert!(not_before >= published + 2_000, "{message}");
    let not_before_secs = (now_ms() / 1000 + 3).to_string();
    gw.publish(
        &format!("{}200/at", receiver.base()),
        &[
            ("Upstash-Not-Before", &not_before_secs),
            ("Upstash-Delay", "0s"),
        ],
        b"n".to_vec(),
    )
    .await;
    let got = receiver.wait_for("/200/delay", 1).await;
    assert!(
        got[0].at_ms >= not_before,
        "{} < {not_before}",
        got[0].at_ms
    );
    let got = receiver.wait_for("/200/at", 1).await;
    assert!(got[0].at_ms >= not_before_secs.parse::<i64>().unwrap() * 1000);
    gw.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn retries_until_success_with_a_fresh_signature() {
    let redis = TestRedis::start();
    let receiver = Receiver::start().await;
    let gw = TestGateway::start(&redis, &receiver, |c| c).await;
    let url = format!("{}500-503-200/r", receiver.base());
    let (_, answer) = gw
        .publish(&url, &[("Upstash-Retries", "3")], b"r".to_vec())
        .await;
    let id = answer["messageId"].as_str().unwrap().to_owned();
    let got = receiver.wait_for("/500-503-200/r", 3).await;
    let retried: Vec<&str> = got.iter().map(|r| r.header("upstash-retried")).collect();
    assert_eq!(retried, ["0", "1", "2"]);
    let jtis: Vec<String> = got
        .iter()
        .map(|r| verify(r.header("upstash-signature"), CURRENT_KEY, &url, b"r")["jti"].to_string())
        .collect();
    assert!(jtis[0] != jtis[1] && jtis[1] != jtis[2]);
    assert!(got.iter().all(|r| r.header("upstash-message-id") == id));
    wait_gone(&gw, &id).await;
    let (_, dlq) = gw.call("GET", "/v2/dlq").await;
    assert_eq!(dlq["messages"].as_array().unwrap().len(), 0, "{dlq}");
    gw.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn exhausted_retries_and_489_go_to_the_dead_letters() {
    let redis = TestRedis::start();
    let receiver = Receiver::start().await;
    let gw = TestGateway::start(&redis, &receiver, |c| c).await;
    let (_, answer) = gw
        .publish(
            &format!("{}500/x", receiver.base()),
            &[("Upstash-Retries", "1")],
            b"x".to_vec(),
        )
        .await;
    let exhausted = answer["messageId"].as_str().unwrap().to_owned();
    let (_, answer) = gw
        .publish(
            &format!("{}489/y", receiver.base()),
            &[("Upstash-Retries", "5")],
            b"y".to_vec(),
        )
        .await;
    let refused = answer["messageId"].as_str().unwrap().to_owned();
    let dead = gw.wait_dead(&exhausted).await;
    assert_eq!(dead["responseStatus"], 500, "{dead}");
    assert_eq!(dead["responseBody"], "answer", "{dead}");
    assert_eq!(receiver.to("/500/x").len(), 2);
    let dead = gw.wait_dead(&refused).await;
    assert_eq!(dead["responseStatus"], 489, "{dead}");
    assert_eq!(receiver.to("/489/y").len(), 1, "489 is never retried");
    wait_gone(&gw, &exhausted).await;
    wait_gone(&gw, &refused).await;
    gw.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn timeout_is_a_failed_attempt() {
    let redis = TestRedis::start();
    let receiver = Receiver::start().await;
    // A destination that accepts and never answers.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let silent_base = format!("http://{}/", silent.local_addr().unwrap());
    let held = tokio::spawn(async move {
        let mut kept = Vec::new();
        while let Ok((stream, _)) = silent.accept().await {
            kept.push(stream);
        }
    });
    let gw = TestGateway::start(&redis, &receiver, |c| {
        c.allow_destination(silent_base.clone())
            .with_request_timeout(Duration::from_millis(300))
    })
    .await;
    let (_, answer) = gw
        .publish(
            &format!("{silent_base}slow"),
            &[("Upstash-Retries", "1")],
            b"t".to_vec(),
        )
        .await;
    let dead = gw.wait_dead(answer["messageId"].as_str().unwrap()).await;
    assert_eq!(dead["responseStatus"], 0);
    assert!(
        dead["error"].as_str().unwrap().contains("timed out"),
        "{dead}"
    );
    assert_eq!(dead["attempts"], 2, "{dead}");
    held.abort();
    gw.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cancelled_message_is_never_delivered() {
    let redis = TestRedis::start();
    let receiver = Receiver::start().await;
    let gw = TestGateway::start(&redis, &receiver, |c| c).await;
    let (_, answer) = gw
        .publish(
            &format!("{}200/cancelled", receiver.base()),
            &[("Upstash-Delay", "1h")],
            b"c".to_vec(),
        )
        .await;
    let id = answer["messageId"].as_str().unwrap();
    let (status, answer) = gw.call("DELETE", &format!("/v2/messages/{id}")).await;
    assert_eq!((status, answer["cancelled"].as_i64()), (200, Some(1)));
    assert_eq!(
        gw.call("DELETE", &format!("/v2/messages/{id}")).await.0,
        404
    );
    assert_eq!(gw.call("GET", &format!("/v2/messages/{id}")).await.0, 404);
    // Its entry is gone from the queue: nothing is left to deliver.
    assert_eq!(pending_entries(&redis).await, 0);
    assert!(receiver.to("/200/cancelled").is_empty());
    // A message cancelled while it waits for a retry is dropped at its next attempt.
    let (_, answer) = gw
        .publish(
            &format!("{}500/retrying", receiver.base()),
            &[("Upstash-Retries", "50")],
            b"r".to_vec(),
        )
        .await;
    let id = answer["messageId"].as_str().unwrap();
    receiver.wait_for("/500/retrying", 1).await;
    assert_eq!(
        gw.call("DELETE", &format!("/v2/messages/{id}")).await.0,
        200
    );
    let after_cancel = receiver.to("/500/retrying").len();
    // Dropped, not retried on: nothing is left in the queue (waited for as its state, however
    // slow the machine; a marker due a few seconds later need not come after the retry on a
    // loaded machine)...
    wait_idle(&redis).await;
    // ... and at most the attempt already under way when it was cancelled was made.
    assert!(receiver.to("/500/retrying").len() <= after_cancel + 1);
    gw.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn two_gateways_share_one_queue() {
    let redis = TestRedis::start();
    let receiver = Receiver::start().await;
    let one = TestGateway::start(&redis, &receiver, |c| c).await;
    let two = TestGateway::start(&redis, &receiver, |c| c).await;
    // Published through one, seen and cancelled through the other.
    let (_, answer) = one
        .publish(
            &format!("{}200/shared-cancelled", receiver.base()),
            &[("Upstash-Delay", "1h")],
            b"c".to_vec(),
        )
        .await;
    let id = answer["messageId"].as_str().unwrap();
    assert_eq!(two.call("GET", &format!("/v2/messages/{id}")).await.0, 200);
    assert_eq!(
        two.call("DELETE", &format!("/v2/messages/{id}")).await.0,
        200
    );
    // Each message delivered once, by whichever process takes it.
    for n in 0..10 {
        let gw = if n % 2 == 0 { &one } else { &two };
        gw.publish(&format!("{}200/shared-{n}", receiver.base()), &[], vec![n])
            .await;
    }
    one.publish(
        &format!("{}200/shared-marker", receiver.base()),
        &[("Upstash-Delay", "2s")],
        b"m".to_vec(),
    )
    .await;
    receiver.wait_for("/200/shared-marker", 1).await;
    for n in 0..10 {
        let got = receiver.wait_for(&format!("/200/shared-{n}"), 1).await;
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].body, [n]);
    }
    assert!(receiver.to("/200/shared-cancelled").is_empty());
    // The cancelled one's entry is gone, the rest delivered: nothing pending.
    assert_eq!(pending_entries(&redis).await, 0);
    one.shutdown().await;
    two.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_replayed_dead_letter_is_delivered() {
    let redis = TestRedis::start();
    let receiver = Receiver::start().await;
    let gw = TestGateway::start(&redis, &receiver, |c| c).await;
    let url = format!("{}500-200/replayed", receiver.base());
    let (_, answer) = gw
        .publish(&url, &[("Upstash-Retries", "0")], b"again".to_vec())
        .await;
    let id = answer["messageId"].as_str().unwrap();
    gw.wait_dead(id).await;
    // What `delayq dead replay` does: back into the queue with a fresh attempt count.
    let replayed = gw
        .gateway
        .queue()
        .admin()
        .replay_dead_letters(0, Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(replayed, 1);
    let got = receiver.wait_for("/500-200/replayed", 2).await;
    assert_eq!(got[1].header("upstash-message-id"), id);
    assert_eq!(got[1].header("upstash-retried"), "0");
    assert_eq!(got[1].body, b"again");
    verify(
        got[1].header("upstash-signature"),
        CURRENT_KEY,
        &url,
        b"again",
    );
    gw.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn retry_after_sets_the_next_attempt() {
    let redis = TestRedis::start();
    let receiver = Receiver::start().await;
    let gw = TestGateway::start(&redis, &receiver, |c| c).await;
    gw.publish(
        &format!("{}429-200/later", receiver.base()),
        &[("Upstash-Retries", "1")],
        b"l".to_vec(),
    )
    .await;
    let got = receiver.wait_for("/429-200/later", 2).await;
    // Retry-After: 2 instead of the 200 ms backoff.
    let waited = got[1].at_ms - got[0].at_ms;
    assert!(waited >= 1_900, "retried after {waited} ms");
    assert_eq!(got[1].header("upstash-retried"), "1");
    gw.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn dead_letters_listed_read_deleted_and_retried() {
    let redis = TestRedis::start();
    let receiver = Receiver::start().await;
    let gw = TestGateway::start(&redis, &receiver, |c| c).await;
    let mut ids = Vec::new();
    for path in ["500/dlq-a", "500-200/dlq-b", "500/dlq-c"] {
        let url = format!("{}{path}", receiver.base());
        let (_, answer) = gw
            .publish(&url, &[("Upstash-Retries", "0")], b"d".to_vec())
            .await;
        let id = answer["messageId"].as_str().unwrap().to_owned();
        gw.wait_dead(&id).await;
        ids.push(id);
    }
    let (a, b) = (&ids[0], &ids[1]);
    let (_, page) = gw.call("GET", "/v2/dlq?count=2").await;
    assert_eq!(page["messages"].as_array().unwrap().len(), 2, "{page}");
    assert_eq!(page["cursor"], "2");
    let (_, rest) = gw.call("GET", "/v2/dlq?cursor=2").await;
    assert_eq!(rest["messages"].as_array().unwrap().len(), 1, "{rest}");
    assert!(rest.get("cursor").is_none());
    let (_, one) = gw.call("GET", &format!("/v2/dlq?messageId={b}")).await;
    assert_eq!(one["messages"][0]["dlqId"], b.as_str());
    let (status, letter) = gw.call("GET", &format!("/v2/dlq/{a}")).await;
    assert_eq!((status, &letter["responseStatus"]), (200, &500.into()));
    let (status, deleted) = gw.call("DELETE", &format!("/v2/dlq/{a}")).await;
    assert_eq!((status, &deleted["deleted"]), (200, &1.into()));
    assert_eq!(gw.call("GET", &format!("/v2/dlq/{a}")).await.0, 404);
    assert_eq!(gw.call("DELETE", &format!("/v2/dlq/{a}")).await.0, 404);
    let (status, retried) = gw.call("POST", &format!("/v2/dlq/retry/{b}")).await;
    assert_eq!((status, &retried["messageId"]), (201, &b.as_str().into()));
    let got = receiver.wait_for("/500-200/dlq-b", 2).await;
    assert_eq!(got[1].header("upstash-retried"), "0");
    assert_eq!(gw.call("GET", &format!("/v2/dlq/{b}")).await.0, 404);
    assert_eq!(gw.call("POST", &format!("/v2/dlq/retry/{b}")).await.0, 404);
    assert_eq!(gw.call("POST", "/v2/dlq/retry").await.0, 400);
    let (status, none) = gw.call("POST", &format!("/v2/dlq/retry?dlqIds={b}")).await;
    assert_eq!(
        (status, none["responses"].as_array().unwrap().len()),
        (201, 0)
    );
    gw.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn retry_delay_expression_paces_the_retries() {
    let redis = TestRedis::start();
    let receiver = Receiver::start().await;
    let gw = TestGateway::start(&redis, &receiver, |c| c).await;
    let expr = "1500 * (1 + retried)";
    let (status, answer) = gw
        .publish(
            &format!("{}500-500-200/expr", receiver.base()),
            &[("Upstash-Retries", "2"), ("Upstash-Retry-Delay", expr)],
            b"e".to_vec(),
        )
        .await;
    assert_eq!(status, 201, "{answer}");
    let id = answer["messageId"].as_str().unwrap();
    let (_, message) = gw.call("GET", &format!("/v2/messages/{id}")).await;
    assert_eq!(message["retryDelayExpression"], expr);
    let got = receiver.wait_for("/500-500-200/expr", 3).await;
    // 1.5 s, then 3 s: the gateway's own backoff here is 200 ms to 1 s.
    let (first, second) = (got[1].at_ms - got[0].at_ms, got[2].at_ms - got[1].at_ms);
    assert!(first >= 1_450, "first retry after {first} ms");
    assert!(second >= 2_950, "second retry after {second} ms");
    let (status, bad) = gw
        .publish(
            &format!("{}200/expr-bad", receiver.base()),
            &[("Upstash-Retry-Delay", "pow(2, retried")],
            b"b".to_vec(),
        )
        .await;
    assert_eq!(status, 400, "{bad}");
    gw.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn several_cancelled_by_id_in_the_query_or_the_body() {
    let redis = TestRedis::start();
    let receiver = Receiver::start().await;
    let gw = TestGateway::start(&redis, &receiver, |c| c).await;
    let mut ids = Vec::new();
    for n in 0..3 {
        let url = format!("{}200/many-{n}", receiver.base());
        let (_, answer) = gw.publish(&url, &[("Upstash-Delay", "1h")], vec![n]).await;
        ids.push(answer["messageId"].as_str().unwrap().to_owned());
    }
    let (status, answer) = gw
        .call(
            "DELETE",
            &format!("/v2/messages?messageIds={}&messageIds={}", ids[0], ids[1]),
        )
        .await;
    assert_eq!((status, &answer["cancelled"]), (200, &2.into()), "{answer}");
    let response = reqwest::Client::new()
        .delete(format!("{}/v2/messages", gw.base))
        .bearer_auth(TOKEN)
        .header("Content-Type", "application/json")
        .body(serde_json::json!({ "messageIds": [ids[2], ids[0], "msg_unknown"] }).to_string())
        .send()
        .await
        .unwrap();
    let answer: serde_json::Value =
        serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
    assert_eq!(answer["cancelled"], 1, "{answer}");
    // Cancelling everything is not a bare DELETE here.
    assert_eq!(gw.call("DELETE", "/v2/messages").await.0, 400);
    // The three entries are gone from the queue.
    assert_eq!(pending_entries(&redis).await, 0);
    gw.shutdown().await;
}
