//! The gateway's messages in the dashboard (`delayq gateway`; docs/dashboard.md, "Gateway").
//!
//! A queue is a gateway's when `delayq_gateway_keys:{NAME}` exists (the gateway seeds it when
//! it starts), or a lane of one (`GATEWAY:q:NAME`, `GATEWAY:fc:...`) when the gateway's lanes
//! hash holds it: one `EXISTS` or `HEXISTS` per page. Its rows then carry `message`, the
//! envelope decoded by the gateway crate (its one home: `delayq_gateway::view`, secrets
//! redacted), with the body's first [`PREVIEW`] bytes and length; a dead letter's also
//! `response`, its last answer (one `GET` per dead row: status, headers, the first
//! [`PREVIEW`] bytes of the body the gateway kept). An envelope longer than the bytes a row
//! reads ([`READ`]) is decoded in the entry's detail, which reads 64 KiB (job.rs).
//!
//! `GET /api/gateway`: the gateways among the queues (one `EXISTS` per queue name the
//! overview's discovery finds), each with its QStash queues and flow-control lanes (one
//! `HGETALL` of the lanes hash, capped at [`MOST_LANES`]; each QStash queue's counters as the
//! overview reads a row), a page of its schedules ([`MOST_SCHEDULES`], as the schedules tab
//! reads them) and its dead letters' count.

use super::preview::{
    self, dead_row, delivery_fields, pending_row, shown, DEAD_HEADER, ENTRY_HEADER, PREVIEW, READ,
};
use super::{bounded, failure, Shared, Ui};
use crate::text_codec::{encode_hex, TextCodec};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use bytes::Bytes;
use delayq::entry::unpack_head;
use delayq::fred::interfaces::{HashesInterface, KeysInterface, SortedSetsInterface};
use delayq::inspect::{Preview, PreviewList};
use delayq::{DelayedQueue, QueueKeys};
use delayq_gateway::view;
use serde_json::{json, Value};
use std::collections::HashMap;

/// The gateway's queue unless `--queue` names another.
const DEFAULT_QUEUE: &str = "delayq-gateway";
/// The most lanes the page reads of one gateway.
const MOST_LANES: usize = 500;
/// The most schedules the page shows of one gateway (the next due first).
const MOST_SCHEDULES: usize = 100;

/// The gateway the queue `name` belongs to, itself or as a lane; `None` for any other queue.
pub(super) async fn gateway_of(ui: &Ui, name: &str) -> anyhow::Result<Option<String>> {
    let client = &ui.ctx.client;
    let own: bool = client.exists(view::signing_keys_key(name)).await?;
    if own {
        return Ok(Some(name.to_owned()));
    }
    let Some(gateway) = view::lane_gateway(name) else {
        return Ok(None);
    };
    let lane: bool = client.hexists(view::lanes_key(gateway), name).await?;
    Ok(lane.then(|| gateway.to_owned()))
}

/// `row` with `message`: the envelope `value` (`len` bytes long in whole) decoded, its body's
/// first `body_shown` bytes as `body` (text) or `bodyHex`, and `bodyCut`; or, when `value` is
/// only the envelope's start, `{"cut": true}`; either way without the row's `value` (or `hex`)
/// preview of the envelope's bytes, which hold the forwarded headers. Nothing changes when it
/// is no envelope.
pub(super) fn attach(row: &mut Value, value: &[u8], len: u64, body_shown: usize) {
    let message = match (value.len() as u64) < len {
        true => None,
        false => match view::decode_message(value) {
            Some(message) => Some(message),
            // Not a gateway's envelope: its bytes as any queue's.
            None => return,
        },
    };
    // The envelope's own bytes hold the forwarded headers' values: never shown, as text or hex.
    if let Value::Object(fields) = row {
        fields.remove("value");
        fields.remove("hex");
        fields.remove("codec");
        fields.remove("class");
    }
    let Some(message) = message else {
        row["message"] = json!({ "cut": true, "envelopeLength": len });
        return;
    };
    let mut fields = message.fields;
    let start = &message.body[..message.body.len().min(body_shown)];
    match std::str::from_utf8(start) {
        Ok(text) => fields["body"] = text.into(),
        Err(err) if err.error_len().is_none() => {
            fields["body"] = String::from_utf8_lossy(&start[..err.valid_up_to()]).into();
        }
        Err(_) => fields["bodyHex"] = encode_hex(start).into(),
    }
    fields["bodyCut"] = (message.body.len() > body_shown).into();
    row["message"] = fields;
}

/// A dead row's `response`: the last answer the gateway `gateway` kept of its message.
pub(super) async fn answer(ui: &Ui, gateway: &str, row: &mut Value, excerpt: usize) {
    let Some(id) = row["message"]["messageId"].as_str() else {
        return;
    };
    let raw: Option<Bytes> = ui
        .ctx
        .client
        .get(view::response_key(gateway, id))
        .await
        .ok()
        .flatten();
    if let Some(answer) = raw.and_then(|raw| view::decode_answer(&raw, excerpt)) {
        row["response"] = answer;
    }
}

/// `count` rows of the list `tab` of the gateway queue `queue` from `from`, as
/// [`detail`](super::detail) answers them, each with its message decoded.
pub(super) async fn page(
    ui: &Ui,
    gateway: &str,
    queue: &DelayedQueue<TextCodec>,
    tab: &str,
    from: usize,
    count: usize,
) -> anyhow::Result<Vec<Value>> {
    let (list, read) = match tab {
        "ready" => (PreviewList::Ready, READ),
        "in_flight" => (PreviewList::InFlight, READ),
        "dead" => (PreviewList::Dead, READ + DEAD_HEADER),
        _ => (PreviewList::Pending, READ + ENTRY_HEADER),
    };
    let members = preview::page(queue, list, from, count, read).await?;
    let mut rows = Vec::with_capacity(members.len());
    for member in &members {
        let mut row = row(queue, list, member, PREVIEW);
        if list == PreviewList::Dead {
            answer(ui, gateway, &mut row, PREVIEW).await;
        }
        attempts(ui, queue, list, member, &mut row).await?;
        rows.push(row);
    }
    Ok(rows)
}

/// An entry's detail in the gateway `gateway`'s queue: its row with the message decoded (the
/// value and body shown up to `shown` bytes), its attempts, and a dead letter's last answer.
pub(super) async fn entry(
    ui: &Ui,
    gateway: &str,
    queue: &DelayedQueue<TextCodec>,
    (list, member): (PreviewList, &Preview),
    shown: usize,
) -> anyhow::Result<Value> {
    let mut row = row(queue, list, member, shown);
    attempts(ui, queue, list, member, &mut row).await?;
    if list == PreviewList::Dead {
        answer(ui, gateway, &mut row, shown).await;
    }
    Ok(row)
}

/// A message waiting for its next attempt (pending or ready): `attempts` in its row, those
/// made so far as delayq counts them (`delayq_attempts:{NAME}`, keyed by the value's bytes;
/// one HGET).
pub(super) async fn attempts(
    ui: &Ui,
    queue: &DelayedQueue<TextCodec>,
    list: PreviewList,
    member: &Preview,
    row: &mut Value,
) -> anyhow::Result<()> {
    if let Some(value) = whole_value(queue, list, member) {
        if row["message"]["messageId"].is_string() {
            let field = Bytes::copy_from_slice(value);
            let made: Option<u64> = ui.ctx.client.hget(queue.keys().attempts(), field).await?;
            row["attempts"] = made.unwrap_or(0).into();
        }
    }
    Ok(())
}

/// The whole value of a pending entry or a ready value read as `member`, when it fit in what
/// was read.
fn whole_value<'a>(
    queue: &DelayedQueue<TextCodec>,
    list: PreviewList,
    member: &'a Preview,
) -> Option<&'a [u8]> {
    let len = member.len?;
    match list {
        PreviewList::Pending => {
            let entry = unpack_head(&member.head, len, queue.options().format).ok()?;
            let value_len = len - (member.head.len() - entry.value.len()) as u64;
            (entry.value.len() as u64 == value_len).then_some(entry.value)
        }
        PreviewList::Ready => (member.head.len() as u64 == len).then_some(&member.head[..]),
        _ => None,
    }
}

/// One member's row, its message decoded; its value and its body shown up to `limit` bytes.
pub(super) fn row(
    queue: &DelayedQueue<TextCodec>,
    list: PreviewList,
    member: &Preview,
    limit: usize,
) -> Value {
    let body_shown = limit;
    let codec = queue.inspect().codec();
    let len = member.len.unwrap_or_default();
    match list {
        PreviewList::Pending => {
            let format = queue.options().format;
            let mut row = pending_row(codec, format, member, limit);
            if let Ok(entry) = unpack_head(&member.head, len, format) {
                let value_len = len - (member.head.len() - entry.value.len()) as u64;
                attach(&mut row, entry.value, value_len, body_shown);
            }
            row
        }
        PreviewList::Dead => {
            let mut row = dead_row(queue, member, limit);
            let letter =
                delayq::reliable::dead_letter(queue.keys().dead(), member.head.clone(), |_| Ok(()));
            if letter.value.is_ok() {
                let header = member.head.len() - letter.raw.len();
                attach(&mut row, &letter.raw, len - header as u64, body_shown);
            }
            row
        }
        _ => {
            let mut row = match member.len {
                Some(len) => shown(codec, &member.head, len, limit),
                None => json!({ "error": "its value is gone (acknowledged meanwhile?)" }),
            };
            if list == PreviewList::InFlight {
                delivery_fields(&mut row, member.id.as_deref().unwrap_or(""), member.at_ms);
            }
            if member.len.is_some() {
                attach(&mut row, &member.head, len, body_shown);
            }
            row
        }
    }
}

/// `GET /api/gateway`: `{"gateways": [...]}`, empty when no queue is a gateway's.
pub(super) async fn gateways(State(ui): State<Shared>) -> Response {
    match bounded(read(&ui)).await {
        Ok(body) => Json(body).into_response(),
        Err(err) => failure(StatusCode::BAD_GATEWAY, format!("{err:#}")),
    }
}

async fn read(ui: &Ui) -> anyhow::Result<Value> {
    // The queues, the gateways their lanes name, and the gateway's default queue (an idle
    // gateway's own queue may have no key of its own).
    let mut names = ui.names().await?;
    let lanes_of: Vec<String> = names
        .iter()
        .filter_map(|name| view::lane_gateway(name).map(str::to_owned))
        .collect();
    names.extend(lanes_of);
    names.push(DEFAULT_QUEUE.to_owned());
    names.sort();
    names.dedup();
    names.retain(|name| ui.outside(name).is_none());
    let pipeline = ui.ctx.client.pipeline();
    for name in &names {
        let _: () = pipeline.exists(view::signing_keys_key(name)).await?;
    }
    let found: Vec<bool> = match names.is_empty() {
        true => Vec::new(),
        false => pipeline.all().await?,
    };
    let mut gateways = Vec::new();
    for (name, _) in names.iter().zip(found).filter(|(_, is)| *is) {
        gateways.push(one(ui, name).await?);
    }
    Ok(json!({ "now_ms": delayq::time::now_ms(), "gateways": gateways }))
}

/// One gateway: its own queue's row, its lanes, its schedules and its dead letters' count.
async fn one(ui: &Ui, name: &str) -> anyhow::Result<Value> {
    let client = &ui.ctx.client;
    let registry = view::lanes_key(name);
    let count: u64 = client.hlen(&registry).await?;
    let raw: HashMap<String, Bytes> = match count as usize <= MOST_LANES {
        true => client.hgetall(&registry).await?,
        false => HashMap::new(),
    };
    // A lane outside `--match` is not shown (nor read).
    let mut lanes: Vec<(String, Value)> = raw
        .iter()
        .filter(|(lane, _)| ui.outside(lane).is_none())
        .filter_map(|(lane, json)| Some((lane.clone(), view::lane_json(lane, json)?)))
        .collect();
    lanes.sort_by(|a, b| a.0.cmp(&b.0));
    let own = ui.row(name).await?;
    let mut dead = own["dead"].as_u64().unwrap_or(0);
    let (mut queues, mut flows) = (Vec::new(), Vec::new());
    for (lane, mut json) in lanes {
        let row = ui.row(&lane).await?;
        let lag = row["pending"].as_u64().unwrap_or(0) + row["ready"].as_u64().unwrap_or(0);
        dead += row["dead"].as_u64().unwrap_or(0);
        json["lag"] = lag.into();
        json["inFlight"] = row["in_flight"].clone();
        json["dead"] = row["dead"].clone();
        match json["name"].is_null() {
            true => flows.push(json),
            false => queues.push(json),
        }
    }
    Ok(json!({
        "name": name,
        "queue": own,
        "dlq": dead,
        "lanes": count,
        "lanesShown": queues.len() + flows.len(),
        "queues": queues,
        "flowControl": flows,
        "schedules": schedules(ui, name).await?,
    }))
}

/// The gateway's schedules, the next due first, at most [`MOST_SCHEDULES`], with their total.
async fn schedules(ui: &Ui, name: &str) -> anyhow::Result<Value> {
    let keys = QueueKeys::new(name);
    let client = &ui.ctx.client;
    let total: u64 = client.zcard(keys.schedules()).await?;
    let last = MOST_SCHEDULES as i64 - 1;
    let ids: Vec<String> = client
        .zrange(keys.schedules(), 0, last, None, false, None, false)
        .await?;
    let queue = DelayedQueue::builder(client.clone(), name, delayq::codec::ByteArrayCodec)
        .options(ui.ctx.global.options())
        .transfer(false)
        .build()
        .await?;
    let mut rows = Vec::with_capacity(ids.len());
    for id in ids {
        // Removed between the reads, or not the gateway's: left out.
        if let Ok(Some(info)) = queue.schedules().get(&id).await {
            if let Some(mut json) = view::schedule_json(&info) {
                json["nextMs"] = info.next_ms.into();
                rows.push(json);
            }
        }
    }
    Ok(json!({ "total": total, "shown": rows }))
}
