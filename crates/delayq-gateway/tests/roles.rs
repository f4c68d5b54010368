//! Roles: a publish token publishes and reads its own messages only, a native token reaches the
//! native queues only, and a route refused to a token's role is a 403 JSON error with nothing
//! done (the message it would have cancelled is still pending).

mod common;

use common::*;
use delayq_gateway::{Gateway, GatewayConfig};

const PUBLISHER: &str = "publisher-token-0123456789";
const OTHER_PUBLISHER: &str = "other-publisher-0123456789";
const NATIVE: &str = "native-token-0123456789";

async fn call(
    gw: &TestGateway,
    token: &str,
    method: &str,
    path: &str,
    body: &str,
) -> (u16, serde_json::Value) {
    let response = reqwest::Client::new()
        .request(method.parse().unwrap(), format!("{}{path}", gw.base))
        .bearer_auth(token)
        .header("Content-Type", "application/json")
        // Publishes are due an hour later: still pending while others try to cancel them,
        // however slow the machine.
        .header("Upstash-Delay", "1h")
        .body(body.to_owned())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let body = response.bytes().await.unwrap();
    (status, serde_json::from_slice(&body).unwrap())
}

#[tokio::test(flavor = "multi_thread")]
async fn each_role_reaches_its_routes_only() {
    let redis = TestRedis::start();
    let receiver = Receiver::start().await;
    let gw = TestGateway::start(&redis, &receiver, |c| {
        c.with_publish_token(PUBLISHER)
            .with_publish_token(OTHER_PUBLISHER)
            .with_native_token(NATIVE)
    })
    .await;
    let later = format!("/v2/publish/{}200/roles", receiver.base());
    // A publish token publishes (delayed: still pending while the others try to cancel it).
    let (status, mine) = call(&gw, PUBLISHER, "POST", &later, "x").await;
    assert_eq!(status, 201, "{mine}");
    let id = mine["messageId"].as_str().unwrap().to_owned();
    let batch = format!(
        r#"[{{"destination": "{}200/roles-batch", "body": "b"}}]"#,
        receiver.base()
    );
    let (status, answer) = call(&gw, PUBLISHER, "POST", "/v2/batch", &batch).await;
    assert_eq!(status, 201, "{answer}");

    // It reads its own message; another publisher's token does not see it; the admin does.
    let get = format!("/v2/messages/{id}");
    assert_eq!(call(&gw, PUBLISHER, "GET", &get, "").await.0, 200);
    let (status, theirs) = call(&gw, OTHER_PUBLISHER, "GET", &get, "").await;
    assert_eq!(status, 404, "{theirs}");
    assert_eq!(gw.call("GET", &get).await.0, 200);
    // An admin's message is no publisher's (due in an hour: still pending at the count below,
    // however slow the machine).
    let (status, admins) = gw
        .publish(
            &format!("{}200/roles-admin", receiver.base()),
            &[("Upstash-Delay", "1h")],
            b"a".to_vec(),
        )
        .await;
    assert_eq!(status, 201);
    let admins_get = format!("/v2/messages/{}", admins["messageId"].as_str().unwrap());
    assert_eq!(call(&gw, PUBLISHER, "GET", &admins_get, "").await.0, 404);

    // Admin routes: 403 with a JSON error naming the roles, and nothing done.
    for (method, path, body) in [
        ("DELETE", get.as_str(), ""),
        ("DELETE", "/v2/messages", r#"{"messageIds": ["x"]}"#),
        ("GET", "/v2/dlq", ""),
        ("POST", "/v2/dlq/retry/x", ""),
        ("POST", "/v1/queues/orders/offer", "v"),
    ] {
        let (status, error) = call(&gw, PUBLISHER, method, path, body).await;
        assert_eq!(status, 403, "{method} {path}: {error}");
        let text = error["error"].as_str().unwrap();
        assert!(text.contains("this token's role is publish"), "{text}");
    }
    // A native token publishes nothing.
    let (status, error) = call(&gw, NATIVE, "POST", &later, "x").await;
    assert_eq!(status, 403, "{error}");
    assert!(
        error["error"].as_str().unwrap().contains("native"),
        "{error}"
    );
    // An unknown token, or a publisher's with a character more, is no role's.
    let longer = format!("{PUBLISHER}x");
    for token in ["nobody-token-0123456789", longer.as_str()] {
        let (status, error) = call(&gw, token, "POST", &later, "x").await;
        assert_eq!(status, 401, "{error}");
    }

    // The refused cancel did nothing: the message is still pending.
    assert_eq!(call(&gw, PUBLISHER, "GET", &get, "").await.0, 200);
    assert_eq!(gw.call("GET", &get).await.0, 200);
    receiver.wait_for("/200/roles-batch", 1).await;
    // The native token's publish stored nothing: what is pending is the publisher's message and
    // the admin's (the batch's was delivered).
    assert_eq!(pending_entries(&redis).await, 2);
    // /metrics and other routes a program guards with `authorizes` are the admin's.
    let mut headers = axum::http::HeaderMap::new();
    headers.insert(
        "authorization",
        format!("Bearer {PUBLISHER}").parse().unwrap(),
    );
    assert!(!gw.gateway.authorizes(&headers));
    headers.insert("authorization", format!("Bearer {TOKEN}").parse().unwrap());
    assert!(gw.gateway.authorizes(&headers));
    gw.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_token_given_to_two_roles_is_refused() {
    let redis = TestRedis::start();
    let client = delayq::connect(&redis.url()).await.unwrap();
    let config = GatewayConfig::new(TOKEN, CURRENT_KEY)
        .allow_destination("http://127.0.0.1:1/")
        .with_publish_token(TOKEN);
    let err = Gateway::new(client.clone(), config).await.unwrap_err();
    assert!(err.to_string().contains("twice"), "{err}");
    let short = GatewayConfig::new(TOKEN, CURRENT_KEY)
        .allow_destination("http://127.0.0.1:1/")
        .with_native_token("short");
    assert!(Gateway::new(client, short).await.is_err());
}
