//! Callbacks and failure callbacks against a real redis-server and a recording receiver: QStash's
//! callback body, signed for the callback URL; the last answer kept with the dead letter; the
//! callback's own settings; refusals that store nothing.

mod common;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use common::*;

fn json_of(recorded: &Recorded) -> serde_json::Value {
    serde_json::from_slice(&recorded.body).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn callback_after_delivery_carries_the_answer_signed() {
    let redis = TestRedis::start();
    let receiver = Receiver::start().await;
    // Delivered messages stay readable: the GET below may come after the delivery on a slow
    // machine.
    let keep = |c: delayq_gateway::GatewayConfig| {
        c.with_keep_delivered(std::time::Duration::from_secs(600))
    };
    let gw = TestGateway::start(&redis, &receiver, keep).await;
    let url = format!("{}200/source?x=1", receiver.base());
    let callback = format!("{}200/callback", receiver.base());
    let (status, answer) = gw
        .publish(
            &url,
            &[
                ("Upstash-Callback", &callback),
                ("Upstash-Callback-Forward-X-Cb", "yes"),
                ("Upstash-Callback-Method", "PUT"),
                ("Upstash-Forward-X-Src", "s"),
                ("Upstash-Retries", "2"),
                ("Upstash-Delay", "1s"),
            ],
            b"the body".to_vec(),
        )
        .await;
    assert_eq!(status, 201, "{answer}");
    let id = answer["messageId"].as_str().unwrap();
    let (_, message) = gw.call("GET", &format!("/v2/messages/{id}")).await;
    assert_eq!(message["callback"], callback.as_str());
    assert_eq!(message["callbackHeader"]["x-cb"][0], "yes");
    let got = receiver.wait_for("/200/callback", 1).await;
    let cb = &got[0];
    assert_eq!(cb.method, "PUT");
    assert_eq!(cb.header("x-cb"), "yes");
    assert_eq!(cb.header("content-type"), "application/json");
    assert_ne!(cb.header("upstash-message-id"), id);
    verify(
        cb.header("upstash-signature"),
        CURRENT_KEY,
        &callback,
        &cb.body,
    );
    let body = json_of(cb);
    assert_eq!(body["status"], 200);
    assert_eq!(
        STANDARD.decode(body["body"].as_str().unwrap()).unwrap(),
        b"answer"
    );
    assert_eq!(
        body["header"]["content-type"][0],
        "text/plain; charset=utf-8"
    );
    assert_eq!(body["sourceMessageId"], id);
    assert_eq!(body["url"], url);
    assert_eq!(body["method"], "POST");
    assert_eq!(body["retried"], 0);
    assert_eq!(body["maxRetries"], 2);
    assert_eq!(body["sourceHeader"]["x-src"], "s");
    assert_eq!(
        STANDARD
            .decode(body["sourceBody"].as_str().unwrap())
            .unwrap(),
        b"the body"
    );
    assert!(body["createdAt"].as_str().unwrap().parse::<i64>().is_ok());
    assert!(body.get("dlqId").is_none());
    // Exactly one callback, and the source once.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(receiver.to("/200/callback").len(), 1);
    assert_eq!(receiver.to("/200/source").len(), 1);
    gw.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn failure_callback_after_the_last_retry_with_the_dlq_id() {
    let redis = TestRedis::start();
    let receiver = Receiver::start().await;
    let gw = TestGateway::start(&redis, &receiver, |c| c).await;
    let url = format!("{}500/failing", receiver.base());
    let failure = format!("{}500-200/failure", receiver.base());
    let success = format!("{}200/never", receiver.base());
    let (status, answer) = gw
        .publish(
            &url,
            &[
                ("Upstash-Retries", "1"),
                ("Upstash-Callback", &success),
                ("Upstash-Failure-Callback", &failure),
                ("Upstash-Failure-Callback-Retries", "3"),
            ],
            b"f".to_vec(),
        )
        .await;
    assert_eq!(status, 201, "{answer}");
    let id = answer["messageId"].as_str().unwrap();
    // The failure callback's own retries: its first attempt answered 500, its second 200.
    let got = receiver.wait_for("/500-200/failure", 2).await;
    assert_eq!(receiver.to("/500/failing").len(), 2);
    for cb in &got {
        verify(
            cb.header("upstash-signature"),
            CURRENT_KEY,
            &failure,
            &cb.body,
        );
    }
    assert_eq!(
        got[0].header("upstash-message-id"),
        got[1].header("upstash-message-id")
    );
    assert_eq!(got[1].header("upstash-retried"), "1");
    let body = json_of(&got[0]);
    assert_eq!(body["status"], 500);
    assert_eq!(body["dlqId"], id);
    assert_eq!(body["sourceMessageId"], id);
    assert_eq!(body["retried"], 1);
    assert_eq!(body["maxRetries"], 1);
    assert_eq!(
        STANDARD.decode(body["body"].as_str().unwrap()).unwrap(),
        b"answer"
    );
    // The dead letter keeps the last answer.
    let dead = gw.wait_dead(id).await;
    assert_eq!(dead["responseStatus"], 500);
    assert_eq!(dead["responseBody"], "answer");
    assert_eq!(
        dead["responseHeader"]["content-type"][0],
        "text/plain; charset=utf-8"
    );
    assert!(receiver.to("/200/never").is_empty());
    gw.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn failure_callback_at_once_on_489() {
    let redis = TestRedis::start();
    let receiver = Receiver::start().await;
    let gw = TestGateway::start(&redis, &receiver, |c| c).await;
    let failure = format!("{}200/on-489", receiver.base());
    let (_, answer) = gw
        .publish(
            &format!("{}489/refusing", receiver.base()),
            &[
                ("Upstash-Retries", "3"),
                ("Upstash-Failure-Callback", &failure),
            ],
            b"n".to_vec(),
        )
        .await;
    let id = answer["messageId"].as_str().unwrap();
    let got = receiver.wait_for("/200/on-489", 1).await;
    let body = json_of(&got[0]);
    assert_eq!(body["status"], 489);
    assert_eq!(body["retried"], 0);
    assert_eq!(body["dlqId"], id);
    assert_eq!(body["header"]["upstash-nonretryable-error"][0], "true");
    assert_eq!(receiver.to("/489/refusing").len(), 1);
    gw.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_callbacks_are_refused_and_nothing_is_stored() {
    let redis = TestRedis::start();
    let receiver = Receiver::start().await;
    let gw = TestGateway::start(&redis, &receiver, |c| c).await;
    let ok = format!("{}200/ok", receiver.base());
    let cases: Vec<(u16, Vec<(&str, &str)>)> = vec![
        (403, vec![("Upstash-Callback", "http://127.0.0.2:1/cb")]),
        (
            403,
            vec![("Upstash-Failure-Callback", "http://127.0.0.2:1/f")],
        ),
        (400, vec![("Upstash-Callback", "not a url")]),
        (400, vec![("Upstash-Callback", "ftp://127.0.0.1/x")]),
        (
            400,
            vec![("Upstash-Callback", &ok), ("Upstash-Callback-Delay", "10s")],
        ),
        (
            400,
            vec![
                ("Upstash-Callback", &ok),
                ("Upstash-Callback-Retries", "-1"),
            ],
        ),
        (
            400,
            vec![
                ("Upstash-Callback", &ok),
                ("Upstash-Callback-Method", "TRACE"),
            ],
        ),
        (
            400,
            vec![
                ("Upstash-Failure-Callback", &ok),
                ("Upstash-Failure-Callback-Timeout", "x"),
            ],
        ),
    ];
    for (want, headers) in cases {
        let (status, body) = gw.publish(&ok, &headers, b"x".to_vec()).await;
        assert_eq!(status, want, "{headers:?}: {body}");
        assert!(body["error"].as_str().is_some_and(|e| !e.is_empty()));
    }
    let stats = gw.gateway.queue().inspect().stats().await.unwrap();
    assert_eq!(stats.pending + stats.ready, 0);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(receiver.to("/").is_empty());
    gw.shutdown().await;
}
