//! `GET /v2/flowControl` and `GET /v2/flowControl/{key}`: what a flow-control key's limits
//! are and hold now, read from the per-key limits of the flow-control lanes (see `lanes.rs`):
//! the values held back for the key (QStash's wait list), the slots it holds (deliveries under
//! way), the starts its rate has counted, whether it is paused; `POST
//! /v2/flowControl/{key}/pause` and `resume` (the per-key limits' pause flag of every lane), and
//! `resetRate`, which lets the key's rate count afresh. Pinning a key is not supported (405).

use crate::error::ApiError;
use crate::lanes::Lane;
use crate::Shared;
use axum::extract::{Path, State};
use axum::http::{Method, StatusCode};
use axum::Json;
use delayq::fred::interfaces::{ListInterface, SortedSetsInterface};
use delayq::fred::types::sorted_sets::Ordering;
use delayq::fred::types::SetOptions;
use delayq::QueueKeys;
use serde_json::{json, Value};
use std::sync::Arc;

/// The most keys `GET /v2/flowControl` lists.
const LISTED: usize = 1_000;

/// What one flow-control lane holds for one key.
#[derive(Debug, Default, Clone, Copy)]
struct Held {
    /// Values held back for the key: its wait list.
    waiting: u64,
    /// Slots the key holds: deliveries under way.
    active: u64,
    /// Starts its rate counted that still weigh on it.
    rate_count: u64,
    /// Whether the key is paused in the lane.
    paused: bool,
    /// Whether the lane keeps any state for the key.
    known: bool,
}

/// The flow-control lanes: name, what the lane is, its keys.
async fn flow_lanes(shared: &Shared) -> Result<Vec<(String, Lane, QueueKeys)>, ApiError> {
    let all = shared
        .lanes
        .all()
        .await
        .map_err(|err| ApiError::internal("reading the flow-control lanes", &err))?;
    let mut lanes: Vec<(String, Lane)> = all
        .into_iter()
        .filter(|(_, lane)| lane.queue.is_none())
        .collect();
    lanes.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out = Vec::with_capacity(lanes.len());
    for (name, lane) in lanes {
        let keys = QueueKeys::new(&name);
        out.push((name, lane, keys));
    }
    Ok(out)
}

/// What lane `name` (`lane`, `keys`) holds for `key` at `now` (epoch ms).
async fn held(
    shared: &Shared,
    (name, lane, keys): &(String, Lane, QueueKeys),
    key: &str,
    now: i64,
) -> Result<Held, ApiError> {
    let fail =
        |err: delayq::fred::error::Error| ApiError::internal("reading the flow control", &err);
    let client = &shared.client;
    let waiting: u64 = client.llen(keys.limit_parked(key)).await.map_err(fail)?;
    let active: u64 = client
        // Leases that run out after now (scores are whole or thousandths of ms).
        .zcount(keys.limit_key_slots(key), now as f64 + 0.001, f64::INFINITY)
        .await
        .map_err(fail)?;
    let tat: Option<f64> = client
        .zscore(keys.limit_rate_state(), format!("k:{key}"))
        .await
        .map_err(fail)?;
    // GCRA: each start pushes the arrival time one emission interval (period / rate) on, so
    // how far it is ahead of now counts the starts that still weigh on the rate.
    let rate_count = match (tat, lane.rate) {
        (Some(tat), Some(rate)) if rate > 0 && tat > now as f64 => {
            let interval = lane.period_ms.max(1) as f64 / f64::from(rate);
            (((tat - now as f64) / interval).ceil() as u64).min(u64::from(rate))
        }
        _ => 0,
    };
    let paused = lane_queue(shared, name)
        .await?
        .limits()
        .key_paused(key)
        .await
        .map_err(|err| ApiError::internal("reading the flow control", &err))?;
    Ok(Held {
        waiting,
        active,
        rate_count,
        paused,
        known: waiting > 0 || active > 0 || tat.is_some() || paused,
    })
}

/// The delayq queue of lane `name`.
async fn lane_queue(
    shared: &Shared,
    name: &str,
) -> Result<delayq::DelayedQueue<delayq::codec::ByteArrayCodec>, ApiError> {
    shared
        .lanes
        .queue(name)
        .await
        .map_err(|err| ApiError::internal("opening a flow-control lane", &*err))
}

/// QStash's `FlowControlInfo` of `key`, or none when no lane keeps anything for it. A key
/// published with several sets of values is in several lanes: its counts are their sums, its
/// values those of the lane with the most waiting and under way (of the latest updated on a
/// tie).
async fn info(
    shared: &Shared,
    lanes: &[(String, Lane, QueueKeys)],
    key: &str,
) -> Result<Option<Value>, ApiError> {
    let now = crate::now_ms();
    let mut total = Held::default();
    let mut main: Option<(&Lane, Held)> = None;
    for entry in lanes {
        let (_, lane, _) = entry;
        let held = held(shared, entry, key, now).await?;
        if !held.known {
            continue;
        }
        total.waiting += held.waiting;
        total.active += held.active;
        total.paused |= held.paused;
        total.known = true;
        let weight = |h: &Held, l: &Lane| (h.waiting + h.active, l.updated_at);
        if main.is_none_or(|(l, h)| weight(&held, lane) > weight(&h, l)) {
            main = Some((lane, held));
        }
    }
    let Some((lane, held)) = main else {
        return Ok(None);
    };
    let period_s = match lane.rate {
        Some(_) => lane.period_ms.div_ceil(1000),
        None => 0,
    };
    Ok(Some(json!({
        "flowControlKey": key,
        "waitListSize": total.waiting,
        "parallelismMax": lane.parallelism.unwrap_or(0),
        "parallelismCount": total.active,
        "rateMax": lane.rate.unwrap_or(0),
        "rateCount": held.rate_count,
        "ratePeriod": period_s,
        "isPaused": total.paused,
        "isPinnedParallelism": false,
        "isPinnedRate": false,
    })))
}

/// `GET /v2/flowControl`: the keys with values held back or deliveries under way (at most
/// [`LISTED`]), each as `GET /v2/flowControl/{key}` answers, by key.
pub(crate) async fn list(State(shared): State<Arc<Shared>>) -> Result<Json<Value>, ApiError> {
    let lanes = flow_lanes(&shared).await?;
    let now = crate::now_ms();
    let fail =
        |err: delayq::fred::error::Error| ApiError::internal("listing the flow control", &err);
    let mut names = std::collections::BTreeSet::new();
    for (_, _, keys) in &lanes {
        let held: Vec<String> = shared
            .client
            .zrange(
                keys.limit_held(),
                0,
                LISTED as i64 - 1,
                None,
                false,
                None,
                false,
            )
            .await
            .map_err(fail)?;
        let busy: Vec<String> = shared
            .client
            .zrangebyscore(
                keys.limit_busy(),
                format!("({now}"),
                "+inf",
                false,
                Some((0, LISTED as i64)),
            )
            .await
            .map_err(fail)?;
        names.extend(held.into_iter().chain(busy));
    }
    let mut listed = Vec::new();
    for name in names.into_iter().take(LISTED) {
        if let Some(info) = info(&shared, &lanes, &name).await? {
            listed.push(info);
        }
    }
    Ok(Json(Value::Array(listed)))
}

/// A 400 unless a publish could give `key`.
fn check_key(key: &str) -> Result<(), ApiError> {
    match crate::headers::valid_flow_key(key) {
        true => Ok(()),
        false => Err(ApiError::bad_request(format!(
            "bad flow-control key {key:?}: 1 to 256 printable characters"
        ))),
    }
}

/// `POST /v2/flowControl/{key}/resetRate`: the key's rate forgets the starts it counted, so
/// that as many as its rate allows may start at once, in every lane that holds the key (the
/// rate state of the lanes' per-key limits, read by every gateway process); its values held
/// back are tried again at once. 404 when no lane keeps anything for the key.
async fn reset_rate(shared: &Shared, key: &str) -> Result<(), ApiError> {
    let lanes = flow_lanes(shared).await?;
    if info(shared, &lanes, key).await?.is_none() {
        return Err(unknown(key));
    }
    let fail = |err: delayq::fred::error::Error| {
        ApiError::internal("resetting a flow-control key's rate", &err)
    };
    let now = crate::now_ms();
    for (_, lane, keys) in &lanes {
        if lane.rate.is_none() {
            continue;
        }
        let _: i64 = shared
            .client
            .zrem(keys.limit_rate_state(), format!("k:{key}"))
            .await
            .map_err(fail)?;
        // Held back until the rate would have let it start: due now instead (only when held).
        let _: i64 = shared
            .client
            .zadd(
                keys.limit_held(),
                Some(SetOptions::XX),
                Some(Ordering::LessThan),
                false,
                false,
                (now as f64, key),
            )
            .await
            .map_err(fail)?;
    }
    Ok(())
}

/// `POST /v2/flowControl/{key}/pause` (`paused`) or `resume`: the key's flag in the per-key
/// limits of every flow-control lane (a lane made later copies the pauses: see
/// `Lanes::put`), read by every worker on the Redis, so that no process starts a message of a
/// paused key (deliveries under way finish) and a resumed key's messages held back are tried
/// again at once. 404 when no lane keeps anything for the key.
async fn pause(shared: &Shared, key: &str, paused: bool) -> Result<(), ApiError> {
    let lanes = flow_lanes(shared).await?;
    if info(shared, &lanes, key).await?.is_none() {
        return Err(unknown(key));
    }
    for (name, _, _) in &lanes {
        let limits = lane_queue(shared, name).await?;
        let done = match paused {
            true => limits.limits().pause_key(key).await,
            false => limits.limits().resume_key(key).await,
        };
        done.map_err(|err| ApiError::internal("pausing or resuming a flow-control key", &err))?;
    }
    Ok(())
}

fn unknown(key: &str) -> ApiError {
    ApiError::not_found(format!(
        "flow-control key {key:?} not found: no message of it waits or is under way"
    ))
}

/// `POST /v2/flowControl/{key}/{call}`: pause, resume, resetRate; 405 for pin and unpin (not
/// supported), 404 for any other call.
async fn change(shared: &Shared, path: &str) -> Result<Json<Value>, ApiError> {
    let Some((key, call)) = path.rsplit_once('/') else {
        return Err(ApiError::not_found(format!(
            "no call on flow-control key {path:?}: POST …/{{key}}/resetRate"
        )));
    };
    match call {
        "resetRate" => {
            check_key(key)?;
            reset_rate(shared, key).await?;
            Ok(Json(json!({})))
        }
        "pause" | "resume" => {
            check_key(key)?;
            pause(shared, key, call == "pause").await?;
            Ok(Json(json!({})))
        }
        "pin" | "unpin" => Err(ApiError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "pinning a flow-control key is not supported (see docs/gateway.md)",
        )),
        _ => Err(ApiError::not_found(format!(
            "no flow-control call {call:?}: pause, resume, resetRate (pin, unpin: 405)"
        ))),
    }
}

/// `GET /v2/flowControl/{key}`; 404 when no lane keeps anything for the key (no value waits,
/// none is under way, its rate counts none), 400 for a key no publish could give. `POST` is
/// [`change`]; other methods 405.
pub(crate) async fn route(
    State(shared): State<Arc<Shared>>,
    method: Method,
    Path(key): Path<String>,
) -> Result<Json<Value>, ApiError> {
    if method == Method::POST {
        return change(&shared, &key).await;
    }
    if method != Method::GET {
        return Err(ApiError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "a flow-control key is read (GET) or changed (POST …/{key}/pause, resume, resetRate)",
        ));
    }
    check_key(&key)?;
    let lanes = flow_lanes(&shared).await?;
    match info(&shared, &lanes, &key).await? {
        Some(info) => Ok(Json(info)),
        None => Err(unknown(&key)),
    }
}
