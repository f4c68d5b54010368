//! Events (QStash's logs): what became of each message, `GET /v2/events` (what the SDKs call,
//! answering `{"events", "cursor"?}`) and `GET /v2/logs` (QStash's docs, `{"logs", "cursor"?}`),
//! newest first.
//!
//! Each event is one entry of a stream beside the queue, in its hash slot
//! (`delayq_gateway_events:{QUEUE}`, one field `e` holding the event's JSON), written by the
//! path that saw it: publishing (`CREATED`), each attempt (`ACTIVE` with its start time, written
//! with the attempt's outcome: `DELIVERED`, or `ERROR` and then `RETRY` or `FAILED`) and a cancel
//! (`CANCELED`). Each write trims the stream to the configured count and age. A cursor is the
//! stream id of the last event of a page.

use crate::envelope::Envelope;
use crate::error::ApiError;
use crate::scripts::{EVENTS_READ, EVENTS_RECORD};
use crate::store::EventWrite;
use crate::Shared;
use axum::extract::{Query, State};
use axum::Json;
use delayq::fred::interfaces::StreamsInterface;
use delayq::fred::prelude::Value as RedisValue;
use serde_json::{json, Value};
use std::collections::HashSet;
use std::sync::Arc;

/// The states QStash's SDKs know (`IN_PROGRESS` is a filter only: `ACTIVE` or `RETRY`).
const STATES: &[&str] = &[
    "CREATED",
    "ACTIVE",
    "RETRY",
    "ERROR",
    "DELIVERED",
    "FAILED",
    "CANCEL_REQUESTED",
    "CANCELED",
    "IN_PROGRESS",
];
/// The events on one page, unless `count` asks for fewer.
const PAGE: usize = 100;
/// The most events one page may ask for.
const MAX_PAGE: usize = 1000;
/// The most events read to answer one request; a page not full by then ends with a cursor.
const SCANNED: usize = 10_000;
/// Events read per script call.
const CHUNK: usize = 500;

/// The event `state` of `envelope`, at `time_ms`.
pub(crate) fn event(envelope: &Envelope, state: &str, time_ms: i64) -> Value {
    let mut event = json!({
        "time": time_ms,
        "messageId": envelope.id,
        "state": state,
        "url": envelope.url,
        "method": envelope.method,
        "maxRetries": envelope.retries,
    });
    if let Some(schedule) = &envelope.schedule_id {
        event["scheduleId"] = schedule.clone().into();
    }
    if let Some(expr) = &envelope.retry_delay {
        event["retryDelayExpression"] = expr.clone().into();
        event["retryDelayExpr"] = expr.clone().into();
    }
    if let Some(first) = envelope.labels.first() {
        event["label"] = first.clone().into();
        event["labels"] = envelope.labels.clone().into();
    }
    event
}

/// How the stream is trimmed on a write: the most events it keeps, and the stream id before
/// which events are too old; `None` when no events are kept.
fn trim(shared: &Shared) -> Option<(usize, String)> {
    let config = &shared.config;
    if config.events_kept == 0 {
        return None;
    }
    let max_age = i64::try_from(config.events_max_age.as_millis()).unwrap_or(i64::MAX);
    let oldest = crate::now_ms().saturating_sub(max_age).max(0);
    Some((config.events_kept, format!("{oldest}-0")))
}

/// `event` as written in the same step as its message's first record (see
/// [`crate::store::Store::put`]); `None` when no events are kept.
pub(crate) fn with_record(shared: &Shared, event: &Value) -> Option<EventWrite> {
    let (kept, oldest) = trim(shared)?;
    Some(EventWrite {
        kept,
        oldest,
        json: event.to_string(),
    })
}

/// Writes `events`, in order; their stream ids (none when no events are kept or the write
/// failed: a failure is logged, never the caller's).
pub(crate) async fn record(shared: &Shared, events: &[Value]) -> Vec<String> {
    let Some((kept, oldest)) = trim(shared).filter(|_| !events.is_empty()) else {
        return Vec::new();
    };
    let mut args = vec![RedisValue::from(kept.to_string()), RedisValue::from(oldest)];
    args.extend(events.iter().map(|e| RedisValue::from(e.to_string())));
    let key = shared.store.events_key();
    let written = EVENTS_RECORD
        .run::<Vec<String>>(shared.store.client(), vec![key.into()], args)
        .await;
    written.unwrap_or_else(|err| {
        tracing::warn!(error = %err, "gateway: cannot record events");
        Vec::new()
    })
}

/// Takes back the events `ids` (as [`record`] answered them) of something that did not happen
/// after all; a failure is logged, never the caller's.
pub(crate) async fn withdraw(shared: &Shared, ids: &[String]) {
    if ids.is_empty() {
        return;
    }
    let key = shared.store.events_key();
    let removed: Result<i64, _> = shared.store.client().xdel(key, ids.to_vec()).await;
    if let Err(err) = removed {
        tracing::warn!(error = %err, "gateway: cannot take back events");
    }
}

/// The filters of a listing.
#[derive(Debug, Default)]
struct Filter {
    ids: HashSet<String>,
    states: HashSet<String>,
    fields: Vec<(&'static str, String)>,
    labels: HashSet<String>,
    from_ms: Option<i64>,
    to_ms: Option<i64>,
    count: usize,
    cursor: Option<String>,
}

impl Filter {
    fn parse(pairs: Vec<(String, String)>) -> Result<Filter, ApiError> {
        let mut filter = Filter {
            count: PAGE,
            ..Filter::default()
        };
        let number = |name: &str, value: &str| {
            value
                .parse::<i64>()
                .map_err(|_| ApiError::bad_request(format!("bad {name} {value:?}: a number")))
        };
        for (name, value) in pairs {
            let values = value.split(',').map(str::trim).filter(|v| !v.is_empty());
            match name.as_str() {
                "messageId" | "messageIds" => filter.ids.extend(values.map(str::to_owned)),
                "state" => {
                    for state in values {
                        let state = state.to_ascii_uppercase();
                        if !STATES.contains(&state.as_str()) {
                            return Err(ApiError::bad_request(format!("bad state {state:?}")));
                        }
                        filter.states.insert(state);
                    }
                }
                "label" => filter.labels.extend(values.map(str::to_owned)),
                "url" => filter.fields.push(("url", value)),
                "scheduleId" => filter.fields.push(("scheduleId", value)),
                "queueName" => filter.fields.push(("queueName", value)),
                "topicName" => filter.fields.push(("topicName", value)),
                "fromDate" => filter.from_ms = Some(number(&name, &value)?),
                "toDate" => filter.to_ms = Some(number(&name, &value)?),
                "count" => match value.parse::<usize>() {
                    Ok(n) if (1..=MAX_PAGE).contains(&n) => filter.count = n,
                    _ => {
                        return Err(ApiError::bad_request(format!(
                            "bad count {value:?}: 1 to {MAX_PAGE}"
                        )))
                    }
                },
                "cursor" if value.is_empty() => {}
                "cursor" => filter.cursor = Some(cursor(&value)?),
                _ => {
                    return Err(ApiError::bad_request(format!(
                        "the filter {name:?} is not supported by this gateway"
                    )))
                }
            }
        }
        if filter.states.remove("IN_PROGRESS") {
            filter
                .states
                .extend(["ACTIVE".to_owned(), "RETRY".to_owned()]);
        }
        Ok(filter)
    }

    fn matches(&self, event: &Value) -> bool {
        let text = |name: &str| event.get(name).and_then(Value::as_str);
        let time = event.get("time").and_then(Value::as_i64).unwrap_or(0);
        let labelled = |label: &String| {
            event
                .get("labels")
                .and_then(Value::as_array)
                .is_some_and(|labels| labels.iter().any(|l| l.as_str() == Some(label)))
        };
        (self.ids.is_empty() || text("messageId").is_some_and(|id| self.ids.contains(id)))
            && (self.states.is_empty() || text("state").is_some_and(|s| self.states.contains(s)))
            && self
                .fields
                .iter()
                .all(|(name, want)| text(name) == Some(want))
            && (self.labels.is_empty() || self.labels.iter().any(labelled))
            && self.from_ms.is_none_or(|from| time >= from)
            && self.to_ms.is_none_or(|to| time <= to)
    }
}

/// A cursor as given: a stream id (`MS-SEQ`).
fn cursor(text: &str) -> Result<String, ApiError> {
    let digits = |part: &str| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
    match text.split_once('-') {
        Some((ms, seq)) if digits(ms) && digits(seq) => Ok(text.to_owned()),
        _ => Err(ApiError::bad_request(format!("bad cursor {text:?}"))),
    }
}

/// A page of events matching `filter`, newest first, and the cursor after it.
async fn page(shared: &Shared, filter: &Filter) -> Result<(Vec<Value>, Option<String>), ApiError> {
    let key = shared.store.events_key();
    let mut before = filter.cursor.clone();
    let mut found = Vec::new();
    let mut scanned = 0;
    while scanned < SCANNED {
        let end = before
            .as_ref()
            .map_or("+".to_owned(), |id| format!("({id}"));
        let args = vec![RedisValue::from(end), RedisValue::from(CHUNK.to_string())];
        let read: Vec<String> = match EVENTS_READ
            .run(shared.store.client(), vec![key.into()], args)
            .await
        {
            Ok(read) => read,
            Err(err) => return Err(ApiError::internal("reading the events", &err)),
        };
        if read.is_empty() {
            return Ok((found, None));
        }
        for pair in read.chunks(2) {
            let [id, text] = pair else { continue };
            scanned += 1;
            before = Some(id.clone());
            let Ok(event) = serde_json::from_str::<Value>(text) else {
                continue;
            };
            if filter.matches(&event) {
                found.push(event);
                if found.len() == filter.count {
                    return Ok((found, before));
                }
            }
        }
        if read.len() < CHUNK * 2 {
            return Ok((found, None));
        }
    }
    Ok((found, before))
}

async fn answer(
    shared: &Shared,
    pairs: Vec<(String, String)>,
    name: &str,
) -> Result<Value, ApiError> {
    let filter = Filter::parse(pairs)?;
    let (events, cursor) = page(shared, &filter).await?;
    let mut answer = serde_json::Map::new();
    answer.insert(name.to_owned(), Value::Array(events));
    if let Some(cursor) = cursor {
        answer.insert("cursor".to_owned(), cursor.into());
    }
    Ok(Value::Object(answer))
}

/// `GET /v2/events`: `{"events": [...], "cursor"?}`.
pub(crate) async fn events(
    State(shared): State<Arc<Shared>>,
    Query(pairs): Query<Vec<(String, String)>>,
) -> Result<Json<Value>, ApiError> {
    Ok(Json(answer(&shared, pairs, "events").await?))
}

/// `GET /v2/logs`: `{"logs": [...], "cursor"?}`.
pub(crate) async fn logs(
    State(shared): State<Arc<Shared>>,
    Query(pairs): Query<Vec<(String, String)>>,
) -> Result<Json<Value>, ApiError> {
    Ok(Json(answer(&shared, pairs, "logs").await?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
            .collect()
    }

    #[test]
    fn filters() {
        let event = json!({"time": 5, "messageId": "m1", "state": "DELIVERED", "url": "http://h/",
            "labels": ["a", "b"]});
        let ok = |list: &[(&str, &str)]| Filter::parse(pairs(list)).unwrap().matches(&event);
        assert!(ok(&[]));
        assert!(ok(&[("messageIds", "m0"), ("messageIds", "m1")]));
        assert!(!ok(&[("messageId", "m2")]));
        assert!(ok(&[("state", "delivered,FAILED")]));
        assert!(!ok(&[("state", "IN_PROGRESS")]));
        assert!(ok(&[
            ("url", "http://h/"),
            ("label", "b"),
            ("fromDate", "5"),
            ("toDate", "5")
        ]));
        assert!(!ok(&[("queueName", "q")]));
        assert!(!ok(&[("fromDate", "6")]));
        for bad in [
            ("state", "SOMETIMES"),
            ("count", "0"),
            ("count", "1001"),
            ("cursor", "abc"),
            ("fromDate", "yesterday"),
            ("callerIp", "1.2.3.4"),
        ] {
            assert!(Filter::parse(pairs(&[bad])).is_err(), "{bad:?}");
        }
        assert_eq!(
            Filter::parse(pairs(&[("cursor", "17-3")]))
                .unwrap()
                .cursor
                .as_deref(),
            Some("17-3")
        );
    }
}
