//! `GET /api/queues/{name}`: one queue in detail; 404 for a queue with no key at all.
//!
//! Query: `tab` (`pending`, the default, `ready`, `in_flight`, `dead` or `quarantine`): the list
//! read, a page of it from `from` (0 by default); only that list is read. With `q`: the entries
//! matching it among at most [`search::WINDOW`] from `from` (see [`search`]), each with its
//! position `at`, and where to carry on.

use super::{failure, paging, preview, search, Shared};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use delayq::fred::interfaces::SortedSetsInterface;
use serde_json::json;
use std::collections::HashMap;

/// Rows of each list shown.
pub(super) const LIMIT: usize = 50;
/// The chart: one bar a minute over the next hour.
const BUCKET_MS: i64 = 60_000;
const BUCKETS: usize = 60;

pub(super) async fn queue(
    State(ui): State<Shared>,
    Path(name): Path<String>,
    Query(params): Query<HashMap<String, String>>,
) -> Response {
    if let Some(outside) = ui.outside(&name) {
        return outside;
    }
    let [from] = match paging::numbers(&params, [("from", 0)]) {
        Ok(from) => from,
        Err(refused) => return *refused,
    };
    let tab = params.get("tab").map_or("pending", String::as_str);
    if !TABS.contains(&tab) {
        let known = TABS.join(", ");
        return failure(
            StatusCode::BAD_REQUEST,
            format!("tab={tab:?}: one of {known}"),
        );
    }
    let q = params.get("q").map_or("", String::as_str);
    if q.len() > search::MAX_QUERY {
        let message = format!("q: at most {} bytes", search::MAX_QUERY);
        return failure(StatusCode::BAD_REQUEST, message);
    }
    match super::bounded(read(&ui, &name, tab, from, q)).await {
        Ok(Some(body)) => Json(body).into_response(),
        Ok(None) => failure(
            StatusCode::NOT_FOUND,
            format!("no queue {name:?}: no key of it exists"),
        ),
        Err(err) => failure(StatusCode::BAD_GATEWAY, format!("{err:#}")),
    }
}

/// The lists of a queue the detail shows, one at a time.
pub(super) const TABS: [&str; 5] = ["pending", "ready", "in_flight", "dead", "quarantine"];

/// The queue's detail with a page of the list `tab` (the matches of `q` when it is not empty);
/// `None` when the queue has no key at all.
async fn read(
    ui: &super::Ui,
    name: &str,
    tab: &str,
    from: usize,
    q: &str,
) -> anyhow::Result<Option<serde_json::Value>> {
    let row = ui.row(name).await?;
    let empty = ["pending", "ready", "in_flight", "dead", "quarantined"]
        .iter()
        .all(|k| row[k] == 0)
        && row["paused"] == false;
    if empty {
        return Ok(None);
    }
    let queue = ui.queue(name).await?;
    let now = delayq::time::now_ms();
    let mut body = json!({
        "now_ms": now,
        "queue": row,
        "codec": delayq::codec::Codec::name(ui.ctx.codec(queue.name())),
        "chart": chart(ui, queue.keys().timeout(), now).await?,
        "page": LIMIT,
        "tab": tab,
        "from": from,
    });
    let gateway = super::gateway::gateway_of(ui, name).await?;
    body["gateway"] = json!(gateway);
    let (queue, gateway) = (&queue, gateway.as_deref());
    if q.is_empty() {
        body["rows"] = json!(page(ui, gateway, queue, tab, from, LIMIT).await?);
    } else {
        let read = |at, n| page(ui, gateway, queue, tab, at, n);
        let found = search::scan(from, LIMIT, q, read).await?;
        found.answer(q, &mut body);
    }
    Ok(Some(body))
}

/// `count` rows of the list `tab` of `queue` from `from`, each value a preview; the queue of
/// the gateway `gateway` (itself or a lane): each with its message decoded (gateway.rs).
async fn page(
    ui: &super::Ui,
    gateway: Option<&str>,
    queue: &delayq::DelayedQueue<crate::text_codec::TextCodec>,
    tab: &str,
    from: usize,
    count: usize,
) -> anyhow::Result<Vec<serde_json::Value>> {
    let shown = preview::PREVIEW;
    if let Some(gateway) = gateway.filter(|_| tab != "quarantine") {
        return super::gateway::page(ui, gateway, queue, tab, from, count).await;
    }
    match tab {
        "ready" => preview::ready(queue, from, count, shown).await,
        "in_flight" => preview::in_flight(queue, from, count, shown).await,
        "dead" => preview::dead(queue, from, count, shown).await,
        "quarantine" => preview::quarantine(queue, from, count, shown).await,
        _ => preview::pending(queue, queue.options().format, from, count, shown).await,
    }
}

/// Entries due in each minute of the next hour, and how many are overdue now: one `ZCOUNT`
/// each, in one pipeline (each O(log n): no member is read, however many there are).
async fn chart(ui: &super::Ui, zset: &str, now: i64) -> anyhow::Result<serde_json::Value> {
    let pipeline = ui.ctx.client.pipeline();
    let _: () = pipeline.zcount(zset, f64::NEG_INFINITY, now as f64).await?;
    for i in 0..BUCKETS as i64 {
        let start = now + 1 + i * BUCKET_MS;
        let _: () = pipeline
            .zcount(zset, start as f64, (start + BUCKET_MS - 1) as f64)
            .await?;
    }
    let mut counts: Vec<u64> = pipeline.all().await?;
    let overdue = if counts.is_empty() {
        0
    } else {
        counts.remove(0)
    };
    Ok(json!({ "start_ms": now, "bucket_ms": BUCKET_MS, "counts": counts, "overdue": overdue }))
}
