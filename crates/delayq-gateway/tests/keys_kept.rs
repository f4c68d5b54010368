//! The signing keys kept in Redis (get, rotate, shared by every process of a queue, deliveries
//! signed with the rotated key) and delivered messages kept readable for a while.

mod common;

use common::*;
use std::time::{Duration, Instant};

/// Whether `token`'s HS256 signature is `key`'s.
fn signed_with(token: &str, key: &str) -> bool {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine;
    use hmac::Mac;
    let (signed, signature) = token.rsplit_once('.').unwrap();
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(key.as_bytes()).unwrap();
    mac.update(signed.as_bytes());
    mac.verify_slice(&URL_SAFE_NO_PAD.decode(signature).unwrap())
        .is_ok()
}

#[tokio::test(flavor = "multi_thread")]
async fn rotation_is_shared_and_signs_with_the_next_key() {
    let redis = TestRedis::start();
    let receiver = Receiver::start().await;
    let one = TestGateway::start(&redis, &receiver, |c| c).await;
    let (status, keys) = one.call("GET", "/v2/keys").await;
    assert_eq!(status, 200, "{keys}");
    assert_eq!(keys["current"], CURRENT_KEY);
    assert_eq!(keys["next"], NEXT_KEY);

    let (status, rotated) = one.call("POST", "/v2/keys/rotate").await;
    assert_eq!(status, 200, "{rotated}");
    assert_eq!(rotated["current"], NEXT_KEY);
    let fresh = rotated["next"].as_str().unwrap().to_owned();
    assert!(fresh.starts_with("sig_") && fresh.len() > 20, "{fresh}");
    assert_ne!(fresh, CURRENT_KEY);
    assert_ne!(fresh, NEXT_KEY);
    assert_eq!(one.call("GET", "/v2/keys").await.1, rotated);

    // A second process started with the same key files signs with the rotated keys.
    let two = TestGateway::start(&redis, &receiver, |c| c).await;
    assert_eq!(two.call("GET", "/v2/keys").await.1, rotated);
    let url = format!("{}200/rotated", receiver.base());
    let (status, answer) = two.publish(&url, &[], b"after".to_vec()).await;
    assert_eq!(status, 201, "{answer}");
    let got = receiver.wait_for("/200/rotated", 1).await;
    let token = got[0].header("upstash-signature");
    verify(token, NEXT_KEY, &url, b"after");
    assert!(!signed_with(token, CURRENT_KEY));

    // Rotating again: the key made by the first rotation signs.
    let (_, again) = two.call("POST", "/v2/keys/rotate").await;
    assert_eq!(again["current"], fresh.as_str());
    assert_eq!(one.call("GET", "/v2/keys").await.1, again);
    let url = format!("{}200/twice", receiver.base());
    one.publish(&url, &[], b"twice".to_vec()).await;
    let got = receiver.wait_for("/200/twice", 1).await;
    let token = got[0].header("upstash-signature");
    verify(token, &fresh, &url, b"twice");
    assert!(!signed_with(token, NEXT_KEY));
    // Only POST rotates, and only with the token.
    let get = reqwest::Client::new()
        .get(format!("{}/v2/keys/rotate", one.base))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(get.status().as_u16(), 405);
    let anonymous = reqwest::Client::new()
        .post(format!("{}/v2/keys/rotate", one.base))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status().as_u16(), 401);
    assert_eq!(one.call("GET", "/v2/keys").await.1, again);
    one.shutdown().await;
    two.shutdown().await;
}

/// Waits until the newest event of message `id` is DELIVERED: written after its record moved
/// to the kept ones (the attempt settled after the receiver answered).
async fn wait_delivered(gw: &TestGateway, id: &str) {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let (_, events) = gw.call("GET", &format!("/v2/events?messageId={id}")).await;
        if events["events"][0]["state"] == "DELIVERED" {
            return;
        }
        assert!(Instant::now() < deadline, "{id} not delivered: {events}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn delivered_messages_stay_readable_for_the_configured_time() {
    let redis = TestRedis::start();
    let receiver = Receiver::start().await;
    // Kept an hour: read after the delivery however slow the machine (with a few seconds, the
    // reads below may come after the time on a loaded machine).
    let gw = TestGateway::start(&redis, &receiver, |c| {
        c.with_keep_delivered(Duration::from_secs(3600))
    })
    .await;
    let url = format!("{}200/kept?x=1", receiver.base());
    let (status, answer) = gw
        .publish(&url, &[("Upstash-Forward-X-A", "1")], b"k".to_vec())
        .await;
    assert_eq!(status, 201, "{answer}");
    let id = answer["messageId"].as_str().unwrap().to_owned();
    wait_delivered(&gw, &id).await;
    // Readable after the delivery.
    let (status, message) = gw.call("GET", &format!("/v2/messages/{id}")).await;
    assert_eq!(status, 200, "{message}");
    assert_eq!(message["messageId"], id.as_str());
    assert_eq!(message["url"], url);
    assert_eq!(
        message["header"]["x-a"],
        serde_json::json!(["1"]),
        "{message}"
    );
    // Not cancellable: it is no longer to be delivered.
    assert_eq!(
        gw.call("DELETE", &format!("/v2/messages/{id}")).await.0,
        404
    );
    assert_eq!(gw.call("GET", &format!("/v2/messages/{id}")).await.0, 200);
    gw.shutdown().await;

    // Gone after the time: kept 2 s by a gateway of another queue.
    let keep = Duration::from_secs(2);
    let brief = TestGateway::start(&redis, &receiver, |c| {
        c.with_queue("brief").with_keep_delivered(keep)
    })
    .await;
    let (_, answer) = brief
        .publish(&format!("{}200/brief", receiver.base()), &[], vec![])
        .await;
    let id = answer["messageId"].as_str().unwrap().to_owned();
    let got = receiver.wait_for("/200/brief", 1).await;
    wait_delivered(&brief, &id).await;
    let deadline = Instant::now() + keep + PATIENCE;
    while brief.call("GET", &format!("/v2/messages/{id}")).await.0 != 404 {
        assert!(Instant::now() < deadline, "{id} still readable");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Not before it: kept from the move, which came after the receiver got the request (its
    // time there is the earliest the move can have been, whenever this test saw it; 10 ms for
    // rounding to whole milliseconds).
    let kept_ms = now_ms() - got[0].at_ms;
    let keep_ms = keep.as_millis() as i64;
    assert!(kept_ms >= keep_ms - 10, "gone {kept_ms} ms after delivery");
    brief.shutdown().await;
}
