//! A dead letter retried (`POST /v2/dlq/retry/{id}`) is a message again: while it waits for
//! its next attempt `GET /v2/messages/{id}` reads it (for the publish token that published it
//! too) and `DELETE /v2/messages/{id}` (an admin's) cancels it, so nothing more is delivered.

mod common;

use common::*;
use std::time::{Duration, Instant};

const PUBLISHER: &str = "publisher-token-0123456789";

/// A `method` request to `path` with `token` and `headers`: its status and JSON.
async fn call_as(
    gw: &TestGateway,
    token: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> (u16, serde_json::Value) {
    let mut request = reqwest::Client::new()
        .request(method.parse().unwrap(), format!("{}{path}", gw.base))
        .bearer_auth(token);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.body("r").send().await.unwrap();
    let status = response.status().as_u16();
    let body = response.bytes().await.unwrap();
    (status, serde_json::from_slice(&body).unwrap())
}

/// The gateway's queue in `redis`, without a transfer task of its own.
async fn gateway_queue(redis: &TestRedis) -> delayq::DelayedQueue<delayq::codec::ByteArrayCodec> {
    let client = delayq::connect(&redis.url()).await.unwrap();
    delayq::DelayedQueue::builder(client, "delayq-gateway", delayq::codec::ByteArrayCodec)
        .transfer(false)
        .build()
        .await
        .unwrap()
}

/// Waits until the gateway's queue holds exactly one pending entry; its value.
async fn wait_one_pending(redis: &TestRedis) -> Vec<u8> {
    let queue = gateway_queue(redis).await;
    let deadline = Instant::now() + PATIENCE;
    loop {
        let pending = queue.inspect().pending(10).await.unwrap();
        if let [one] = pending.as_slice() {
            return one.raw.to_vec();
        }
        assert!(
            Instant::now() < deadline,
            "{} entries pending after {PATIENCE:?}, not 1",
            pending.len()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_retried_dead_letter_is_read_and_cancelled_while_it_waits() {
    let redis = TestRedis::start();
    let receiver = Receiver::start().await;
    let gw = TestGateway::start(&redis, &receiver, |c| c.with_publish_token(PUBLISHER)).await;
    // The first attempt is refused for good (489: a dead letter at once); the next ones fail
    // (500) and wait ten minutes for their retry.
    let path = "489-500/retried";
    let publish = format!("/v2/publish/{}{path}", receiver.base());
    let headers = [("Upstash-Retries", "1"), ("Upstash-Retry-Delay", "600000")];
    let (status, answer) = call_as(&gw, PUBLISHER, "POST", &publish, &headers).await;
    assert_eq!(status, 201, "{answer}");
    let id = answer["messageId"].as_str().unwrap().to_owned();
    gw.wait_dead(&id).await;
    let message = format!("/v2/messages/{id}");
    assert_eq!(gw.call("GET", &message).await.0, 404);

    let (status, retried) = gw.call("POST", &format!("/v2/dlq/retry/{id}")).await;
    assert_eq!((status, &retried["messageId"]), (201, &id.as_str().into()));
    receiver.wait_for(&format!("/{path}"), 2).await;
    let value = wait_one_pending(&redis).await;

    // Waiting for its retry, it is a message again, for the admin and for its publisher.
    for token in [TOKEN, PUBLISHER] {
        let (status, found) = call_as(&gw, token, "GET", &message, &[]).await;
        assert_eq!(status, 200, "{found}");
        assert_eq!(found["messageId"], id.as_str());
        assert_eq!(found["url"], format!("{}{path}", receiver.base()));
        assert_eq!(found["maxRetries"], 1);
        assert_eq!(found["retryDelayExpression"], "600000");
    }
    let (status, cancelled) = gw.call("DELETE", &message).await;
    assert_eq!(
        (status, &cancelled["cancelled"]),
        (200, &1.into()),
        "{cancelled}"
    );
    assert_eq!(gw.call("GET", &message).await.0, 404);

    // Its retry made due now is dropped unsent: the queue empties with no third request.
    let rescheduled = gateway_queue(&redis)
        .await
        .reschedule(&value, Duration::ZERO)
        .await
        .unwrap();
    assert!(rescheduled);
    wait_idle(&redis).await;
    assert_eq!(receiver.to(&format!("/{path}")).len(), 2);
    assert_eq!(
        gw.call("GET", "/v2/dlq").await.1["messages"],
        serde_json::json!([])
    );
    gw.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn dead_letters_retried_in_bulk_are_cancelled_in_bulk() {
    let redis = TestRedis::start();
    let receiver = Receiver::start().await;
    let gw = TestGateway::start(&redis, &receiver, |c| c).await;
    let headers = [("Upstash-Retries", "1"), ("Upstash-Retry-Delay", "600000")];
    let mut ids = Vec::new();
    for path in ["489-500/bulk-a", "489-500/bulk-b"] {
        let url = format!("{}{path}", receiver.base());
        let (status, answer) = gw.publish(&url, &headers, b"b".to_vec()).await;
        assert_eq!(status, 201, "{answer}");
        let id = answer["messageId"].as_str().unwrap().to_owned();
        gw.wait_dead(&id).await;
        ids.push(id);
    }
    let query = format!("dlqIds={}&dlqIds={}", ids[0], ids[1]);
    let (status, retried) = gw.call("POST", &format!("/v2/dlq/retry?{query}")).await;
    assert_eq!(status, 201, "{retried}");
    assert_eq!(
        retried["responses"].as_array().unwrap().len(),
        2,
        "{retried}"
    );
    for path in ["/489-500/bulk-a", "/489-500/bulk-b"] {
        receiver.wait_for(path, 2).await;
    }
    for id in &ids {
        let (status, found) = gw.call("GET", &format!("/v2/messages/{id}")).await;
        assert_eq!((status, &found["messageId"]), (200, &id.as_str().into()));
    }
    let cancel = format!("/v2/messages?messageIds={},{}", ids[0], ids[1]);
    let (status, cancelled) = gw.call("DELETE", &cancel).await;
    assert_eq!(
        (status, &cancelled["cancelled"]),
        (200, &2.into()),
        "{cancelled}"
    );
    for id in &ids {
        assert_eq!(gw.call("GET", &format!("/v2/messages/{id}")).await.0, 404);
    }
    gw.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn retries_of_one_dead_letter_at_once_leave_it_readable() {
    let redis = TestRedis::start();
    let receiver = Receiver::start().await;
    let gw = std::sync::Arc::new(TestGateway::start(&redis, &receiver, |c| c).await);
    let path = "489-500/at-once";
    let url = format!("{}{path}", receiver.base());
    let headers = [("Upstash-Retries", "1"), ("Upstash-Retry-Delay", "600000")];
    let (_, answer) = gw.publish(&url, &headers, b"o".to_vec()).await;
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
    receiver.wait_for(&format!("/{path}"), 2).await;
    wait_one_pending(&redis).await;
    // The retries that found the letter gone did not take back the record of the one that
    // replayed it.
    let (status, found) = gw.call("GET", &format!("/v2/messages/{id}")).await;
    assert_eq!((status, &found["messageId"]), (200, &id.as_str().into()));
    std::sync::Arc::into_inner(gw).unwrap().shutdown().await;
}
