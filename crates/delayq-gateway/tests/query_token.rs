//! `?qstash_token=TOKEN`: the token in the query, as QStash accepts it where a client cannot set
//! the header. The same roles as the header's; taken out of the query before any route reads
//! it, so a publish's destination never receives it; a wrong or doubled one refused with
//! nothing stored.

mod common;

use common::*;

const PUBLISHER: &str = "publisher-token-0123456789";

/// `method path` with no `Authorization` header (unless `bearer`), `body`: status and JSON.
async fn call(
    gw: &TestGateway,
    method: &str,
    path: &str,
    bearer: Option<&str>,
    body: &str,
) -> (u16, serde_json::Value) {
    let mut request = reqwest::Client::new()
        .request(method.parse().unwrap(), format!("{}{path}", gw.base))
        .body(body.to_owned());
    if let Some(token) = bearer {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (
        status,
        serde_json::from_slice(&response.bytes().await.unwrap()).unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn token_in_the_query_with_the_same_roles_and_never_forwarded() {
    let redis = TestRedis::start();
    let receiver = Receiver::start().await;
    let gw = TestGateway::start(&redis, &receiver, |c| c.with_publish_token(PUBLISHER)).await;
    let publish = |query: &str| format!("/v2/publish/{}200/q?x=1{query}&y=%2F", receiver.base());

    // Refused, nothing stored: a wrong token, an empty one, one given twice, a wrong header
    // beside a right query token (the header wins).
    let wrong = [
        (publish("&qstash_token=not-the-token-0123456789"), None),
        (publish("&qstash_token="), None),
        (
            publish(&format!("&qstash_token={TOKEN}&qstash_token={TOKEN}")),
            None,
        ),
        (
            publish(&format!("&qstash_token={TOKEN}")),
            Some("not-the-token-0123456789"),
        ),
    ];
    for (path, bearer) in &wrong {
        let (status, answer) = call(&gw, "POST", path, *bearer, "no").await;
        assert!(matches!(status, 400 | 401), "{path}: {status} {answer}");
        assert!(answer["error"].is_string(), "{path}: {answer}");
        assert!(
            !answer.to_string().contains(TOKEN),
            "{path}: the answer repeats the token: {answer}"
        );
    }
    assert_eq!(pending_entries(&redis).await, 0);
    assert_eq!(
        gw.call("GET", "/v2/events").await.1["events"],
        serde_json::json!([])
    );

    // The admin token in the query publishes; the destination gets its query without it.
    let path = publish(&format!("&qstash_token={TOKEN}"));
    let (status, answer) = call(&gw, "POST", &path, None, "yes").await;
    assert_eq!(status, 201, "{answer}");
    let id = answer["messageId"].as_str().unwrap().to_owned();
    assert!(!answer.to_string().contains(TOKEN), "{answer}");
    let got = receiver.wait_for("/200/q", 1).await;
    assert_eq!(got[0].target, "/200/q?x=1&y=%2F");
    assert_eq!(got[0].body, b"yes");

    // A publish token in the query has the publish role: it publishes, and is refused
    // the admin's routes (403, nothing done).
    let path = format!(
        "/v2/publish/{}200/p?qstash_token={PUBLISHER}",
        receiver.base()
    );
    let (status, mine) = call(&gw, "POST", &path, None, "p").await;
    assert_eq!(status, 201, "{mine}");
    assert!(mine["messageId"].is_string(), "{mine}");
    receiver.wait_for("/200/p", 1).await;
    let dlq = format!("/v2/dlq?qstash_token={PUBLISHER}");
    let (status, answer) = call(&gw, "GET", &dlq, None, "").await;
    assert_eq!(status, 403, "{answer}");
    let cancel = format!("/v2/messages/{id}?qstash_token={PUBLISHER}");
    assert_eq!(call(&gw, "DELETE", &cancel, None, "").await.0, 403);
    // A route that refuses unknown parameters does not see the token as one.
    let delete = format!("/v2/dlq?dlqIds=msg_none&qstash_token={TOKEN}");
    let (status, answer) = call(&gw, "DELETE", &delete, None, "").await;
    assert_eq!((status, &answer["deleted"]), (200, &0.into()), "{answer}");
    gw.shutdown().await;
}
