//! What the gateway stores, read back for a tool beside it (the delayq dashboard): an entry's
//! envelope as the fields of QStash's `Message`, a dead letter's last answer, a lane's record,
//! a schedule's fields, and the names of the keys they are in. The formats stay here, their
//! one home; nothing here writes.
//!
//! Secrets are never shown: the values of forwarded headers that carry credentials
//! ([`is_secret_header`]) are replaced by [`REDACTED`], in a message's headers, its callbacks'
//! headers and a last answer's headers.

use crate::envelope::{Answer, Envelope};
use crate::lanes::Lane;
use crate::redact::Redact;
use crate::store::tagged;
use delayq::ScheduleInfo;
use serde_json::{json, Value};

/// What a secret header's value is shown as.
pub const REDACTED: &str = "[redacted]";

/// Whether the header `name` carries a credential: `Authorization`, `Proxy-Authorization`,
/// `Cookie`, `Set-Cookie`, and any name holding `token`, `secret`, `password`, `api-key`,
/// `apikey`, `signature` or `session` (case-insensitive).
pub fn is_secret_header(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    matches!(
        name.as_str(),
        "authorization" | "proxy-authorization" | "cookie" | "set-cookie"
    ) || [
        "token",
        "secret",
        "password",
        "api-key",
        "apikey",
        "signature",
        "session",
    ]
    .iter()
    .any(|part| name.contains(part))
}

/// `headers` with each secret header's value replaced by [`REDACTED`], but for those the
/// publisher's `Upstash-Redact-Fields` (`redact`) hides, which show as the API shows them.
fn redacted(headers: &[(String, String)], redact: &Redact) -> Vec<(String, String)> {
    headers
        .iter()
        .map(
            |(name, value)| match is_secret_header(name) && !redact.hides_header(name) {
                true => (name.clone(), REDACTED.to_owned()),
                false => (name.clone(), value.clone()),
            },
        )
        .collect()
}

/// A message as an entry's value holds it, decoded.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct StoredMessage {
    /// QStash's `Message` fields (`messageId`, `url`, `method`, `header` with secrets redacted,
    /// `maxRetries`, `notBefore`, `createdAt`, `labels`, `queueName`, `flowControlKey`,
    /// `scheduleId`, `callback`, ...), and `bodyLength`.
    pub fields: Value,
    /// The body, byte for byte (the caller shows as much of it as it wants).
    pub body: Vec<u8>,
}

/// The message whose envelope is `value` (an entry's value, a dead letter's or a delivery's);
/// `None` when `value` is not (or not wholly) a gateway envelope.
pub fn decode_message(value: &[u8]) -> Option<StoredMessage> {
    let mut envelope = Envelope::decode(value).ok()?;
    envelope.headers = redacted(&envelope.headers, &envelope.redact);
    let none = Redact::default();
    for callback in [&mut envelope.callback, &mut envelope.failure_callback]
        .into_iter()
        .flatten()
    {
        callback.headers = redacted(&callback.headers, &none);
    }
    // A body the publisher asked to redact shows as the API shows it.
    let body = std::mem::take(&mut envelope.body);
    let body = envelope.redact.body(&body).into_owned();
    let mut fields = crate::messages::message_json(&envelope);
    fields["bodyLength"] = body.len().into();
    if let Some(lane) = &envelope.lane {
        fields["lane"] = lane.clone().into();
    }
    Some(StoredMessage { fields, body })
}

/// A dead letter's last answer as kept at [`response_key`]: `responseStatus`,
/// `responseHeader` (names to arrays of values, secrets redacted), `responseBody` (its first
/// `excerpt` bytes, as text where they are UTF-8, cut at a character) and
/// `responseBodyLength`; `None` when `raw` does not read.
pub fn decode_answer(raw: &[u8], excerpt: usize) -> Option<Value> {
    let answer: Answer = rmp_serde::from_slice(raw).ok()?;
    let mut header = serde_json::Map::new();
    for (name, value) in redacted(&answer.headers, &Redact::default()) {
        if let Value::Array(values) = header.entry(name).or_insert_with(|| json!([])) {
            values.push(value.into());
        }
    }
    let start = &answer.body[..answer.body.len().min(excerpt)];
    let text = match std::str::from_utf8(start) {
        Ok(text) => text.to_owned(),
        Err(err) => String::from_utf8_lossy(&start[..err.valid_up_to()]).into_owned(),
    };
    Some(json!({
        "responseStatus": answer.status,
        "responseHeader": header,
        "responseBody": text,
        "responseBodyLength": answer.body.len(),
    }))
}

/// The key of the gateway `gateway`'s signing keys: present from the gateway's first start on,
/// so it tells a gateway's queue from any other.
pub fn signing_keys_key(gateway: &str) -> String {
    tagged("delayq_gateway_keys", gateway)
}

/// The hash of the gateway `gateway`'s lanes (lane name to the lane's JSON; read it with
/// [`lane_json`]).
pub fn lanes_key(gateway: &str) -> String {
    tagged("delayq_gateway_lanes", gateway)
}

/// The key of the last answer to the dead letter `message_id` of the gateway `gateway` (also
/// for a lane's dead letter: the gateway's own queue names it).
pub fn response_key(gateway: &str, message_id: &str) -> String {
    delayq::names::item_key(&tagged("delayq_gateway_response", gateway), message_id)
}

/// The gateway whose lane the queue `name` may be (`GATEWAY:q:NAME` or `GATEWAY:fc:...`):
/// its `GATEWAY`; the lanes' hash says whether it is one.
pub fn lane_gateway(name: &str) -> Option<&str> {
    let (gateway, _) = name
        .rsplit_once(":q:")
        .or_else(|| name.rsplit_once(":fc:"))?;
    (!gateway.is_empty()).then_some(gateway)
}

/// The lane `lane`'s record `raw` (from [`lanes_key`]) as JSON: `lane`, `name` (the QStash
/// queue; null for flow-control values), `parallelism`, `rate`, `period` (seconds), `paused`,
/// `createdAt`, `updatedAt`; `None` when it does not read.
pub fn lane_json(lane: &str, raw: &[u8]) -> Option<Value> {
    let record: Lane = serde_json::from_slice(raw).ok()?;
    Some(json!({
        "lane": lane,
        "name": record.queue,
        "parallelism": record.parallelism,
        "rate": record.rate,
        "period": record.period_ms / 1000,
        "paused": record.paused,
        "createdAt": record.created_at,
        "updatedAt": record.updated_at,
    }))
}

/// QStash's `Schedule` fields of the gateway's schedule `info` (`scheduleId`, `cron`,
/// `destination`, `method`, `isPaused`, ...; secrets redacted); `None` for a schedule of the
/// queue that is not the gateway's.
pub fn schedule_json(info: &ScheduleInfo) -> Option<Value> {
    let mut json = crate::schedules::schedule_json(info)?;
    for name in ["header", "callbackHeader", "failureCallbackHeader"] {
        if let Some(Value::Object(header)) = json.get_mut(name) {
            for (key, values) in header.iter_mut() {
                if is_secret_header(key) {
                    *values = json!([REDACTED]);
                }
            }
        }
    }
    Some(json)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_redacted_and_lanes_named() {
        for name in [
            "Authorization",
            "cookie",
            "X-Api-Key",
            "X-Auth-Token",
            "Set-Cookie",
        ] {
            assert!(is_secret_header(name), "{name}");
        }
        assert!(!is_secret_header("Content-Type"));
        let envelope = Envelope {
            id: "msg_1".into(),
            method: "POST".into(),
            url: "http://127.0.0.1:9/a".into(),
            headers: vec![
                ("Authorization".into(), "Bearer s3cret".into()),
                ("X-Trace".into(), "t1".into()),
            ],
            body: b"hello".to_vec(),
            retries: 2,
            timeout_ms: None,
            created_ms: 1,
            not_before_ms: 2,
            labels: vec!["l".into()],
            retry_delay: None,
            owner: None,
            schedule_id: None,
            callback: None,
            failure_callback: None,
            lane: Some("g:q:jobs".into()),
            queue_name: Some("jobs".into()),
            flow: None,
            redact: Redact::default(),
        };
        let message = decode_message(&envelope.encode()).unwrap();
        assert_eq!(message.body, b"hello");
        assert_eq!(message.fields["header"]["Authorization"], json!([REDACTED]));
        assert_eq!(message.fields["header"]["X-Trace"], json!(["t1"]));
        assert_eq!(message.fields["bodyLength"], 5);
        assert_eq!(message.fields["queueName"], "jobs");
        assert!(!message.fields.to_string().contains("s3cret"));
        assert!(decode_message(b"\x92\x01\x02").is_none());
        assert_eq!(
            lane_gateway("delayq-gateway:q:jobs"),
            Some("delayq-gateway")
        );
        assert_eq!(lane_gateway("g:fc:p1-r0-1000"), Some("g"));
        assert_eq!(lane_gateway("orders"), None);
        assert_eq!(signing_keys_key("g"), "delayq_gateway_keys:{g}");
        assert_eq!(
            response_key("g", "msg_1"),
            "delayq_gateway_response:{g}:msg_1"
        );
    }

    #[test]
    fn what_the_publisher_redacted_shows_as_the_api_shows_it() {
        let mut envelope = Envelope::decode(&sample()).unwrap();
        envelope.redact = Redact::parse("body, header[Authorization], header[X-Trace]").unwrap();
        let message = decode_message(&envelope.encode()).unwrap();
        let shown = |name: &str| {
            message.fields["header"][name][0]
                .as_str()
                .unwrap()
                .to_owned()
        };
        assert!(
            shown("Authorization").starts_with("REDACTED:"),
            "{}",
            message.fields
        );
        assert!(shown("X-Trace").starts_with("REDACTED:"));
        assert!(message.body.starts_with(b"REDACTED:"));
        assert!(!message.fields.to_string().contains("s3cret"));
        assert!(!String::from_utf8_lossy(&message.body).contains("hello"));
    }

    /// An envelope with a secret header and a body.
    fn sample() -> Vec<u8> {
        let envelope = Envelope {
            id: "msg_2".into(),
            method: "POST".into(),
            url: "http://127.0.0.1:9/b".into(),
            headers: vec![
                ("Authorization".into(), "Bearer s3cret".into()),
                ("X-Trace".into(), "t1".into()),
            ],
            body: b"hello".to_vec(),
            retries: 0,
            timeout_ms: None,
            created_ms: 1,
            not_before_ms: 2,
            labels: Vec::new(),
            retry_delay: None,
            owner: None,
            schedule_id: None,
            callback: None,
            failure_callback: None,
            lane: None,
            queue_name: None,
            flow: None,
            redact: Redact::default(),
        };
        envelope.encode()
    }
}
