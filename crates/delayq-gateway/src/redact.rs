//! `Upstash-Redact-Fields`: which parts of a message the read APIs hide. A redacted value is
//! shown as `REDACTED:` and the hex SHA-256 of the value, so that one who holds the value can
//! check it; delivery still sends the value itself. The header takes a comma-separated list
//! of `body`, `header` (every forwarded header) and `header[NAME]` (the forwarded header
//! NAME, any case); the docs' `headers` and `headers[NAME]` spellings are taken too.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::borrow::Cow;

/// The parts of a message its read APIs hide; none by default.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Redact {
    /// The body.
    #[serde(default)]
    pub(crate) body: bool,
    /// Every forwarded header.
    #[serde(default)]
    pub(crate) all_headers: bool,
    /// The forwarded headers of these names, lower case.
    #[serde(default)]
    pub(crate) headers: Vec<String>,
}

/// The longest `Upstash-Redact-Fields` list read (entries, not bytes).
const MAX_FIELDS: usize = 100;

impl Redact {
    /// Whether nothing is redacted.
    pub(crate) fn is_none(&self) -> bool {
        !self.body && !self.all_headers && self.headers.is_empty()
    }

    /// Reads an `Upstash-Redact-Fields` value, or says why it is not one.
    pub(crate) fn parse(text: &str) -> Result<Redact, String> {
        let mut redact = Redact::default();
        let fields: Vec<&str> = text.split(',').map(str::trim).collect();
        if fields.len() > MAX_FIELDS {
            return Err(format!(
                "Upstash-Redact-Fields names more than {MAX_FIELDS} fields"
            ));
        }
        for field in fields {
            let named = field
                .strip_prefix("header[")
                .or_else(|| field.strip_prefix("headers["))
                .and_then(|rest| rest.strip_suffix(']'));
            match (field, named) {
                ("body", _) => redact.body = true,
                ("header" | "headers", _) => redact.all_headers = true,
                (_, Some(name)) if is_header_name(name) => {
                    let name = name.to_ascii_lowercase();
                    if !redact.headers.contains(&name) {
                        redact.headers.push(name);
                    }
                }
                _ => {
                    return Err(format!(
                        "bad Upstash-Redact-Fields entry {field:?}: body, header or header[NAME], \
                         separated by commas"
                    ))
                }
            }
        }
        Ok(redact)
    }

    /// Whether the forwarded header `name` is redacted.
    pub(crate) fn hides_header(&self, name: &str) -> bool {
        self.all_headers || self.headers.iter().any(|h| h.eq_ignore_ascii_case(name))
    }

    /// The value shown for the forwarded header `name` holding `value`.
    pub(crate) fn header<'a>(&self, name: &str, value: &'a str) -> Cow<'a, str> {
        match self.hides_header(name) {
            true => Cow::Owned(redacted(value.as_bytes())),
            false => Cow::Borrowed(value),
        }
    }

    /// The body shown for `body`.
    pub(crate) fn body<'a>(&self, body: &'a [u8]) -> Cow<'a, [u8]> {
        match self.body {
            true => Cow::Owned(redacted(body).into_bytes()),
            false => Cow::Borrowed(body),
        }
    }
}

/// `REDACTED:` and the hex SHA-256 of `value`.
fn redacted(value: &[u8]) -> String {
    let digest = Sha256::digest(value);
    let mut shown = String::with_capacity(9 + 64);
    shown.push_str("REDACTED:");
    for byte in digest {
        shown.push_str(&format!("{byte:02x}"));
    }
    shown
}

/// An HTTP header name (RFC 9110 token characters), 1 to 256 of them.
fn is_header_name(name: &str) -> bool {
    (1..=256).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sdks_and_the_docs_spellings() {
        // The JS and Python SDKs join with ",", hand-written headers often with ", ".
        let redact = Redact::parse("body, header[Authorization],headers[X-Key]").unwrap();
        assert!(redact.body && !redact.all_headers);
        assert_eq!(redact.headers, ["authorization", "x-key"]);
        assert!(Redact::parse("header").unwrap().all_headers);
        assert!(Redact::parse("headers").unwrap().all_headers);
        assert!(Redact::parse("").is_err());
        for bad in [
            "body,",
            "bodies",
            "header[]",
            "header[a b]",
            "header[x",
            "Body",
        ] {
            assert!(Redact::parse(bad).is_err(), "{bad}");
        }
        let many = vec!["body"; MAX_FIELDS + 1].join(",");
        assert!(Redact::parse(&many).is_err());
    }

    #[test]
    fn shown_values() {
        let redact = Redact::parse("header[authorization]").unwrap();
        // sha256("secret"), as `printf secret | sha256sum` prints it.
        let hash = "2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b";
        assert_eq!(
            redact.header("Authorization", "secret"),
            format!("REDACTED:{hash}")
        );
        assert_eq!(redact.header("X-Other", "plain"), "plain");
        assert_eq!(&*redact.body(b"kept"), b"kept");
        let body = Redact::parse("body").unwrap().body(b"secret").into_owned();
        assert_eq!(body, format!("REDACTED:{hash}").into_bytes());
        assert!(Redact::default().is_none() && !redact.is_none());
    }
}
