//! Callbacks: after a delivery (`Upstash-Callback`), or once a message's retries are used up
//! (`Upstash-Failure-Callback`), a new message is published to the callback's URL with QStash's
//! callback body: the destination's answer (`status`, `header`, `body` in base64) and the
//! source message (`sourceMessageId`, `url`, `method`, `sourceHeader`, `sourceBody`,
//! `retried`, `maxRetries`, `notBefore` and `createdAt` as strings of ms), plus `dlqId` for a
//! failure callback. It is delivered, signed and retried as any message (its own retries are
//! `Upstash-Callback-Retries`, else the source's), and has no callbacks of its own.

use crate::envelope::{new_message_id, Answer, Callback, Envelope};
use crate::Shared;
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use serde_json::{json, Map, Value};

/// Publishes `callback` of `source`, whose last attempt (`retried`) got `answer` (none: no
/// answer); `dlq_id` for a failure callback. A failure to store it is logged: the source's
/// outcome stands.
pub(crate) async fn publish(
    shared: &Shared,
    source: &Envelope,
    callback: &Callback,
    answer: Option<&Answer>,
    retried: u32,
    dlq_id: Option<&str>,
) {
    let body = body(source, answer, retried, dlq_id);
    let now_ms = crate::now_ms();
    let mut headers = callback.headers.clone();
    if !headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("content-type"))
    {
        headers.push(("Content-Type".into(), "application/json".into()));
    }
    let envelope = Envelope {
        id: new_message_id(),
        method: callback.method.clone(),
        url: callback.url.clone(),
        headers,
        body: serde_json::to_vec(&body).unwrap_or_default(),
        retries: callback.retries.unwrap_or(source.retries),
        timeout_ms: callback.timeout_ms,
        created_ms: now_ms,
        not_before_ms: now_ms,
        labels: Vec::new(),
        retry_delay: callback.retry_delay.clone(),
        callback: None,
        failure_callback: None,
        lane: None,
        queue_name: None,
        flow: None,
        owner: None,
        schedule_id: None,
        redact: Default::default(),
    };
    let kind = if dlq_id.is_some() {
        "failure callback"
    } else {
        "callback"
    };
    match crate::publish::store(shared, &envelope, std::time::Duration::ZERO, None).await {
        Ok(()) => {
            tracing::debug!(message = %source.id, callback = %envelope.id, "{kind} published")
        }
        Err(err) => {
            tracing::warn!(message = %source.id, error = ?err, "gateway: cannot publish the {kind}")
        }
    }
}

/// QStash's callback body.
fn body(source: &Envelope, answer: Option<&Answer>, retried: u32, dlq_id: Option<&str>) -> Value {
    let mut header = Map::new();
    for (name, value) in answer.map_or(&[][..], |a| &a.headers[..]) {
        let values = header.entry(name.clone()).or_insert_with(|| json!([]));
        if let Value::Array(values) = values {
            values.push(value.clone().into());
        }
    }
    let mut source_header = Map::new();
    for (name, value) in &source.headers {
        let shown = source.redact.header(name, value);
        source_header.insert(name.clone(), shown.into_owned().into());
    }
    let mut body = json!({
        "status": answer.map_or(0, |a| a.status),
        "header": header,
        "body": STANDARD.encode(answer.map_or(&[][..], |a| &a.body[..])),
        "retried": retried,
        "maxRetries": source.retries,
        "sourceMessageId": source.id,
        "topicName": "",
        "endpointName": "",
        "url": source.url,
        "method": source.method,
        "sourceHeader": source_header,
        "sourceBody": STANDARD.encode(source.redact.body(&source.body)),
        "notBefore": source.not_before_ms.to_string(),
        "createdAt": source.created_ms.to_string(),
    });
    if let Some(id) = dlq_id {
        body["dlqId"] = id.into();
    }
    body
}
