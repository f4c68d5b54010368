//! A message as its queue entry holds it: the HTTP request to make (method, destination,
//! headers, body) and how (retries, timeout), serialized with rmp-serde (MessagePack with field
//! names, so that later fields can be added without breaking entries already queued).

use crate::redact::Redact;
use serde::{Deserialize, Serialize};

/// One message: the value of one entry of the gateway's queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Envelope {
    /// `msg_...`, sent as `Upstash-Message-Id`.
    pub(crate) id: String,
    /// GET, POST, PUT, PATCH or DELETE.
    pub(crate) method: String,
    /// The destination, exactly as published (query included); the JWT's `sub`.
    pub(crate) url: String,
    /// Sent to the destination as they are: `Upstash-Forward-*` without the prefix, and
    /// `Content-Type`.
    pub(crate) headers: Vec<(String, String)>,
    /// The body, byte for byte.
    #[serde(with = "serde_bytes")]
    pub(crate) body: Vec<u8>,
    /// Retries after the first attempt.
    pub(crate) retries: u32,
    /// The per-attempt timeout asked for with `Upstash-Timeout` (under the gateway's own).
    pub(crate) timeout_ms: Option<u64>,
    /// When it was published, epoch ms.
    pub(crate) created_ms: i64,
    /// When it is first due, epoch ms.
    pub(crate) not_before_ms: i64,
    /// `Upstash-Label`'s labels (shown by `GET`; nothing filters on them yet).
    #[serde(default)]
    pub(crate) labels: Vec<String>,
    /// `Upstash-Retry-Delay`: the wait before each retry, in ms, of `retried`.
    #[serde(default)]
    pub(crate) retry_delay: Option<String>,
    /// The fingerprint of the publish-role token that published it (none for an admin's): who
    /// else may read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) owner: Option<String>,
    /// The schedule whose occurrence this message is (sent as `Upstash-Schedule-Id`). A
    /// schedule's own value is an envelope with this and an empty `id`: its template, whose
    /// `not_before_ms - created_ms` is the delay of every occurrence.
    #[serde(default)]
    pub(crate) schedule_id: Option<String>,
    /// `Upstash-Callback`: published to after a delivery.
    #[serde(default)]
    pub(crate) callback: Option<Callback>,
    /// `Upstash-Failure-Callback`: published to once the retries are used up.
    #[serde(default)]
    pub(crate) failure_callback: Option<Callback>,
    /// The delayq queue of its entry when it is not the gateway's own: a QStash queue's or a
    /// flow-control lane (see `lanes.rs`).
    #[serde(default)]
    pub(crate) lane: Option<String>,
    /// The QStash queue it was enqueued to.
    #[serde(default)]
    pub(crate) queue_name: Option<String>,
    /// `Upstash-Flow-Control-Key` and `-Value`.
    #[serde(default)]
    pub(crate) flow: Option<Flow>,
    /// `Upstash-Redact-Fields`: what the read APIs hide (delivery sends it all).
    #[serde(default, skip_serializing_if = "Redact::is_none")]
    pub(crate) redact: Redact,
}

/// A message's flow control: its key, and the limits of the key it was published with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Flow {
    pub(crate) key: String,
    pub(crate) parallelism: Option<u32>,
    pub(crate) rate: Option<u32>,
    /// The rate's period (1 s by default).
    pub(crate) period_ms: u64,
}

/// A callback a message asks for: the message published to `url` with QStash's callback body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Callback {
    pub(crate) url: String,
    /// `Upstash-Callback-Method`; POST by default.
    pub(crate) method: String,
    /// `Upstash-Callback-Forward-*` without the prefix.
    pub(crate) headers: Vec<(String, String)>,
    /// `Upstash-Callback-Retries`; the source message's retries when absent.
    pub(crate) retries: Option<u32>,
    /// `Upstash-Callback-Timeout`.
    pub(crate) timeout_ms: Option<u64>,
    /// `Upstash-Callback-Retry-Delay`.
    pub(crate) retry_delay: Option<String>,
}

/// A destination's answer, as a callback and a dead letter keep it (the body bounded).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    #[serde(with = "serde_bytes")]
    pub(crate) body: Vec<u8>,
}

impl Envelope {
    pub(crate) fn encode(&self) -> Vec<u8> {
        // Serializing plain strings, numbers and bytes into a Vec cannot fail.
        rmp_serde::to_vec_named(self).unwrap_or_default()
    }

    pub(crate) fn decode(bytes: &[u8]) -> Result<Envelope, rmp_serde::decode::Error> {
        rmp_serde::from_slice(bytes)
    }
}

/// A new message id shaped like QStash's: `msg_` and 40 letters and digits.
pub(crate) fn new_message_id() -> String {
    new_id("msg_")
}

/// `prefix` and 40 random letters and digits.
pub(crate) fn new_id(prefix: &str) -> String {
    const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let mut id = String::with_capacity(prefix.len() + 40);
    id.push_str(prefix);
    for _ in 0..40 {
        id.push(char::from(ALPHABET[rand::random_range(0..ALPHABET.len())]));
    }
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_keeps_bytes() {
        let envelope = Envelope {
            id: new_message_id(),
            method: "PUT".into(),
            url: "http://127.0.0.1:9/a?x=1&y=%20".into(),
            headers: vec![("Content-Type".into(), "application/octet-stream".into())],
            body: vec![0, 255, 10, 13, 0xc3, 0x28],
            retries: 2,
            timeout_ms: Some(5_000),
            created_ms: 1_700_000_000_000,
            not_before_ms: 1_700_000_010_000,
            labels: vec!["a".into()],
            retry_delay: Some("1000 * retried".into()),
            owner: Some("0123456789abcdef".into()),
            schedule_id: Some("scd_1".into()),
            callback: Some(Callback {
                url: "http://127.0.0.1:9/cb".into(),
                method: "PUT".into(),
                headers: vec![("x-a".into(), "1".into())],
                retries: Some(1),
                timeout_ms: None,
                retry_delay: None,
            }),
            failure_callback: None,
            lane: None,
            queue_name: None,
            flow: None,
            redact: Redact::parse("body, header[x-a]").unwrap(),
        };
        let bytes = envelope.encode();
        assert_eq!(Envelope::decode(&bytes).unwrap(), envelope);
        assert!(envelope.id.starts_with("msg_") && envelope.id.len() == 44);
        assert!(Envelope::decode(b"not msgpack").is_err());
        // An envelope written before a field existed still reads.
        #[derive(Serialize)]
        struct Older<'a> {
            id: &'a str,
            method: &'a str,
            url: &'a str,
            headers: Vec<(String, String)>,
            #[serde(with = "serde_bytes")]
            body: &'a [u8],
            retries: u32,
            timeout_ms: Option<u64>,
            created_ms: i64,
            not_before_ms: i64,
        }
        let older = rmp_serde::to_vec_named(&Older {
            id: "msg_1",
            method: "POST",
            url: "http://h/",
            headers: vec![],
            body: b"b",
            retries: 3,
            timeout_ms: None,
            created_ms: 1,
            not_before_ms: 2,
        })
        .unwrap();
        assert!(Envelope::decode(&older).unwrap().labels.is_empty());
    }
}
