//! The opt-in [Standard Webhooks](https://www.standardwebhooks.com) signature, for receivers
//! that verify that rather than QStash's JWT: `webhook-id` (the message id, the same for every
//! attempt, so that a receiver can drop a redelivery), `webhook-timestamp` (the attempt's time,
//! Unix seconds) and `webhook-signature` (`v1,` and the base64 HMAC-SHA256 of
//! `ID.TIMESTAMP.BODY` keyed with the secret's bytes). The secret is `whsec_` and base64 (the
//! prefix may be left out) of 24 to 64 bytes, as the spec asks.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The key of `secret` (`whsec_BASE64`), or why it is not one.
pub(crate) fn key(secret: &str) -> Result<Vec<u8>, String> {
    let encoded = secret.strip_prefix("whsec_").unwrap_or(secret);
    let key = STANDARD
        .decode(encoded)
        .map_err(|_| "the Standard Webhooks secret is not whsec_ and base64".to_owned())?;
    match key.len() {
        24..=64 => Ok(key),
        n => Err(format!(
            "the Standard Webhooks secret has {n} bytes; the spec asks for 24 to 64"
        )),
    }
}

/// The three headers of one attempt to deliver `body` as message `id` at `timestamp`.
pub(crate) fn headers(
    key: &[u8],
    id: &str,
    timestamp: u64,
    body: &[u8],
) -> [(&'static str, String); 3] {
    let signature = sign(key, id, timestamp, body);
    [
        ("webhook-id", id.to_owned()),
        ("webhook-timestamp", timestamp.to_string()),
        ("webhook-signature", signature),
    ]
}

fn sign(key: &[u8], id: &str, timestamp: u64, body: &[u8]) -> String {
    // HMAC takes a key of any length: `new_from_slice` refuses none.
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(key) else {
        return String::new();
    };
    mac.update(format!("{id}.{timestamp}.").as_bytes());
    mac.update(body);
    format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_libraries_vector() {
        // The vector of the Standard Webhooks libraries' tests, recomputed with the PyPI
        // `standardwebhooks` 1.1.0 (`Webhook.sign`).
        let key = key("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        let signature = sign(
            &key,
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1_614_265_330,
            br#"{"test": 2432232314}"#,
        );
        assert_eq!(signature, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    }

    #[test]
    fn secrets_are_checked() {
        assert!(key("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").is_ok());
        assert!(key("whsec_not base64!").is_err());
        assert!(key("whsec_c2hvcnQ=").is_err()); // 5 bytes
        let [id, ts, sig] = headers(&[7; 32], "msg_1", 5, b"");
        assert_eq!((id.0, id.1.as_str()), ("webhook-id", "msg_1"));
        assert_eq!((ts.0, ts.1.as_str()), ("webhook-timestamp", "5"));
        assert!(sig.1.starts_with("v1,") && sig.1.len() == 3 + 44);
    }
}
