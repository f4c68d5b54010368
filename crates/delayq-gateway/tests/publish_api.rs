//! The publish API against a real redis-server: deduplication with QStash's semantics, and every
//! bad input answered 4xx with a JSON error and nothing stored.

mod common;

use common::*;
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread")]
async fn dedup_id_answers_the_first_message_even_after_delivery() {
    let redis = TestRedis::start();
    let receiver = Receiver::start().await;
    let gw = TestGateway::start(&redis, &receiver, |c| c).await;
    let url = format!("{}200/dedup", receiver.base());
    let headers = [("Upstash-Deduplication-Id", "order-17")];
    let (status, first) = gw.publish(&url, &headers, b"1".to_vec()).await;
    assert_eq!(status, 201);
    assert!(first.get("deduplicated").is_none());
    let (status, again) = gw.publish(&url, &headers, b"2".to_vec()).await;
    assert_eq!(status, 202);
    assert_eq!(again["messageId"], first["messageId"]);
    assert_eq!(again["deduplicated"], true);
    receiver.wait_for("/200/dedup", 1).await;
    // Still remembered after delivery.
    let (status, late) = gw.publish(&url, &headers, b"3".to_vec()).await;
    assert_eq!((status, &late["messageId"]), (202, &first["messageId"]));
    // Content-based: the same body twice is one message, another body another ("True" as
    // Python's SDK sends it).
    let content = [("Upstash-Content-Based-Deduplication", "True")];
    let (_, a) = gw.publish(&url, &content, b"same".to_vec()).await;
    let (s, b) = gw.publish(&url, &content, b"same".to_vec()).await;
    let (_, c) = gw.publish(&url, &content, b"other".to_vec()).await;
    assert_eq!((s, &b["messageId"]), (202, &a["messageId"]));
    assert_ne!(c["messageId"], a["messageId"]);
    receiver.wait_for("/200/dedup", 3).await;
    assert_eq!(receiver.to("/200/dedup").len(), 3);
    gw.shutdown().await;
}

/// A gateway that claims a deduplication id and then loses Redis (killed, cut off) before it
/// stores the message leaves a pending claim: a resend of the publish with the id is not told
/// "deduplicated" for a message that does not exist; once the lease is over it stores and
/// delivers its own (before the claim was settled apart, it answered 202 with the dead
/// message's id and nothing was ever delivered).
#[tokio::test(flavor = "multi_thread")]
async fn a_dedup_id_claimed_by_a_publisher_that_died_is_taken_over_after_the_lease() {
    let redis = TestRedis::start();
    let receiver = Receiver::start().await;
    let proxy = FreezingProxy::start(&redis, b"dedup:{delayq-gateway}:id:order-99").await;
    let lease = |c: delayq_gateway::GatewayConfig| c.with_dedup_lease(Duration::from_secs(1));
    let dying = TestGateway::start_at(&proxy.url(), &receiver, lease).await;
    let url = format!("{}200/taken-over", receiver.base());
    let headers = [("Upstash-Deduplication-Id", "order-99")];
    let cut_off = {
        let (base, url) = (dying.base.clone(), url.clone());
        tokio::spawn(async move {
            let _ = reqwest::Client::new()
                .post(format!("{base}/v2/publish/{url}"))
                .bearer_auth(TOKEN)
                .header(headers[0].0, headers[0].1)
                .body("lost?")
                .send()
                .await;
        })
    };
    let deadline = Instant::now() + PATIENCE;
    while !proxy.is_frozen() {
        assert!(
            Instant::now() < deadline,
            "the dying gateway never claimed the id"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let client = delayq::connect(&redis.url()).await.unwrap();
    let claim = "delayq_gateway_dedup:{delayq-gateway}:id:order-99";
    let found: i64 = delayq::fred::interfaces::KeysInterface::exists(&client, claim)
        .await
        .unwrap();
    assert_eq!(found, 1, "the claim is in Redis");
    proxy.cut();
    cut_off.abort();

    let gw = TestGateway::start(&redis, &receiver, lease).await;
    let (status, answer) = gw.publish(&url, &headers, b"resent".to_vec()).await;
    assert_eq!(
        status, 201,
        "the resend is stored, not deduplicated: {answer}"
    );
    let got = receiver.wait_for("/200/taken-over", 1).await;
    assert_eq!(got[0].body, b"resent");
    assert_eq!(got[0].header("upstash-message-id"), answer["messageId"]);
    // Settled now: the id answers this message.
    let (status, again) = gw.publish(&url, &headers, b"again".to_vec()).await;
    assert_eq!((status, &again["messageId"]), (202, &answer["messageId"]));
    gw.shutdown().await;
}

/// Twenty publishes with one deduplication id at once: one is stored, nineteen answer its id
/// (those that came while it was being stored waited for it), one delivery.
#[tokio::test(flavor = "multi_thread")]
async fn concurrent_publishes_with_one_dedup_id_store_one_message() {
    let redis = TestRedis::start();
    let receiver = Receiver::start().await;
    let gw = std::sync::Arc::new(TestGateway::start(&redis, &receiver, |c| c).await);
    let url = format!("{}200/at-once", receiver.base());
    let mut publishes = Vec::new();
    for n in 0..20 {
        let (gw, url) = (gw.clone(), url.clone());
        publishes.push(tokio::spawn(async move {
            let headers = [("Upstash-Deduplication-Id", "at-once")];
            gw.publish(&url, &headers, format!("{n}").into_bytes())
                .await
        }));
    }
    let mut answers = Vec::new();
    for publish in publishes {
        answers.push(publish.await.unwrap());
    }
    let stored: Vec<_> = answers.iter().filter(|(s, _)| *s == 201).collect();
    assert_eq!(stored.len(), 1, "{answers:?}");
    let first = &stored[0].1["messageId"];
    for (status, answer) in &answers {
        assert!(
            *status == 201 || (*status == 202 && &answer["messageId"] == first),
            "{answers:?}"
        );
    }
    receiver.wait_for("/200/at-once", 1).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(receiver.to("/200/at-once").len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_input_is_a_json_4xx_and_stores_nothing() {
    let redis = TestRedis::start();
    let receiver = Receiver::start().await;
    let gw = TestGateway::start(&redis, &receiver, |c| c.with_body_limit(1024)).await;
    let ok = format!("{}200/bad", receiver.base());
    let client = reqwest::Client::new();
    let publish = |token: Option<&str>, dest: String| {
        let mut r = client.post(format!("{}/v2/publish/{dest}", gw.base));
        if let Some(token) = token {
            r = r.bearer_auth(token);
        }
        r
    };
    let cases: Vec<(u16, reqwest::RequestBuilder)> = vec![
        (401, publish(None, ok.clone())),
        (401, publish(Some("wrong-token-0123456789"), ok.clone())),
        (401, publish(Some(&TOKEN[..TOKEN.len() - 1]), ok.clone())),
        (
            403,
            publish(Some(TOKEN), "http://127.0.0.2:1/elsewhere".into()),
        ),
        // The allowed host and port as user info of another host.
        (
            403,
            publish(
                Some(TOKEN),
                receiver.base().trim_end_matches('/').to_owned() + "@127.0.0.2:1/x",
            ),
        ),
        (400, publish(Some(TOKEN), "not-a-url".into())),
        (
            400,
            publish(Some(TOKEN), ok.clone()).header("Upstash-Delay", "soon"),
        ),
        (
            400,
            publish(Some(TOKEN), ok.clone()).header("Upstash-Not-Before", "tomorrow"),
        ),
        (
            400,
            publish(Some(TOKEN), ok.clone()).header("Upstash-Retries", "-1"),
        ),
        (
            400,
            publish(Some(TOKEN), ok.clone()).header("Upstash-Retries", "many"),
        ),
        (
            400,
            publish(Some(TOKEN), ok.clone()).header("Upstash-Method", "TRACE"),
        ),
        (
            403,
            publish(Some(TOKEN), ok.clone()).header("Upstash-Callback", "http://127.0.0.2:1/cb"),
        ),
        (413, publish(Some(TOKEN), ok.clone()).body(vec![b'x'; 1025])),
    ];
    for (want, request) in cases {
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let body: serde_json::Value =
            serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
        assert_eq!(status, want, "{body}");
        assert!(
            body["error"].as_str().is_some_and(|e| !e.is_empty()),
            "{body}"
        );
    }
    // Other routes need the token too.
    let response = client
        .get(format!("{}/v2/dlq", gw.base))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 401);
    // Nothing stored: no key at all in the server.
    let keys = std::process::Command::new("redis-cli")
        .args(["-p", &redis.port.to_string(), "--raw", "keys", "*"])
        .output()
        .unwrap();
    let keys = String::from_utf8(keys.stdout).unwrap();
    let stored: Vec<&str> = keys
        .lines()
        .filter(|k| {
            k.contains("gateway_messages")
                || k.contains("delay_queue")
                || k.contains("gateway_dedup")
        })
        .collect();
    assert!(stored.is_empty(), "{stored:?}");
    // At the limit is fine.
    let (status, _) = gw.publish(&ok, &[], vec![b'x'; 1024]).await;
    assert_eq!(status, 201);
    receiver.wait_for("/200/bad", 1).await;
    gw.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn batch_stores_all_in_order_or_none() {
    let redis = TestRedis::start();
    let receiver = Receiver::start().await;
    let gw = TestGateway::start(&redis, &receiver, |c| c).await;
    let client = reqwest::Client::new();
    let base = receiver.base();
    let send = |items: serde_json::Value| {
        client
            .post(format!("{}/v2/batch", gw.base))
            .bearer_auth(TOKEN)
            .header("Content-Type", "application/json")
            .body(items.to_string())
            .send()
    };
    // One bad message (outside the allow-list) refuses the batch: nothing stored.
    let response = send(serde_json::json!([
        { "destination": format!("{base}200/batch-refused"), "body": "a" },
        { "destination": "http://127.0.0.2:1/x", "body": "b" },
    ]))
    .await
    .unwrap();
    assert_eq!(response.status().as_u16(), 403);
    let response = send(serde_json::json!([
        { "destination": format!("{base}200/batch-a"), "body": "a",
          "headers": { "upstash-method": "PUT", "upstash-forward-x-n": "1" } },
        { "destination": format!("{base}200/batch-b"), "body": "b",
          "headers": { "upstash-delay": "1s", "upstash-deduplication-id": "b" }, "queue": null },
        { "destination": format!("{base}200/batch-c"),
          "headers": { "upstash-deduplication-id": "b" } },
    ]))
    .await
    .unwrap();
    assert_eq!(response.status().as_u16(), 201);
    let answers: serde_json::Value =
        serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
    let answers = answers.as_array().unwrap();
    assert_eq!(answers.len(), 3);
    assert_eq!(answers[0]["url"], format!("{base}200/batch-a"));
    assert_eq!(answers[2]["messageId"], answers[1]["messageId"]);
    assert_eq!(answers[2]["deduplicated"], true);
    let a = receiver.wait_for("/200/batch-a", 1).await;
    assert_eq!((a[0].method.as_str(), a[0].header("x-n")), ("PUT", "1"));
    assert_eq!(a[0].header("upstash-message-id"), answers[0]["messageId"]);
    let b = receiver.wait_for("/200/batch-b", 1).await;
    assert_eq!(b[0].body, b"b");
    assert!(receiver.to("/200/batch-c").is_empty());
    assert!(receiver.to("/200/batch-refused").is_empty());
    gw.shutdown().await;
}
