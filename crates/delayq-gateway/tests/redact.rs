//! `Upstash-Redact-Fields` against a real redis-server and a recording receiver: the
//! destination gets every value, while `GET /v2/messages`, the DLQ, the failure callback's
//! `sourceHeader`/`sourceBody` and `GET /v2/schedules` show the redacted ones as
//! `REDACTED:<hex SHA-256>`; a bad value is a 400 with nothing stored.

mod common;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use common::*;
use sha2::Digest;

fn redacted(value: &[u8]) -> String {
    let hex: String = sha2::Sha256::digest(value)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("REDACTED:{hex}")
}

#[tokio::test(flavor = "multi_thread")]
async fn redacted_fields_are_delivered_but_not_shown() {
    let redis = TestRedis::start();
    let receiver = Receiver::start().await;
    let keep = |c: delayq_gateway::GatewayConfig| {
        c.with_keep_delivered(std::time::Duration::from_secs(600))
    };
    let gw = TestGateway::start(&redis, &receiver, keep).await;
    let failure = format!("{}200/failure", receiver.base());
    let (status, answer) = gw
        .publish(
            &format!("{}500/redacted", receiver.base()),
            &[
                ("Upstash-Redact-Fields", "body, header[authorization]"),
                ("Upstash-Forward-Authorization", "Bearer s3cret"),
                ("Upstash-Forward-X-Plain", "shown"),
                ("Upstash-Retries", "0"),
                ("Upstash-Failure-Callback", &failure),
            ],
            b"private body".to_vec(),
        )
        .await;
    assert_eq!(status, 201, "{answer}");
    let id = answer["messageId"].as_str().unwrap();
    // Delivery sends the values themselves.
    let [got] = &receiver.wait_for("/500/redacted", 1).await[..] else {
        panic!("one attempt");
    };
    assert_eq!(got.header("authorization"), "Bearer s3cret");
    assert_eq!(got.body, b"private body");
    let hidden = redacted(b"Bearer s3cret");
    // The dead letter shows the header redacted, the other one as it is.
    let dead = gw.wait_dead(id).await;
    assert_eq!(
        dead["header"]["authorization"][0],
        hidden.as_str(),
        "{dead}"
    );
    assert_eq!(dead["header"]["x-plain"][0], "shown", "{dead}");
    let (_, one) = gw.call("GET", &format!("/v2/dlq/{id}")).await;
    assert_eq!(one["header"]["authorization"][0], hidden.as_str(), "{one}");
    assert!(!one.to_string().contains("s3cret"), "{one}");
    // So does the failure callback's copy of the source.
    let [cb] = &receiver.wait_for("/200/failure", 1).await[..] else {
        panic!("one failure callback");
    };
    let body: serde_json::Value = serde_json::from_slice(&cb.body).unwrap();
    assert_eq!(body["sourceHeader"]["authorization"], hidden.as_str());
    assert_eq!(body["sourceHeader"]["x-plain"], "shown");
    let source_body = STANDARD
        .decode(body["sourceBody"].as_str().unwrap())
        .unwrap();
    assert_eq!(source_body, redacted(b"private body").into_bytes());
    gw.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn pending_messages_and_schedules_are_shown_redacted() {
    let redis = TestRedis::start();
    let receiver = Receiver::start().await;
    let gw = TestGateway::start(&redis, &receiver, |c| c).await;
    let (status, answer) = gw
        .publish(
            &format!("{}200/later", receiver.base()),
            &[
                ("Upstash-Redact-Fields", "header"),
                ("Upstash-Forward-X-A", "a-value"),
                ("Upstash-Forward-X-B", "b-value"),
                ("Upstash-Delay", "1h"),
            ],
            b"later".to_vec(),
        )
        .await;
    assert_eq!(status, 201, "{answer}");
    let id = answer["messageId"].as_str().unwrap();
    let (status, message) = gw.call("GET", &format!("/v2/messages/{id}")).await;
    assert_eq!(status, 200, "{message}");
    assert_eq!(message["header"]["x-a"][0], redacted(b"a-value").as_str());
    assert_eq!(message["header"]["x-b"][0], redacted(b"b-value").as_str());

    let response = reqwest::Client::new()
        .post(format!(
            "{}/v2/schedules/{}200/scheduled",
            gw.base,
            receiver.base()
        ))
        .bearer_auth(TOKEN)
        .header("Upstash-Cron", "0 0 1 1 *")
        .header("Upstash-Redact-Fields", "body")
        .header("Upstash-Forward-X-Plain", "shown")
        .body("schedule secret")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let created: serde_json::Value =
        serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
    let schedule_id = created["scheduleId"].as_str().unwrap();
    let (_, schedule) = gw
        .call("GET", &format!("/v2/schedules/{schedule_id}"))
        .await;
    assert_eq!(
        schedule["body"],
        redacted(b"schedule secret").as_str(),
        "{schedule}"
    );
    assert_eq!(schedule["header"]["x-plain"][0], "shown", "{schedule}");
    gw.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bad_value_is_refused_with_nothing_stored() {
    let redis = TestRedis::start();
    let receiver = Receiver::start().await;
    let gw = TestGateway::start(&redis, &receiver, |c| c).await;
    for bad in ["", "bodies", "body,", "header[]", "header[a b]", "header[x"] {
        let (status, answer) = gw
            .publish(
                &format!("{}200/refused", receiver.base()),
                &[("Upstash-Redact-Fields", bad)],
                b"x".to_vec(),
            )
            .await;
        assert_eq!(status, 400, "{bad:?}: {answer}");
        assert!(
            answer["error"]
                .as_str()
                .unwrap()
                .contains("Upstash-Redact-Fields"),
            "{answer}"
        );
    }
    // Nothing was stored: no message in the gateway's queue, no event.
    assert_eq!(pending_entries(&redis).await, 0);
    let (_, events) = gw.call("GET", "/v2/events").await;
    assert_eq!(events["events"], serde_json::json!([]), "{events}");
    gw.shutdown().await;
}
