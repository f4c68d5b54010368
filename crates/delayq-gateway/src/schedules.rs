//! Schedules on delayq's recurring schedules of the gateway's queue (each occurrence fired
//! exactly once, however many gateway processes run): `POST /v2/schedules/{destination}`
//! (`Upstash-Cron`, with an optional `CRON_TZ=Zone ` prefix; `Upstash-Schedule-Id` to create or
//! replace one by id; the publish headers each occurrence's message gets), `GET /v2/schedules`,
//! `GET` and `DELETE /v2/schedules/{id}`, and `PATCH` or `POST /v2/schedules/{id}/pause|resume`.
//!
//! A schedule's value is its template: an envelope with an empty id. Each occurrence offers the
//! template into the queue, due at the occurrence's time; the delivery worker takes it and
//! publishes a message of its own from it ([`occurrence`]: a new message id, the schedule's
//! delay, `Upstash-Schedule-Id`), which is then delivered, signed, retried and dead-lettered as
//! any published message.

use crate::envelope::{new_id, new_message_id, Envelope};
use crate::error::ApiError;
use crate::headers::DedupAsk;
use crate::Shared;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use base64::Engine;
use delayq::{JobError, Recurrence, Schedule, ScheduleInfo};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

/// The path before a destination or an id.
const PREFIX: &str = "/v2/schedules/";
/// The longest schedule id accepted.
const MAX_ID_LEN: usize = 256;

/// `GET /v2/schedules`: every schedule of the gateway, as an array.
pub(crate) async fn list(State(shared): State<Arc<Shared>>) -> Result<Json<Value>, ApiError> {
    let rows = match shared.queue.schedules().rows().await {
        Ok(rows) => rows,
        Err(err) => return Err(ApiError::internal("reading the schedules", &err)),
    };
    let found: Vec<Value> = rows
        .into_iter()
        .filter_map(|row| row.info.ok())
        .filter_map(|info| schedule_json(&info))
        .collect();
    Ok(Json(Value::Array(found)))
}

/// Every other `/v2/schedules/...` request: a creation (`POST` with a destination), or a call
/// on one schedule (`GET`, `DELETE`, `PATCH`/`POST .../pause|resume`).
pub(crate) async fn route(
    State(shared): State<Arc<Shared>>,
    Path(rest): Path<String>,
    request: axum::extract::Request,
) -> Result<Response, ApiError> {
    let method = request.method().clone();
    let action = rest
        .rsplit_once('/')
        .filter(|(id, action)| !id.contains('/') && matches!(*action, "pause" | "resume"));
    match (method, action) {
        (Method::PATCH | Method::POST, Some((id, action))) => {
            let id = id.to_owned();
            pause_or_resume(&shared, &id, action == "pause").await
        }
        (Method::POST, None) => create(&shared, request).await,
        (Method::GET, None) if !rest.contains('/') => get(&shared, &rest).await,
        (Method::DELETE, None) if !rest.contains('/') => delete(&shared, &rest).await,
        _ => Err(ApiError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "no such schedule call (see docs/gateway.md)",
        )),
    }
}

/// `POST /v2/schedules/{destination}`: `{"scheduleId"}`.
async fn create(shared: &Shared, request: axum::extract::Request) -> Result<Response, ApiError> {
    let url = crate::publish::destination_after(request.uri(), PREFIX)?;
    crate::publish::allowed(shared, &url)?;
    let mut headers = request.headers().clone();
    if headers.contains_key("upstash-not-before") {
        return Err(ApiError::bad_request(
            "Upstash-Not-Before is not supported on schedules (Upstash-Delay is)",
        ));
    }
    let recurrence = cron(&mut headers)?;
    let id = schedule_id(&mut headers)?;
    let now_ms = crate::now_ms();
    let options = crate::headers::parse(&headers, &shared.config, now_ms)?;
    if options.dedup != DedupAsk::None {
        return Err(ApiError::bad_request(
            "deduplication is not supported on schedules",
        ));
    }
    if options.flow.is_some() {
        return Err(ApiError::bad_request(
            "flow control is not supported on schedules",
        ));
    }
    let body: Body = request.into_body();
    let body = crate::publish::read_body(body, shared.config.body_limit).await?;
    let delay_ms = i64::try_from(options.delay.as_millis()).unwrap_or(i64::MAX);
    let template = Envelope {
        id: String::new(),
        method: options.method,
        url,
        headers: options.forward,
        body: body.to_vec(),
        retries: options.retries,
        timeout_ms: options
            .timeout
            .map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX)),
        created_ms: now_ms,
        not_before_ms: now_ms.saturating_add(delay_ms),
        labels: options.labels,
        retry_delay: options.retry_delay,
        schedule_id: Some(id.clone()),
        owner: None,
        callback: options.callback,
        failure_callback: options.failure_callback,
        lane: None,
        queue_name: None,
        flow: None,
        redact: options.redact,
    };
    let schedule = Schedule::new(id.clone(), recurrence, template.encode());
    match shared.queue.schedules().set(schedule).await {
        Ok(_) => {
            tracing::debug!(schedule = %id, "schedule set");
            Ok(Json(json!({ "scheduleId": id })).into_response())
        }
        Err(delayq::Error::InvalidSchedule(why)) => Err(ApiError::bad_request(why)),
        Err(err) => Err(ApiError::internal("storing the schedule", &err)),
    }
}

/// `Upstash-Cron` (taken out of `headers`): 5 fields (or 6, seconds first), after an optional
/// `CRON_TZ=Zone ` (an IANA zone; UTC without it).
fn cron(headers: &mut HeaderMap) -> Result<Recurrence, ApiError> {
    let Some(value) = headers.remove("upstash-cron") else {
        return Err(ApiError::bad_request("Upstash-Cron is required"));
    };
    let Ok(text) = value.to_str() else {
        return Err(ApiError::bad_request("Upstash-Cron is not ASCII text"));
    };
    let (zone, expr) = split_zone(text.trim());
    if expr.split_whitespace().count() < 5 && !expr.starts_with('@') {
        return Err(ApiError::bad_request(format!(
            "bad Upstash-Cron {text:?}: 5 fields (minute hour day month weekday) are needed"
        )));
    }
    Recurrence::cron(expr, zone)
        .map_err(|err| ApiError::bad_request(format!("bad Upstash-Cron {text:?}: {err}")))
}

/// `CRON_TZ=Zone expr` as (zone, expr); `UTC` without the prefix.
fn split_zone(text: &str) -> (&str, &str) {
    match text.strip_prefix("CRON_TZ=") {
        Some(rest) => match rest.split_once(char::is_whitespace) {
            Some((zone, expr)) => (zone, expr.trim()),
            None => (rest, ""),
        },
        None => ("UTC", text),
    }
}

/// The cron text as given: the expression, after `CRON_TZ=Zone ` unless the zone is UTC.
fn cron_text(recurrence: &Recurrence) -> Option<String> {
    match recurrence {
        Recurrence::Cron { expr, zone } if zone == "UTC" => Some(expr.clone()),
        Recurrence::Cron { expr, zone } => Some(format!("CRON_TZ={zone} {expr}")),
        _ => None,
    }
}

/// `Upstash-Schedule-Id` (taken out of `headers`), or a new `scd_...` id.
fn schedule_id(headers: &mut HeaderMap) -> Result<String, ApiError> {
    let Some(value) = headers.remove("upstash-schedule-id") else {
        return Ok(new_id("scd_"));
    };
    let id = value.to_str().map(str::trim).unwrap_or("");
    let fine = |c: char| c.is_ascii_graphic() && !matches!(c, '{' | '}' | '/' | '?' | '#' | '%');
    if id.is_empty() || id.len() > MAX_ID_LEN || !id.chars().all(fine) {
        return Err(ApiError::bad_request(format!(
            "bad Upstash-Schedule-Id: 1 to {MAX_ID_LEN} printable ASCII characters, without \
             braces, '/', '?', '#' or '%'"
        )));
    }
    Ok(id.to_owned())
}

/// The template of a stored schedule, unless the schedule is not the gateway's.
fn template(info: &ScheduleInfo) -> Option<Envelope> {
    let envelope = Envelope::decode(&info.schedule.value).ok()?;
    (envelope.id.is_empty() && envelope.schedule_id.as_deref() == Some(&info.schedule.id))
        .then_some(envelope)
}

/// QStash's `Schedule` fields of `info`.
pub(crate) fn schedule_json(info: &ScheduleInfo) -> Option<Value> {
    let template = template(info)?;
    let mut json = crate::messages::message_json(&template);
    let Value::Object(ref mut fields) = json else {
        return None;
    };
    for gone in ["messageId", "url", "maxRetries", "notBefore", "scheduleId"] {
        fields.remove(gone);
    }
    json["scheduleId"] = info.schedule.id.clone().into();
    json["cron"] = cron_text(&info.schedule.recurrence)?.into();
    json["destination"] = template.url.clone().into();
    json["retries"] = template.retries.into();
    json["isPaused"] = info.schedule.paused.into();
    let delay_s = (template.not_before_ms - template.created_ms) / 1000;
    if delay_s > 0 {
        json["delay"] = delay_s.into();
    }
    if let Some(ms) = template.timeout_ms {
        json["timeout"] = (ms / 1000).into();
    }
    let body = template.redact.body(&template.body);
    match std::str::from_utf8(&body) {
        Ok(text) => json["body"] = text.into(),
        Err(_) => {
            let encoded = base64::engine::general_purpose::STANDARD.encode(&body);
            json["bodyBase64"] = encoded.into();
        }
    }
    if let Some(last) = info.last_ms {
        json["lastScheduleTime"] = last.into();
    }
    if let Some(next) = info.next_ms.filter(|_| !info.schedule.paused) {
        json["nextScheduleTime"] = next.into();
    }
    Some(json)
}

/// The schedule `id` of the gateway, or 404.
async fn find(shared: &Shared, id: &str) -> Result<ScheduleInfo, ApiError> {
    let info = match shared.queue.schedules().get(id).await {
        Ok(info) => info,
        Err(err) => return Err(ApiError::internal("reading the schedule", &err)),
    };
    info.filter(|info| template(info).is_some())
        .ok_or_else(|| ApiError::not_found(format!("schedule {id} not found")))
}

/// `GET /v2/schedules/{id}`.
async fn get(shared: &Shared, id: &str) -> Result<Response, ApiError> {
    let info = find(shared, id).await?;
    let json = schedule_json(&info)
        .ok_or_else(|| ApiError::not_found(format!("schedule {id} not found")))?;
    Ok(Json(json).into_response())
}

/// `DELETE /v2/schedules/{id}`: messages of its earlier occurrences stay.
async fn delete(shared: &Shared, id: &str) -> Result<Response, ApiError> {
    find(shared, id).await?;
    match shared.queue.schedules().remove(id).await {
        Ok(true) => Ok(Json(json!({ "deleted": 1 })).into_response()),
        Ok(false) => Err(ApiError::not_found(format!("schedule {id} not found"))),
        Err(err) => Err(ApiError::internal("removing the schedule", &err)),
    }
}

/// `PATCH` or `POST /v2/schedules/{id}/pause|resume`.
async fn pause_or_resume(shared: &Shared, id: &str, pause: bool) -> Result<Response, ApiError> {
    find(shared, id).await?;
    let schedules = shared.queue.schedules();
    let done = match pause {
        true => schedules.pause(id).await,
        false => schedules.resume(id).await,
    };
    match done {
        Ok(_) => Ok(Json(json!({})).into_response()),
        Err(delayq::Error::NoSuchSchedule { .. }) => {
            Err(ApiError::not_found(format!("schedule {id} not found")))
        }
        Err(err) => Err(ApiError::internal("pausing or resuming the schedule", &err)),
    }
}

/// An occurrence of a schedule, taken by the delivery worker: publishes its message (a new
/// id, due after the schedule's delay). Retried when it cannot be stored; a crash between the
/// store and the worker's ack publishes the occurrence a second time (at least once).
pub(crate) async fn occurrence(shared: &Shared, template: Envelope) -> Result<(), JobError> {
    let now_ms = crate::now_ms();
    let delay_ms = (template.not_before_ms - template.created_ms).max(0);
    let message = Envelope {
        id: new_message_id(),
        created_ms: now_ms,
        not_before_ms: now_ms.saturating_add(delay_ms),
        ..template
    };
    let delay = Duration::from_millis(u64::try_from(delay_ms).unwrap_or(0));
    match crate::publish::store(shared, &message, delay, None).await {
        Ok(()) => {
            tracing::debug!(message = %message.id, schedule = ?message.schedule_id, "occurrence published");
            Ok(())
        }
        Err(_) => Err(
            JobError::new("status 0: cannot publish the schedule's occurrence")
                .with_retry_after(Duration::from_secs(1)),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zones() {
        assert_eq!(split_zone("* * * * *"), ("UTC", "* * * * *"));
        assert_eq!(
            split_zone("CRON_TZ=Europe/Berlin 30 2 * * *"),
            ("Europe/Berlin", "30 2 * * *")
        );
        assert_eq!(split_zone("CRON_TZ=UTC"), ("UTC", ""));
        let mut headers = HeaderMap::new();
        headers.insert(
            "upstash-cron",
            "CRON_TZ=Mars/Olympus 0 * * * *".parse().unwrap(),
        );
        assert!(cron(&mut headers).is_err());
        headers.insert("upstash-cron", "61 * * * *".parse().unwrap());
        assert!(cron(&mut headers).is_err());
        headers.insert("upstash-cron", "* * *".parse().unwrap());
        assert!(cron(&mut headers).is_err());
        headers.insert(
            "upstash-cron",
            "CRON_TZ=Asia/Tokyo 0 9 * * 1-5".parse().unwrap(),
        );
        let recurrence = cron(&mut headers).unwrap();
        assert_eq!(
            cron_text(&recurrence).unwrap(),
            "CRON_TZ=Asia/Tokyo 0 9 * * 1-5"
        );
        assert!(cron(&mut headers).is_err(), "taken out");
    }
}
