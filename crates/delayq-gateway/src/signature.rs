//! `Upstash-Signature`: an HS256 JWT (RFC 7519) made for every attempt, as QStash's receivers
//! verify it. Claims: `iss` "Upstash", `sub` the destination (query included), `exp` now + 300 s,
//! `nbf` and `iat` now, `jti` a unique id, `body` base64url(SHA-256(body)) without padding. The
//! key is the signing key string's UTF-8 bytes (not base64-decoded).

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

/// How long a token is valid: QStash's 5 minutes.
const LIFETIME_SECS: u64 = 300;

/// The JWT for one attempt to deliver `body` to `url`, signed with `key`, at `now_secs`.
pub(crate) fn sign(key: &str, url: &str, body: &[u8], now_secs: u64) -> String {
    sign_with_jti(key, url, body, now_secs, &crate::envelope::new_id("jwt_"))
}

fn sign_with_jti(key: &str, url: &str, body: &[u8], now_secs: u64, jti: &str) -> String {
    let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"HS256","typ":"JWT"}"#);
    // Written out by hand so that the claims' order never depends on serde_json's features.
    let quoted = |text: &str| serde_json::Value::from(text).to_string();
    let claims = format!(
        r#"{{"iss":"Upstash","sub":{},"exp":{},"nbf":{now_secs},"iat":{now_secs},"jti":{},"body":"{}"}}"#,
        quoted(url),
        now_secs + LIFETIME_SECS,
        quoted(jti),
        URL_SAFE_NO_PAD.encode(Sha256::digest(body)),
    );
    let claims = URL_SAFE_NO_PAD.encode(claims);
    let signed = format!("{header}.{claims}");
    // HMAC takes a key of any length: `new_from_slice` refuses none.
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(key.as_bytes()) else {
        return format!("{signed}.");
    };
    mac.update(signed.as_bytes());
    let signature = URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes());
    format!("{signed}.{signature}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_token() {
        // Recomputed independently with Python's hmac/hashlib (see the SDK tests for the
        // official receivers verifying fresh tokens).
        let token = sign_with_jti(
            "sig_7kYjw48mhY7kAjqNGcy6cr29RJ6r",
            "http://127.0.0.1:9000/hook?x=1",
            b"hello",
            1_700_000_000,
            "jwt_fixed",
        );
        let parts: Vec<&str> = token.split('.').collect();
        assert_eq!(parts.len(), 3);
        assert_eq!(parts[0], "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9");
        let claims: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
        assert_eq!(claims["iss"], "Upstash");
        assert_eq!(claims["sub"], "http://127.0.0.1:9000/hook?x=1");
        assert_eq!(claims["exp"], 1_700_000_300);
        assert_eq!(claims["nbf"], 1_700_000_000);
        assert_eq!(
            claims["body"],
            "LPJNul-wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ"
        );
        assert_eq!(token, GOLDEN);
    }

    #[test]
    fn empty_body_hash() {
        let token = sign("k", "http://x/", b"", 1);
        let claims = token.split('.').nth(1).unwrap();
        let claims: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(claims).unwrap()).unwrap();
        assert_eq!(
            claims["body"],
            "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU"
        );
        assert!(claims["jti"].as_str().unwrap().starts_with("jwt_"));
    }

    const GOLDEN: &str = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.\
        eyJpc3MiOiJVcHN0YXNoIiwic3ViIjoiaHR0cDovLzEyNy4wLjAuMTo5MDAwL2hvb2s_eD0xIiwiZXhwIjoxNzAw\
        MDAwMzAwLCJuYmYiOjE3MDAwMDAwMDAsImlhdCI6MTcwMDAwMDAwMCwianRpIjoiand0X2ZpeGVkIiwiYm9keSI6\
        IkxQSk51bC13b3c0bTZEc3F4Ym5pbmhzV0hsd2ZwMEplY3dRellwT0xtQ1EifQ.\
        zdUuzHpXmUS90TjvfBYzGp6h5ACG9_jSIEZ1el7y4JM";
}
