//! `GET /api/queues/{name}/job/{tab}/{item}?at=N`: one entry of a queue in detail, its value
//! decoded and shown up to [`SHOWN`] bytes with its whole length; 404 when it is gone.
//!
//! `item` names the entry as the rows of the tab `tab` do: a pending entry by its offer handle,
//! a value in flight by its delivery id, a dead letter by its id; a ready value or a quarantined
//! entry, which have no name, by its position. `at` is the position the row had: a pending entry
//! is looked for among [`WINDOW`] ranks around it, a dead letter from there towards the head
//! (records leave only from the head), so no request reads more than [`WINDOW`] entries, in
//! steps of [`STEP`](crate::lists::STEP).

use super::preview::{self, dead_row, pending_row, ENTRY_HEADER, READ};
use super::search::WINDOW;
use super::{bounded, detail::TABS, failure, Shared};
use crate::lists::dead::locate_dead;
use crate::lists::locate;
use crate::text_codec::TextCodec;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use bytes::Bytes;
use delayq::fred::interfaces::{HashesInterface, ListInterface, SortedSetsInterface};
use delayq::inspect::{Preview, PreviewList};
use delayq::{DelayedQueue, OfferHandle};
use serde_json::{json, Value};
use std::collections::HashMap;

/// Bytes of a value the detail shows.
pub(super) const SHOWN: usize = 64 * 1024;

/// What names an entry, as parsed from the address.
enum Item {
    Handle(OfferHandle),
    Id(String),
    Position(usize),
}

pub(super) async fn job(
    State(ui): State<Shared>,
    Path((name, tab, item)): Path<(String, String, String)>,
    Query(params): Query<HashMap<String, String>>,
) -> Response {
    if let Some(outside) = ui.outside(&name) {
        return outside;
    }
    if !TABS.contains(&tab.as_str()) {
        let known = TABS.join(", ");
        return failure(StatusCode::BAD_REQUEST, format!("{tab:?}: one of {known}"));
    }
    let at = match params.get("at").map(|text| text.parse::<usize>()) {
        None => None,
        Some(Ok(at)) => Some(at),
        Some(Err(_)) => return failure(StatusCode::BAD_REQUEST, "at: not a whole number"),
    };
    let parsed = match tab.as_str() {
        "pending" => item.parse().map(Item::Handle).ok(),
        "ready" | "quarantine" => item.parse().map(Item::Position).ok(),
        _ => Some(Item::Id(item.clone())),
    };
    let Some(parsed) = parsed else {
        let what = if tab == "pending" {
            "an offer handle (18 hex digits)"
        } else {
            "a position"
        };
        return failure(StatusCode::BAD_REQUEST, format!("{item:?} is not {what}"));
    };
    match bounded(find(&ui, &name, &tab, parsed, at)).await {
        Ok(Some(mut row)) => {
            row["queue"] = json!(name);
            row["tab"] = json!(tab);
            row["item"] = json!(item);
            row["now_ms"] = json!(delayq::time::now_ms());
            row["shown_max"] = json!(SHOWN);
            Json(row).into_response()
        }
        Ok(None) => failure(
            StatusCode::NOT_FOUND,
            format!("no {tab} entry {item} in {name:?} (taken, moved or removed already)"),
        ),
        Err(err) => failure(StatusCode::BAD_GATEWAY, format!("{err:#}")),
    }
}

/// A pending entry's or a dead letter's detail row read as `member`; of a gateway's queue
/// (`gateway`): with the message decoded (gateway.rs).
async fn entry_row(
    ui: &super::Ui,
    gateway: Option<&str>,
    queue: &DelayedQueue<TextCodec>,
    list: PreviewList,
    member: Preview,
) -> anyhow::Result<Value> {
    let codec = queue.inspect().codec();
    Ok(match gateway {
        Some(gateway) => super::gateway::entry(ui, gateway, queue, (list, &member), SHOWN).await?,
        None if list == PreviewList::Pending => {
            pending_row(codec, queue.options().format, &member, SHOWN)
        }
        None => dead_row(queue, &member, SHOWN),
    })
}

/// The entry `item` of the list `tab` of the queue `name` as JSON, with its position `at` where
/// it has one; `None` when it is not there.
async fn find(
    ui: &super::Ui,
    name: &str,
    tab: &str,
    item: Item,
    at: Option<usize>,
) -> anyhow::Result<Option<Value>> {
    let queue = ui.queue(name).await?;
    let gateway = super::gateway::gateway_of(ui, name).await?;
    let (client, codec, keys) = (&ui.ctx.client, queue.inspect().codec(), queue.keys());
    let placed = |(at, mut row): (usize, Value)| {
        row["at"] = json!(at);
        row
    };
    Ok(match item {
        Item::Handle(handle) => {
            let start = at.map_or(0, |at| at.saturating_sub(WINDOW / 2));
            let shown = SHOWN + ENTRY_HEADER;
            let read =
                |offset, count| preview::page(&queue, PreviewList::Pending, offset, count, shown);
            let is_it = |member: &Preview| OfferHandle::of_entry(&member.head) == Some(handle);
            match locate(start, read, is_it).await? {
                Some((at, member)) => Some(placed((
                    at,
                    entry_row(ui, gateway.as_deref(), &queue, PreviewList::Pending, member).await?,
                ))),
                None => None,
            }
        }
        Item::Id(id) if tab == "in_flight" => {
            let deadline: Option<f64> = client.zscore(keys.inflight(), &id).await?;
            let value: Option<Bytes> = client.hget(keys.inflight_data(), &id).await?;
            value.zip(deadline).map(|(value, deadline)| {
                let mut row = preview::shown(codec, &value, value.len() as u64, SHOWN);
                preview::delivery_fields(&mut row, &id, Some(deadline as i64));
                if gateway.is_some() {
                    super::gateway::attach(&mut row, &value, value.len() as u64, SHOWN);
                }
                row
            })
        }
        // A record's header (attempts, time, error) comes before its value: room for it too.
        Item::Id(id) => match locate_dead(&queue, at, &id, SHOWN + READ).await? {
            Some((at, member)) => Some(placed((
                at,
                entry_row(ui, gateway.as_deref(), &queue, PreviewList::Dead, member).await?,
            ))),
            None => None,
        },
        Item::Position(at) => {
            let key = if tab == "ready" {
                keys.target()
            } else {
                keys.quarantine()
            };
            let value: Option<Bytes> = client.lindex(key, at as i64).await?;
            value.map(|value| {
                let len = value.len() as u64;
                match tab {
                    "ready" => {
                        let mut row = preview::shown(codec, &value, len, SHOWN);
                        if gateway.is_some() {
                            super::gateway::attach(&mut row, &value, len, SHOWN);
                        }
                        placed((at, row))
                    }
                    _ => placed((at, preview::shown_raw(&value, len, SHOWN))),
                }
            })
        }
    })
}
