//! The native queues: a small delayq API beside QStash's, to offer a value into any Redisson
//! delayed queue (Redisson's layout, the value encoded as the queue's Java consumers decode it)
//! so that a Node or Python service can feed a Java Redisson consumer.
//!
//! - `POST /v1/queues/{name}/offer?codec=string|bytes|json&delay=15s`: the body is the value
//!   (`string`: UTF-8 text, Redisson's `StringCodec`; `bytes`: any bytes, `ByteArrayCodec`;
//!   `json`: one JSON value, written as Redisson's `JsonJacksonCodec` writes the equal Java
//!   value: objects as `java.util.HashMap`, arrays as `java.util.ArrayList`). 201
//!   `{"handle", "queue", "codec", "dueAt"}`.
//! - `DELETE /v1/queues/{name}/handles/{handle}`: cancels that entry while it is pending; 404
//!   once it is not.
//! - `GET /v1/queues/{name}`: `{"queue", "pending", "ready"}` (Java `RDelayedQueue#size()` and
//!   the target queue's `size()`).
//!
//! Only names matching a pattern of [`GatewayConfig::allow_native_queue`](crate::GatewayConfig::allow_native_queue)
//! (none by default: every native request is refused). This process transfers the due values
//! of the queues it offered into, as each Java `RDelayedQueue` does.

use crate::error::ApiError;
use crate::Shared;
use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::Json;
use delayq::codec::{ByteArrayCodec, Codec, JsonJacksonCodec};
use delayq::{DelayedQueue, OfferHandle};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// The most native queues one process serves (each one a queue handle and its transfers).
const MAX_QUEUES: usize = 1000;
/// The longest queue name accepted.
const MAX_NAME: usize = 256;

/// The native queues this process has served, by name.
#[derive(Debug, Default)]
pub(crate) struct NativeQueues {
    queues: tokio::sync::Mutex<HashMap<String, DelayedQueue<ByteArrayCodec>>>,
}

/// `POST /v1/queues/{name}/offer`.
pub(crate) async fn offer(
    State(shared): State<Arc<Shared>>,
    Path(name): Path<String>,
    RawQuery(query): RawQuery,
    body: Body,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    allowed(&shared, &name)?;
    let params = params(query.as_deref().unwrap_or(""), &["codec", "delay"])?;
    let codec = params.get("codec").map(String::as_str).unwrap_or("");
    let delay = match params.get("delay") {
        None => Duration::ZERO,
        Some(text) => crate::headers::parse_duration(text).ok_or_else(|| {
            ApiError::bad_request(format!("invalid delay {text:?}: e.g. 15s, 1d10h"))
        })?,
    };
    if delay > shared.config.max_delay {
        return Err(ApiError::bad_request(format!(
            "delay {delay:?} is over the longest accepted, {:?}",
            shared.config.max_delay
        )));
    }
    let body = crate::publish::read_body(body, shared.config.body_limit).await?;
    let value = encode(codec, &body)?;
    let queue = queue(&shared, &name).await?;
    let handle = queue
        .offer_with_handle(&value, delay)
        .await
        .map_err(|err| ApiError::internal("offering the value", &err))?;
    let due = crate::now_ms().saturating_add(i64::try_from(delay.as_millis()).unwrap_or(i64::MAX));
    let answer =
        json!({ "handle": handle.to_string(), "queue": name, "codec": codec, "dueAt": due });
    Ok((StatusCode::CREATED, Json(answer)))
}

/// `DELETE /v1/queues/{name}/handles/{handle}`.
pub(crate) async fn cancel(
    State(shared): State<Arc<Shared>>,
    Path((name, handle)): Path<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    allowed(&shared, &name)?;
    let parsed: OfferHandle = handle.parse().map_err(|_| {
        ApiError::bad_request(format!("{handle:?} is not a handle (18 hex digits)"))
    })?;
    let queue = queue(&shared, &name).await?;
    match queue.cancel(&parsed).await {
        Ok(true) => Ok(Json(json!({ "cancelled": true }))),
        Ok(false) => Err(ApiError::not_found(format!(
            "entry {handle} of {name} is not pending (taken, cancelled, or never offered)"
        ))),
        Err(err) => Err(ApiError::internal("cancelling the entry", &err)),
    }
}

/// `GET /v1/queues/{name}`.
pub(crate) async fn size(
    State(shared): State<Arc<Shared>>,
    Path(name): Path<String>,
) -> Result<Json<Value>, ApiError> {
    allowed(&shared, &name)?;
    let queue = queue(&shared, &name).await?;
    let stats = queue
        .inspect()
        .stats()
        .await
        .map_err(|err| ApiError::internal("reading the queue", &err))?;
    Ok(Json(
        json!({ "queue": name, "pending": stats.pending, "ready": stats.ready }),
    ))
}

/// Refuses (403) a name no pattern allows.
fn allowed(shared: &Shared, name: &str) -> Result<(), ApiError> {
    let patterns = &shared.config.native_queues;
    if name.is_empty() || name.len() > MAX_NAME {
        return Err(ApiError::bad_request(format!(
            "a queue name has 1 to {MAX_NAME} bytes"
        )));
    }
    if patterns.iter().any(|p| matches(p, name)) {
        return Ok(());
    }
    let why = match patterns.is_empty() {
        true => "no native queue is allowed (start the gateway with --native-queue PATTERN)".into(),
        false => format!("queue {name:?} matches no --native-queue pattern"),
    };
    Err(ApiError::new(StatusCode::FORBIDDEN, why))
}

/// Whether `name` matches `pattern`, where `*` stands for any run of characters.
pub(crate) fn matches(pattern: &str, name: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty(); // no `*`: the whole name
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// The value's bytes in `codec`'s format, or why the body cannot be one.
fn encode(codec: &str, body: &[u8]) -> Result<Vec<u8>, ApiError> {
    match codec {
        "bytes" => Ok(body.to_vec()),
        "string" => match std::str::from_utf8(body) {
            Ok(text) => Ok(text.as_bytes().to_vec()),
            Err(err) => Err(ApiError::bad_request(format!(
                "codec string needs UTF-8 text: {err}"
            ))),
        },
        "json" => {
            let value: Value = serde_json::from_slice(body).map_err(|err| {
                ApiError::bad_request(format!("codec json needs one JSON value: {err}"))
            })?;
            JsonJacksonCodec::<Value>::new()
                .encode(&value)
                .map_err(|err| {
                    ApiError::bad_request(format!("cannot write it as Jackson does: {err}"))
                })
        }
        "" => Err(ApiError::bad_request(
            "codec is needed: ?codec=string, bytes or json (as the Java consumers decode)",
        )),
        other => Err(ApiError::bad_request(format!(
            "codec {other:?} is not string, bytes or json"
        ))),
    }
}

/// The query's parameters, each at most once and each one of `known`.
fn params(query: &str, known: &[&str]) -> Result<HashMap<String, String>, ApiError> {
    let mut out = HashMap::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        if !known.contains(&key) {
            return Err(ApiError::bad_request(format!(
                "unknown parameter {key:?}: {} only",
                known.join(", ")
            )));
        }
        if out.insert(key.to_owned(), value.to_owned()).is_some() {
            return Err(ApiError::bad_request(format!("{key} is given twice")));
        }
    }
    Ok(out)
}

/// The queue `name`, built (and its transfers joined) on first use.
async fn queue(shared: &Shared, name: &str) -> Result<DelayedQueue<ByteArrayCodec>, ApiError> {
    let mut queues = shared.native.queues.lock().await;
    if let Some(queue) = queues.get(name) {
        return Ok(queue.clone());
    }
    if queues.len() >= MAX_QUEUES {
        return Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("this gateway process serves {MAX_QUEUES} native queues already"),
        ));
    }
    let queue = DelayedQueue::builder(shared.client.clone(), name.to_owned(), ByteArrayCodec)
        .build()
        .await
        .map_err(|err| ApiError::internal("opening the queue", &err))?;
    queues.insert(name.to_owned(), queue.clone());
    Ok(queue)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns() {
        for (pattern, name, expected) in [
            ("orders", "orders", true),
            ("orders", "orders2", false),
            ("orders:*", "orders:eu", true),
            ("orders:*", "orders:", true),
            ("orders:*", "order", false),
            ("*", "anything", true),
            ("a*b*c", "axxbyyc", true),
            ("a*b*c", "axxc", false),
            ("*-jobs", "mail-jobs", true),
            ("*-jobs", "mail-jobs-2", false),
            ("ab*ba", "aba", false),
        ] {
            assert_eq!(matches(pattern, name), expected, "{pattern} {name}");
        }
    }

    #[test]
    fn encodings() {
        assert_eq!(
            encode("string", "grüße".as_bytes()).unwrap(),
            "grüße".as_bytes()
        );
        assert!(encode("string", &[0xff]).is_err());
        assert_eq!(encode("bytes", &[0, 0xff]).unwrap(), vec![0, 0xff]);
        let json = encode("json", br#"{"id": 17, "tags": ["a"]}"#).unwrap();
        let text = String::from_utf8(json).unwrap();
        assert!(
            text.starts_with(r#"{"@class":"java.util.HashMap""#),
            "{text}"
        );
        assert!(encode("json", b"{").is_err());
        assert!(encode("kryo", b"x").is_err());
        assert!(encode("", b"x").is_err());
        assert!(params("codec=json&delay=5s", &["codec", "delay"]).is_ok());
        assert!(params("codec=json&codec=bytes", &["codec"]).is_err());
        assert!(params("other=1", &["codec"]).is_err());
    }
}
