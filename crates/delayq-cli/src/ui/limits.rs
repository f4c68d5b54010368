//! A queue's flow-control limits in the dashboard.
//!
//! `GET /api/queues/{name}/limits`: `{"limits": {...} or null, "usage": {...}}` in the shape of
//! `delayq --json limit get` (limit_view.rs). `POST /api/queues/{name}/limits/set-limits` with a
//! JSON body (`Content-Type: application/json`, at most [`BODY_LIMIT`] bytes, read only once
//! the token's role allows the write, within `--http-header-timeout`) of the limits to store (`concurrency`, `rate`, `key_pointer` or `key_regex`,
//! `key_concurrency`, `key_rate`; rates as `--rate` takes them; a limit left out is not
//! stored) and `POST /api/queues/{name}/limits/clear-limits`: the admin's (access.rs), because
//! a limit changed holds back or lets loose every worker of the queue.

use super::activity::answer;
use super::{bounded, failure, refusal, Shared};
use crate::limit_view::{self, count_of, is_empty, limits_json, rate_of};
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use delayq::limit::{KeyRule, Limits};
use serde_json::json;

/// The most bytes a `set-limits` body may hold; limits take a few hundred.
const BODY_LIMIT: usize = 4 * 1024;

/// `GET /api/queues/{name}/limits`.
pub(super) async fn get(State(ui): State<Shared>, Path(name): Path<String>) -> Response {
    let read = |queue: delayq::DelayedQueue<_>| async move {
        let limits = queue.limits().get().await?;
        let usage = queue.limits().usage().await?;
        Ok(json!({
            "limits": limits.as_ref().map(limits_json),
            "usage": limit_view::usage_json(&usage),
        }))
    };
    answer(&ui, &name, read).await
}

/// The body of `set-limits`: each limit as text, as the command line takes it (a count may
/// be a JSON number too).
#[derive(Debug, Default)]
struct Form {
    concurrency: Option<String>,
    rate: Option<String>,
    key_pointer: Option<String>,
    key_regex: Option<String>,
    key_concurrency: Option<String>,
    key_rate: Option<String>,
}

impl Form {
    /// The form a request's body holds, or why it holds none.
    fn parse(body: &[u8]) -> Result<Form, String> {
        let value: serde_json::Value =
            serde_json::from_slice(body).map_err(|e| format!("bad limits: {e}"))?;
        let Some(fields) = value.as_object() else {
            return Err("bad limits: a JSON object of limits is expected".into());
        };
        let mut form = Form::default();
        for (name, value) in fields {
            let text = match value {
                serde_json::Value::String(text) => text.clone(),
                serde_json::Value::Number(n) => n.to_string(),
                _ => return Err(format!("{name}: give it as text, like the command line")),
            };
            let slot = match name.as_str() {
                "concurrency" => &mut form.concurrency,
                "rate" => &mut form.rate,
                "key_pointer" => &mut form.key_pointer,
                "key_regex" => &mut form.key_regex,
                "key_concurrency" => &mut form.key_concurrency,
                "key_rate" => &mut form.key_rate,
                _ => return Err(format!("no limit {name:?}")),
            };
            *slot = Some(text);
        }
        Ok(form)
    }
}

/// The limits a form asks for, or why they cannot be stored.
fn limits_of(form: &Form) -> Result<Limits, String> {
    let mut limits = Limits::default();
    let named = |what: &str, err: String| format!("{what}: {err}");
    if let Some(text) = &form.concurrency {
        limits = limits.with_concurrency(count_of(text).map_err(|e| named("concurrency", e))?);
    }
    if let Some(text) = &form.rate {
        limits = limits.with_rate(rate_of(text).map_err(|e| named("rate", e))?);
    }
    match (&form.key_pointer, &form.key_regex) {
        (Some(_), Some(_)) => return Err("give a key pointer or a key regex, not both".into()),
        (Some(pointer), None) => limits = limits.with_key(KeyRule::JsonPointer(pointer.clone())),
        (None, Some(regex)) => limits = limits.with_key(KeyRule::Regex(regex.clone())),
        (None, None) => {}
    }
    if let Some(text) = &form.key_concurrency {
        limits =
            limits.with_key_concurrency(count_of(text).map_err(|e| named("key concurrency", e))?);
    }
    if let Some(text) = &form.key_rate {
        limits = limits.with_key_rate(rate_of(text).map_err(|e| named("key rate", e))?);
    }
    match is_empty(&limits) {
        true => Err("no limit given: clear the limits instead".into()),
        false => Ok(limits),
    }
}

/// The JSON body of a request with `headers`: refused unless its content type is JSON (415),
/// longer than [`BODY_LIMIT`] (413), or not all there within `wait` (408).
async fn read_json_body(
    headers: &HeaderMap,
    body: Body,
    wait: std::time::Duration,
) -> Result<axum::body::Bytes, Response> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let essence = content_type.split(';').next().unwrap_or("").trim();
    if !essence.eq_ignore_ascii_case("application/json") {
        return Err(failure(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!("the limits must come as Content-Type: application/json, not {content_type:?}"),
        ));
    }
    match tokio::time::timeout(wait, axum::body::to_bytes(body, BODY_LIMIT)).await {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(_)) => Err(failure(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the limits must fit in {BODY_LIMIT} bytes"),
        )),
        Err(_) => Err(failure(
            StatusCode::REQUEST_TIMEOUT,
            format!("the body did not arrive within {} s", wait.as_secs_f64()),
        )),
    }
}

/// `POST /api/queues/{name}/limits/{set-limits,clear-limits}`.
pub(super) async fn act(
    State(ui): State<Shared>,
    Path((name, action)): Path<(String, String)>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    if let Some(refused) = refusal(&ui, &headers, &action).or_else(|| ui.outside(&name)) {
        return refused;
    }
    let limits = match action.as_str() {
        "set-limits" => {
            let body = match read_json_body(&headers, body, ui.body_wait).await {
                Ok(body) => body,
                Err(refused) => return refused,
            };
            match Form::parse(&body).and_then(|form| limits_of(&form)) {
                Ok(limits) => Some(limits),
                Err(why) => return failure(StatusCode::BAD_REQUEST, why),
            }
        }
        "clear-limits" => None,
        _ => return failure(StatusCode::NOT_FOUND, format!("no action {action:?}")),
    };
    let done = bounded(async {
        let queue = ui.queue(&name).await?;
        match &limits {
            Some(limits) => queue.limits().set(limits).await?,
            None => {
                queue.limits().clear().await?;
            }
        }
        Ok(())
    });
    match done.await {
        Ok(()) => {
            tracing::info!(queue = %name, action, "dashboard write");
            Json(json!({ "limits": limits.as_ref().map(limits_json) })).into_response()
        }
        Err(err) => {
            // Limits the library refuses (a bad regex or pointer) are the request's fault.
            let status = match err.downcast_ref::<delayq::Error>() {
                Some(delayq::Error::InvalidLimits(_)) => StatusCode::BAD_REQUEST,
                _ => StatusCode::BAD_GATEWAY,
            };
            failure(status, format!("{err:#}"))
        }
    }
}
