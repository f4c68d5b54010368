//! The native queues against a real redis-server: values offered over HTTP with the string,
//! bytes and json codecs are taken by delayq's own Redisson-layout consumers with Redisson's
//! codecs (the Java check is `tests/native/run.sh`); cancel by handle, sizes, and every
//! refusal a JSON 4xx with nothing stored.

mod common;

use common::*;
use delayq::codec::{ByteArrayCodec, JsonJacksonCodec, StringCodec};
use delayq::fred::interfaces::KeysInterface;
use delayq::DelayedQueue;
use serde_json::{json, Value};

const NATIVE: &str = "native-token-0123456789";
const PUBLISHER: &str = "publisher-token-0123456789";

async fn call(
    gw: &TestGateway,
    token: &str,
    method: &str,
    path: &str,
    body: &[u8],
) -> (u16, Value) {
    let response = reqwest::Client::new()
        .request(method.parse().unwrap(), format!("{}{path}", gw.base))
        .bearer_auth(token)
        .body(body.to_vec())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (
        status,
        serde_json::from_slice(&response.bytes().await.unwrap()).unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn values_reach_redisson_layout_consumers_in_their_codecs() {
    let redis = TestRedis::start();
    let receiver = Receiver::start().await;
    let gw = TestGateway::start(&redis, &receiver, |c| {
        c.with_native_token(NATIVE).allow_native_queue("jobs:*")
    })
    .await;
    let client = delayq::connect(&redis.url()).await.unwrap();

    let text = "grüße ✓ 17";
    let (status, offered) = call(
        &gw,
        NATIVE,
        "POST",
        "/v1/queues/jobs:text/offer?codec=string",
        text.as_bytes(),
    )
    .await;
    assert_eq!(status, 201, "{offered}");
    assert_eq!(offered["handle"].as_str().unwrap().len(), 18);
    let order = json!({"id": 17, "sku": "x-1", "tags": ["a", "b"], "price": 12.5});
    let body = serde_json::to_vec(&order).unwrap();
    // An admin token reaches the native queues too.
    let offered_ms = now_ms();
    let (status, _) = call(
        &gw,
        TOKEN,
        "POST",
        "/v1/queues/jobs:json/offer?codec=json&delay=1s",
        &body,
    )
    .await;
    assert_eq!(status, 201);
    let raw = vec![0u8, 0xff, 0x10, b'\n'];
    let (status, _) = call(
        &gw,
        NATIVE,
        "POST",
        "/v1/queues/jobs:bytes/offer?codec=bytes",
        &raw,
    )
    .await;
    assert_eq!(status, 201);

    // The consumers of each queue, with the codec its Java consumers would have.
    let strings = DelayedQueue::builder(client.clone(), "jobs:text", StringCodec)
        .transfer(false)
        .build()
        .await
        .unwrap();
    let taken = strings
        .consumer()
        .await
        .unwrap()
        .poll(PATIENCE)
        .await
        .unwrap();
    assert_eq!(taken.as_deref(), Some(text));
    let jsons = DelayedQueue::builder(
        client.clone(),
        "jobs:json",
        JsonJacksonCodec::<Value>::new(),
    )
    .transfer(false)
    .build()
    .await
    .unwrap();
    // The value waits its second of delay (pending, or ready once due: which of the two
    // depends on the machine's speed), then the gateway's transfer moves it.
    let (_, size) = call(&gw, NATIVE, "GET", "/v1/queues/jobs:json", b"").await;
    let held = size["pending"].as_u64().unwrap() + size["ready"].as_u64().unwrap();
    assert_eq!(held, 1, "{size}");
    let taken = jsons
        .consumer()
        .await
        .unwrap()
        .poll(PATIENCE)
        .await
        .unwrap();
    assert_eq!(taken, Some(order));
    // Not taken before its delay was over.
    let waited_ms = now_ms() - offered_ms;
    assert!(waited_ms >= 1000, "taken {waited_ms} ms after the offer");
    let bytes = DelayedQueue::builder(client.clone(), "jobs:bytes", ByteArrayCodec)
        .transfer(false)
        .build()
        .await
        .unwrap();
    let taken = bytes
        .consumer()
        .await
        .unwrap()
        .poll(PATIENCE)
        .await
        .unwrap();
    assert_eq!(taken, Some(raw));

    // Cancel by handle while pending; a second cancel finds nothing.
    let (_, later) = call(
        &gw,
        NATIVE,
        "POST",
        "/v1/queues/jobs:text/offer?codec=string&delay=1h",
        b"later",
    )
    .await;
    let handle = later["handle"].as_str().unwrap();
    // Pending, not ready: due in an hour.
    let (_, size) = call(&gw, NATIVE, "GET", "/v1/queues/jobs:text", b"").await;
    assert_eq!(
        (size["pending"].as_u64(), size["ready"].as_u64()),
        (Some(1), Some(0)),
        "{size}"
    );
    let cancel = format!("/v1/queues/jobs:text/handles/{handle}");
    assert_eq!(call(&gw, NATIVE, "DELETE", &cancel, b"").await.0, 200);
    let (status, again) = call(&gw, NATIVE, "DELETE", &cancel, b"").await;
    assert_eq!(status, 404, "{again}");
    let (_, size) = call(&gw, NATIVE, "GET", "/v1/queues/jobs:text", b"").await;
    assert_eq!(
        (size["pending"].as_u64(), size["ready"].as_u64()),
        (Some(0), Some(0)),
        "{size}"
    );
    gw.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn refusals_store_nothing() {
    let redis = TestRedis::start();
    let receiver = Receiver::start().await;
    let gw = TestGateway::start(&redis, &receiver, |c| {
        c.with_native_token(NATIVE)
            .with_publish_token(PUBLISHER)
            .allow_native_queue("jobs")
    })
    .await;
    let cases: Vec<(u16, &str, &str, &str, &[u8])> = vec![
        (
            403,
            NATIVE,
            "POST",
            "/v1/queues/other/offer?codec=string",
            b"x",
        ),
        (
            403,
            NATIVE,
            "POST",
            "/v1/queues/jobs2/offer?codec=string",
            b"x",
        ),
        (
            403,
            PUBLISHER,
            "POST",
            "/v1/queues/jobs/offer?codec=string",
            b"x",
        ),
        (
            401,
            "nobody-token-0123456789",
            "POST",
            "/v1/queues/jobs/offer?codec=string",
            b"x",
        ),
        (400, NATIVE, "POST", "/v1/queues/jobs/offer", b"x"),
        (
            400,
            NATIVE,
            "POST",
            "/v1/queues/jobs/offer?codec=kryo",
            b"x",
        ),
        (
            400,
            NATIVE,
            "POST",
            "/v1/queues/jobs/offer?codec=string",
            &[0xff, 0xfe],
        ),
        (
            400,
            NATIVE,
            "POST",
            "/v1/queues/jobs/offer?codec=json",
            b"{\"a\":",
        ),
        (
            400,
            NATIVE,
            "POST",
            "/v1/queues/jobs/offer?codec=json&delay=soon",
            b"1",
        ),
        (
            400,
            NATIVE,
            "POST",
            "/v1/queues/jobs/offer?codec=json&delay=400d",
            b"1",
        ),
        (
            400,
            NATIVE,
            "POST",
            "/v1/queues/jobs/offer?codec=json&color=red",
            b"1",
        ),
        (
            400,
            NATIVE,
            "DELETE",
            "/v1/queues/jobs/handles/not-a-handle",
            b"",
        ),
        (
            404,
            NATIVE,
            "DELETE",
            "/v1/queues/jobs/handles/0123456789abcdef01",
            b"",
        ),
        (403, NATIVE, "GET", "/v1/queues/other", b""),
    ];
    for (expected, token, method, path, body) in cases {
        let (status, error) = call(&gw, token, method, path, body).await;
        assert_eq!(status, expected, "{method} {path}: {error}");
        assert!(
            error["error"].as_str().is_some_and(|e| !e.is_empty()),
            "{error}"
        );
    }
    // None of the queues' keys (Redisson's names) exists.
    let client = delayq::connect(&redis.url()).await.unwrap();
    let mut keys = Vec::new();
    for name in ["jobs", "jobs2", "other"] {
        keys.push(name.to_owned());
        keys.push(format!("redisson_delay_queue_timeout:{{{name}}}"));
        keys.push(format!("redisson_delay_queue:{{{name}}}"));
    }
    let found: i64 = client.exists(keys).await.unwrap();
    assert_eq!(found, 0);
    // Without any pattern, every native request is refused.
    let closed = TestGateway::start(&redis, &receiver, |c| c.with_native_token(NATIVE)).await;
    let (status, error) = call(&closed, NATIVE, "GET", "/v1/queues/jobs", b"").await;
    assert_eq!(status, 403);
    assert!(
        error["error"].as_str().unwrap().contains("--native-queue"),
        "{error}"
    );
    closed.shutdown().await;
    gw.shutdown().await;
}
