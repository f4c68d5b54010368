//! The opt-in [Standard Webhooks](https://www.standardwebhooks.com) signature, for receivers
//! that verify that rather than QStash's JWT: `webhook-id` (the message id, the same for every
//! attempt, so that a receiver can drop a redelivery), `webhook-timestamp` (the attempt's time,
//! Unix seconds) and `webhook-signature` (`v1,` and the base64 HMAC-SHA256 of
//! `ID.TIMESTAMP.BODY` keyed with the secret's bytes). The secret is `whsec_` and base64 (the
//! prefix may be left out) of 24 to 64 bytes, as the spec asks. During a rotation a second
//! (next) secret signs too: the header then holds both, space-separated (`v1,SIG1 v1,SIG2`),
//! so that a receiver holding either secret verifies every attempt.

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

/// The keys every attempt is signed with: the secret's, then the next secret's during a
/// rotation. Holds no secret text, only the keys; its `Debug` shows neither.
pub(crate) struct Signer {
    keys: Vec<Vec<u8>>,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Signer([{} redacted])", self.keys.len())
    }
}

impl Signer {
    /// The signer of `current` and, during a rotation, `next`, or why one is not a secret. A
    /// next secret equal to the current one signs once.
    pub(crate) fn new(current: &str, next: Option<&str>) -> Result<Signer, String> {
        let mut keys = vec![key(current)?];
        if let Some(next) = next {
            let next = key(next).map_err(|why| format!("next: {why}"))?;
            if next != keys[0] {
                keys.push(next);
            }
        }
        Ok(Signer { keys })
    }

    /// The three headers of one attempt to deliver `body` as message `id` at `timestamp`.
    pub(crate) fn headers(
        &self,
        id: &str,
        timestamp: u64,
        body: &[u8],
    ) -> [(&'static str, String); 3] {
        let signatures: Vec<String> = self
            .keys
            .iter()
            .map(|key| sign(key, id, timestamp, body))
            .collect();
        [
            ("webhook-id", id.to_owned()),
            ("webhook-timestamp", timestamp.to_string()),
            ("webhook-signature", signatures.join(" ")),
        ]
    }
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
        let one = format!("whsec_{}", STANDARD.encode([7; 32]));
        let [id, ts, sig] = Signer::new(&one, None).unwrap().headers("msg_1", 5, b"");
        assert_eq!((id.0, id.1.as_str()), ("webhook-id", "msg_1"));
        assert_eq!((ts.0, ts.1.as_str()), ("webhook-timestamp", "5"));
        assert!(sig.1.starts_with("v1,") && sig.1.len() == 3 + 44);
        let err = Signer::new(&one, Some("whsec_c2hvcnQ=")).unwrap_err();
        assert!(
            err.starts_with("next: the Standard Webhooks secret"),
            "{err}"
        );
    }

    #[test]
    fn a_rotation_signs_with_both_keys_in_order() {
        let current = format!("whsec_{}", STANDARD.encode([7; 32]));
        let next = format!("whsec_{}", STANDARD.encode([9; 32]));
        let [_, _, sig] = Signer::new(&current, Some(&next))
            .unwrap()
            .headers("msg_1", 5, b"x");
        let expected = [
            sign(&[7; 32], "msg_1", 5, b"x"),
            sign(&[9; 32], "msg_1", 5, b"x"),
        ];
        assert_eq!(sig.1, expected.join(" "));
        // The same secret twice signs once.
        let [_, _, sig] = Signer::new(&current, Some(&current))
            .unwrap()
            .headers("msg_1", 5, b"x");
        assert_eq!(sig.1, expected[0]);
    }
}
