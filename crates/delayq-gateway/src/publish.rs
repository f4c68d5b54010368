//! `POST /v2/publish/{destination}`: one message, its destination raw in the path (query
//! included), its options in `Upstash-*` headers, its body passed through untouched.

use crate::envelope::{new_message_id, Envelope};
use crate::error::ApiError;
use crate::headers::{self, DedupAsk, PublishOptions};
use crate::store::{DedupClaim, Record};
use crate::Shared;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::sync::Arc;

/// The path before the destination, as the router sees it (after any prefix it is nested
/// under).
const PREFIX: &str = "/v2/publish/";

pub(crate) async fn publish(
    State(shared): State<Arc<Shared>>,
    request: Request,
) -> Result<Response, ApiError> {
    let url = destination(request.uri())?;
    allowed(&shared, &url)?;
    let now_ms = crate::now_ms();
    let options = headers::parse(request.headers(), &shared.config, now_ms)?;
    let owner = crate::access::caller_of(request.extensions()).owner_tag();
    let body = read_body(request.into_body(), shared.config.body_limit).await?;
    let message = Prepared::new(url, options, body.to_vec(), now_ms).owned_by(owner);
    let (status, answer) = message.enqueue(&shared).await?;
    Ok((status, Json(answer)).into_response())
}

/// Refuses (403) a destination outside the allow-list.
pub(crate) fn allowed(shared: &Shared, url: &str) -> Result<(), ApiError> {
    match shared.config.allows(url) {
        true => Ok(()),
        false => Err(ApiError::new(
            StatusCode::FORBIDDEN,
            format!("destination {url} is not in this gateway's allow-list"),
        )),
    }
}

/// A message checked and ready to store: its envelope, its delay and its deduplication key.
#[derive(Debug)]
pub(crate) struct Prepared {
    envelope: Envelope,
    delay: std::time::Duration,
    dedup: Option<String>,
}

impl Prepared {
    pub(crate) fn new(
        url: String,
        options: PublishOptions,
        body: Vec<u8>,
        now_ms: i64,
    ) -> Prepared {
        let dedup = match options.dedup {
            DedupAsk::None => None,
            DedupAsk::Id(ref id) => Some(format!("id:{id}")),
            DedupAsk::Content => Some(content_id(&url, &body, &options.forward)),
        };
        let delay_ms = i64::try_from(options.delay.as_millis()).unwrap_or(i64::MAX);
        let envelope = Envelope {
            id: new_message_id(),
            method: options.method,
            url,
            headers: options.forward,
            body,
            retries: options.retries,
            timeout_ms: options
                .timeout
                .map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX)),
            created_ms: now_ms,
            not_before_ms: now_ms.saturating_add(delay_ms),
            labels: options.labels,
            retry_delay: options.retry_delay,
            owner: None,
            schedule_id: None,
            callback: options.callback,
            failure_callback: options.failure_callback,
            lane: None,
            queue_name: None,
            flow: options.flow,
            redact: options.redact,
        };
        Prepared {
            envelope,
            delay: options.delay,
            dedup,
        }
    }

    /// The same message, published by `owner` (see [`crate::access::Caller::owner_tag`]).
    pub(crate) fn owned_by(mut self, owner: Option<String>) -> Prepared {
        self.envelope.owner = owner;
        self
    }

    /// Stores the message, unless its deduplication id is remembered; the answer QStash gives:
    /// 201 `{messageId, url}`, or 202 with the first message's id and `deduplicated: true`.
    ///
    /// Runs on a task of its own: a client that goes away mid-request never leaves a message
    /// half stored (a record without its entry, a deduplication id without its message).
    pub(crate) async fn enqueue(
        self,
        shared: &Arc<Shared>,
    ) -> Result<(StatusCode, Value), ApiError> {
        let shared = shared.clone();
        match tokio::spawn(async move { self.store_all(&shared).await }).await {
            Ok(done) => done,
            Err(err) => Err(ApiError::internal("storing the message", &err)),
        }
    }

    /// The message goes to QStash queue `name` (its lane registered already).
    pub(crate) fn in_queue(mut self, name: &str, lane: String) -> Prepared {
        self.envelope.queue_name = Some(name.to_owned());
        self.envelope.lane = Some(lane);
        self
    }

    /// Whether the message asks for flow control.
    pub(crate) fn has_flow(&self) -> bool {
        self.envelope.flow.is_some()
    }

    async fn store_all(mut self, shared: &Shared) -> Result<(StatusCode, Value), ApiError> {
        if let Some(flow) = &self.envelope.flow {
            let lanes = &shared.lanes;
            let name = lanes.flow_lane(flow.parallelism, flow.rate, flow.period_ms);
            let now = crate::now_ms();
            let lane = crate::lanes::Lane {
                queue: None,
                parallelism: flow.parallelism,
                rate: flow.rate,
                period_ms: flow.period_ms,
                paused: false,
                created_at: now,
                updated_at: now,
            };
            if let Err(err) = lanes.ensure(&name, &lane).await {
                return Err(ApiError::internal("registering the flow-control key", &err));
            }
            self.envelope.lane = Some(name);
        }
        let envelope = &self.envelope;
        if let Some(key) = &self.dedup {
            if let Some(first) = claim(shared, key, &envelope.id).await? {
                return Ok((StatusCode::ACCEPTED, answer(&first, &envelope.url, true)));
            }
        }
        if let Err(err) = store(shared, envelope, self.delay, self.dedup.as_deref()).await {
            if let Some(key) = &self.dedup {
                if let Err(err) = shared.store.release_dedup(key, &envelope.id).await {
                    tracing::warn!(error = %err, "gateway: cannot forget a deduplication id");
                }
            }
            return Err(err);
        }
        tracing::debug!(message = %envelope.id, delay_ms = self.delay.as_millis() as u64, "published");
        Ok((
            StatusCode::CREATED,
            answer(&envelope.id, &envelope.url, false),
        ))
    }
}

/// Claims deduplication id `key` for `message`: `None` when it is this message's now, or the
/// id of the message that holds it, once that message is stored. While the holder is being
/// stored this asks again every 50 ms; after the lease it takes the id over (see
/// [`crate::GatewayConfig::with_dedup_lease`]).
async fn claim(shared: &Shared, key: &str, message: &str) -> Result<Option<String>, ApiError> {
    let config = &shared.config;
    let deadline = tokio::time::Instant::now() + config.dedup_lease * 2;
    loop {
        let claimed = shared
            .store
            .claim_dedup(key, message, config.dedup_window, config.dedup_lease)
            .await;
        match claimed {
            Ok(DedupClaim::Claimed) => return Ok(None),
            Ok(DedupClaim::Settled(first)) => return Ok(Some(first)),
            Ok(DedupClaim::Pending(_)) if tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await
            }
            Ok(DedupClaim::Pending(first)) => {
                return Err(ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    format!(
                    "message {first} with this deduplication id is still being stored; try again"
                ),
                ))
            }
            Err(err) => return Err(ApiError::internal("remembering the deduplication id", &err)),
        }
    }
}

/// Writes the message's record (with its CREATED event), then its entry, then the entry's
/// handle into the record (and settles the claim of deduplication id `dedup` with it): three
/// calls. A failure removes the record.
pub(crate) async fn store(
    shared: &Shared,
    envelope: &Envelope,
    delay: std::time::Duration,
    dedup: Option<&str>,
) -> Result<(), ApiError> {
    let queue = match &envelope.lane {
        None => shared.queue.clone(),
        Some(lane) => match shared.lanes.queue(lane).await {
            Ok(queue) => queue,
            Err(err) => return Err(ApiError::internal("storing the message", &err)),
        },
    };
    // The CREATED event goes with the first record, before the entry: a delivery's events
    // come after it.
    let record = Record::of(envelope, String::new());
    let created = crate::events::event(envelope, "CREATED", envelope.created_ms);
    let created = crate::events::with_record(shared, &created);
    if let Err(err) = shared.store.put(&record, created).await {
        return Err(ApiError::internal("storing the message", &err));
    }
    let handle = match queue.offer_with_handle(&envelope.encode(), delay).await {
        Ok(handle) => handle,
        Err(err) => {
            let _ = shared.store.remove(&envelope.id).await;
            return Err(ApiError::internal("storing the message", &err));
        }
    };
    let record = Record::of(envelope, handle.to_string());
    if let Err(err) = shared.store.update(&record, dedup).await {
        // The message is queued and will be delivered; only a cancel of it while it is still
        // pending will leave its entry to be dropped at delivery instead of removed at once,
        // and a publish with its deduplication id after the lease stores a second message.
        tracing::warn!(error = %err, message = %envelope.id, "gateway: cannot index the entry's handle");
    }
    Ok(())
}

fn answer(id: &str, url: &str, deduplicated: bool) -> Value {
    let mut body = serde_json::json!({ "messageId": id, "url": url });
    if deduplicated {
        body["deduplicated"] = true.into();
    }
    body
}

/// The destination: the rest of the path, raw (never percent-decoded), plus the raw query.
/// `http:/x` (a slash merged away by a proxy) is mended to `http://x`.
pub(crate) fn destination(uri: &Uri) -> Result<String, ApiError> {
    destination_after(uri, PREFIX)
}

/// The destination after `prefix` in `uri`'s path, as [`destination`] reads it.
pub(crate) fn destination_after(uri: &Uri, prefix: &str) -> Result<String, ApiError> {
    let rest = uri.path().strip_prefix(prefix).unwrap_or("");
    let mut url = rest.to_owned();
    for scheme in ["http:/", "https:/"] {
        if url.starts_with(scheme) && !url.starts_with(&format!("{scheme}/")) {
            url.insert(scheme.len(), '/');
        }
    }
    if let Some(query) = uri.query() {
        url.push('?');
        url.push_str(query);
    }
    checked_url(url)
}

/// `url` if it is an `http://` or `https://` URL with a host.
pub(crate) fn checked_url(url: String) -> Result<String, ApiError> {
    match reqwest::Url::parse(&url) {
        Ok(parsed) if matches!(parsed.scheme(), "http" | "https") && parsed.has_host() => Ok(url),
        _ => Err(ApiError::bad_request(format!(
            "invalid destination url {url:?}: an http:// or https:// URL is needed (URL groups \
             are not supported yet)"
        ))),
    }
}

/// The body, refused with 413 past `limit` bytes.
pub(crate) async fn read_body(body: Body, limit: usize) -> Result<bytes::Bytes, ApiError> {
    match axum::body::to_bytes(body, limit).await {
        Ok(bytes) => Ok(bytes),
        Err(err) => {
            let too_large =
                std::iter::successors(Some(&err as &(dyn std::error::Error + 'static)), |e| {
                    e.source()
                })
                .any(|e| e.is::<http_body_util::LengthLimitError>());
            match too_large {
                true => Err(ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!("the body is over this gateway's limit of {limit} bytes"),
                )),
                false => Err(ApiError::bad_request(format!(
                    "cannot read the body: {err}"
                ))),
            }
        }
    }
}

/// Content-based deduplication: destination, body, `Content-Type` and the forwarded headers.
fn content_id(url: &str, body: &[u8], forward: &[(String, String)]) -> String {
    let mut hash = Sha256::new();
    for part in [url.as_bytes(), body] {
        hash.update((part.len() as u64).to_be_bytes());
        hash.update(part);
    }
    let mut headers: Vec<_> = forward
        .iter()
        .map(|(k, v)| (k.to_ascii_lowercase(), v))
        .collect();
    headers.sort();
    for (name, value) in headers {
        for part in [name.as_bytes(), value.as_bytes()] {
            hash.update((part.len() as u64).to_be_bytes());
            hash.update(part);
        }
    }
    let digest = hash.finalize();
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("content:{hex}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dest(uri: &str) -> Result<String, ApiError> {
        destination(&uri.parse().unwrap())
    }

    #[test]
    fn destination_is_raw() {
        assert_eq!(
            dest("/v2/publish/http://127.0.0.1:9/a%20b?x=1&y=%2F").unwrap(),
            "http://127.0.0.1:9/a%20b?x=1&y=%2F"
        );
        assert_eq!(
            dest("/v2/publish/https:/h.example/p").unwrap(),
            "https://h.example/p"
        );
        assert!(dest("/v2/publish/my-url-group").is_err());
        assert!(dest("/v2/publish/ftp://h/x").is_err());
        assert!(dest("/v2/publish/").is_err());
    }

    #[test]
    fn content_ids_differ_by_each_part() {
        let h = vec![("Content-Type".to_owned(), "text/plain".to_owned())];
        let a = content_id("http://h/", b"x", &h);
        assert_eq!(a, content_id("http://h/", b"x", &h));
        assert_ne!(a, content_id("http://h/", b"y", &h));
        assert_ne!(a, content_id("http://h/x", b"x", &h));
        assert_ne!(a, content_id("http://h/", b"x", &[]));
    }
}
