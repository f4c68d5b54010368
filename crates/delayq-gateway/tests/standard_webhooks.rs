//! The opt-in Standard Webhooks signature on real deliveries: every attempt carries webhook-id
//! (the message id, the same on a retry), webhook-timestamp and a webhook-signature that
//! verifies (checked here with the hmac crate; `tests/sdk/python/test_standard_webhooks.py`
//! checks it with the spec's reference library); without the secret, none of them.

mod common;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use common::*;
use delayq_gateway::{Gateway, GatewayConfig};
use hmac::Mac;

/// 32 bytes of 0x2a.
const KEY: [u8; 32] = [0x2a; 32];

fn secret() -> String {
    format!("whsec_{}", STANDARD.encode(KEY))
}

/// 32 bytes of 0x17: the next secret of a rotation.
const NEXT_KEY: [u8; 32] = [0x17; 32];

/// Whether `got`'s webhook-signature is v1 of id.timestamp.body with `KEY`.
fn verifies(got: &Recorded) -> bool {
    verifies_with(got, &KEY)
}

/// Whether one of `got`'s webhook-signatures (space-separated, as the spec has them during a
/// rotation) is v1 of id.timestamp.body with `key`.
fn verifies_with(got: &Recorded, key: &[u8]) -> bool {
    let signed = format!(
        "{}.{}.",
        got.header("webhook-id"),
        got.header("webhook-timestamp")
    );
    got.header("webhook-signature").split(' ').any(|versioned| {
        let Some(signature) = versioned.strip_prefix("v1,") else {
            return false;
        };
        let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(key).unwrap();
        mac.update(signed.as_bytes());
        mac.update(&got.body);
        mac.verify_slice(&STANDARD.decode(signature).unwrap())
            .is_ok()
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn every_attempt_is_signed_with_the_same_id() {
    let redis = TestRedis::start();
    let receiver = Receiver::start().await;
    let gw = TestGateway::start(&redis, &receiver, |c| {
        c.with_standard_webhooks_secret(secret())
    })
    .await;
    let url = format!("{}500-200/sw", receiver.base());
    let forged = [("Upstash-Forward-Webhook-Signature", "v1,Zm9yZ2Vk")];
    let (status, answer) = gw.publish(&url, &forged, b"{\"a\": 1}".to_vec()).await;
    assert_eq!(status, 201, "{answer}");
    let attempts = receiver.wait_for("/500-200/sw", 2).await;
    let now = now_ms() / 1000;
    for got in &attempts {
        assert!(verifies(got), "{:?}", got.headers);
        assert_eq!(got.header("webhook-id"), answer["messageId"]);
        assert_eq!(got.header("webhook-id"), got.header("Upstash-Message-Id"));
        let at: i64 = got.header("webhook-timestamp").parse().unwrap();
        assert!((now - at).abs() < 60, "{at}");
        // One signature, the gateway's: the forwarded one is dropped.
        assert_eq!(got.headers.get_all("webhook-signature").iter().count(), 1);
        assert!(!got.header("Upstash-Signature").is_empty());
    }
    // A changed body does not verify.
    let mut tampered = attempts[0].clone();
    tampered.body.push(b' ');
    assert!(!verifies(&tampered));
    gw.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn during_a_rotation_every_attempt_carries_both_signatures() {
    let redis = TestRedis::start();
    let receiver = Receiver::start().await;
    let next = format!("whsec_{}", STANDARD.encode(NEXT_KEY));
    let gw = TestGateway::start(&redis, &receiver, |c| {
        c.with_standard_webhooks_secret(secret())
            .with_standard_webhooks_next_secret(next)
    })
    .await;
    let url = format!("{}500-200/rotating", receiver.base());
    let (status, answer) = gw.publish(&url, &[], b"{\"b\": 2}".to_vec()).await;
    assert_eq!(status, 201, "{answer}");
    for got in &receiver.wait_for("/500-200/rotating", 2).await {
        let signatures: Vec<&str> = got.header("webhook-signature").split(' ').collect();
        assert_eq!(signatures.len(), 2, "{signatures:?}");
        // Each secret alone verifies: a receiver on the old one and one on the new one.
        assert!(verifies_with(got, &KEY), "{signatures:?}");
        assert!(verifies_with(got, &NEXT_KEY), "{signatures:?}");
        assert!(!verifies_with(got, &[0x01; 32]));
    }
    gw.shutdown().await;
    // A next secret that is not one, or one without a current secret, is refused.
    let client = delayq::connect(&redis.url()).await.unwrap();
    let configs = [
        GatewayConfig::new(TOKEN, CURRENT_KEY)
            .with_standard_webhooks_secret(secret())
            .with_standard_webhooks_next_secret("whsec_c2hvcnQ="),
        GatewayConfig::new(TOKEN, CURRENT_KEY).with_standard_webhooks_next_secret(secret()),
    ];
    for config in configs {
        let config = config.allow_destination(receiver.base());
        let err = Gateway::new(client.clone(), config).await.unwrap_err();
        assert!(err.to_string().contains("Standard Webhooks"), "{err}");
        assert!(!err.to_string().contains(&secret()), "{err}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn off_by_default_and_a_bad_secret_is_refused() {
    let redis = TestRedis::start();
    let receiver = Receiver::start().await;
    let gw = TestGateway::start(&redis, &receiver, |c| c).await;
    let (status, _) = gw
        .publish(&format!("{}200/plain", receiver.base()), &[], b"x".to_vec())
        .await;
    assert_eq!(status, 201);
    let [got] = &receiver.wait_for("/200/plain", 1).await[..] else {
        panic!("one delivery");
    };
    for name in ["webhook-id", "webhook-timestamp", "webhook-signature"] {
        assert!(got.headers.get(name).is_none(), "{name}");
    }
    gw.shutdown().await;
    let client = delayq::connect(&redis.url()).await.unwrap();
    for bad in ["whsec_c2hvcnQ=", "whsec_***", ""] {
        let config = GatewayConfig::new(TOKEN, CURRENT_KEY)
            .allow_destination(receiver.base())
            .with_standard_webhooks_secret(bad);
        let err = Gateway::new(client.clone(), config).await.unwrap_err();
        assert!(err.to_string().contains("Standard Webhooks"), "{err}");
    }
}
