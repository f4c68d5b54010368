//! `GET /api/queues`: the overview, a page of the queues' rows with the total.

use super::health::{self, Signals, STUCK_MS};
use super::{bounded, failure, order, paging, Shared, Ui};
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use delayq::Discovery;
use futures::StreamExt;
use serde_json::json;
use std::collections::HashMap;

/// Queues on a page of the overview unless `limit` says otherwise, and the most `limit` may ask.
const PAGE: usize = 100;
const MAX_PAGE: usize = 500;
/// How many queues' rows are read at once.
const ROWS_AT_ONCE: usize = 16;

impl Ui {
    /// The names of every queue with any key of its own (within `--match`), sorted.
    pub(super) async fn names(&self) -> anyhow::Result<Vec<String>> {
        let mut discovery = Discovery::all();
        if let Some(pattern) = &self.pattern {
            discovery = discovery.matching(pattern.as_str());
        }
        Ok(discovery.list(&self.ctx.client).await?)
    }

    /// The queue's row with its recent activity, live processes and health, or its name and
    /// why it could not be read (a wrong-typed key, say).
    async fn row_or_error(&self, name: &str) -> serde_json::Value {
        let read = async {
            let recent = async { super::activity::recent(&self.queue(name).await?).await };
            let (row, recent) = tokio::join!(self.row(name), recent);
            let (mut row, (activity, processes)) = (row?, recent?);
            let now = delayq::time::now_ms();
            let ready_age_ms = match row["ready"].as_u64() {
                Some(0) | None => None,
                Some(_) => self.seen.ready_since_ms(name).map(|since| now - since),
            };
            let signals = Signals {
                paused: row["paused"].as_bool().unwrap_or(false),
                overdue_ms: row["overdue_ms"].as_i64().unwrap_or(0),
                ready: row["ready"].as_u64().unwrap_or(0),
                ready_age_ms,
                taken: activity.taken,
                acked: activity.acked,
                retried: activity.retried,
                dead: activity.dead,
            };
            let health = health::judge(&signals, self.lagging_after);
            row["ready_age_ms"] = json!(ready_age_ms);
            row["health"] = json!({ "state": health.state, "reason": health.reason });
            row["activity"] = super::activity::recent_json(&activity);
            row["processes"] = json!(processes);
            anyhow::Ok(row)
        };
        match bounded(read).await {
            Ok(row) => row,
            Err(err) => json!({
                "name": name,
                "error": format!("{err:#}"),
                "health": { "state": "unreadable", "reason": format!("{err:#}") },
            }),
        }
    }

    /// One queue's counters, next due time, most overdue entry, pause flag and stuck state.
    pub(crate) async fn row(&self, name: &str) -> anyhow::Result<serde_json::Value> {
        let queue = self.queue(name).await?;
        let stats = queue.inspect().stats().await?;
        let reliable = queue.inspect().reliable_stats().await?;
        let paused = queue.inspect().is_paused().await?;
        let now = delayq::time::now_ms();
        // A head due at -inf (i64::MIN) is overdue the most, not wrapped into the future.
        let overdue_ms = stats
            .next_due_ms
            .map_or(0, |due| crate::show::overdue_ms(due, now));
        Ok(json!({
            "name": name,
            "pending": stats.pending,
            "ready": stats.ready,
            "in_flight": reliable.in_flight,
            "dead": reliable.dead,
            "quarantined": stats.quarantined,
            "next_due_ms": stats.next_due_ms,
            "overdue_ms": overdue_ms,
            "paused": paused,
            "stuck": overdue_ms >= STUCK_MS,
        }))
    }
}

/// `GET /api/queues`: one page of the queues whose name holds `q` (in the state `state`, in
/// the order `sort`), and how many there are. The page's rows are read now; the order and the
/// state filter over every queue come from the gauges' snapshot, whose age the answer gives.
pub(super) async fn overview(
    State(ui): State<Shared>,
    Query(params): Query<HashMap<String, String>>,
) -> Response {
    let (offset, limit) = match paging::numbers(&params, [("offset", 0), ("limit", PAGE)]) {
        Ok([offset, limit]) => (offset, limit.clamp(1, MAX_PAGE)),
        Err(refused) => return *refused,
    };
    let (sort, state) = match order_params(&params) {
        Ok(order) => order,
        Err(refused) => return *refused,
    };
    let part = params.get("q").map_or("", String::as_str);
    let names = match bounded(ui.names()).await {
        Ok(names) => names,
        Err(err) => return failure(StatusCode::BAD_GATEWAY, format!("{err:#}")),
    };
    let mut names: Vec<String> = names.into_iter().filter(|n| n.contains(part)).collect();
    let now_ms = delayq::time::now_ms();
    let lagging_after = ui.lagging_after;
    let staleness = order::arrange(
        &mut names,
        sort,
        state,
        || ui.seen.seen(),
        now_ms,
        lagging_after,
    );
    let page: Vec<String> = names.iter().skip(offset).take(limit).cloned().collect();
    let ui_ref = &ui;
    let mut rows: Vec<serde_json::Value> = futures::stream::iter(page)
        .map(|name| async move { ui_ref.row_or_error(&name).await })
        .buffered(ROWS_AT_ONCE)
        .collect()
        .await;
    // The snapshot cannot tell a failing queue (it holds no activity): the page's rows, judged
    // in full, are put in order among themselves (stable: the snapshot's order breaks ties).
    if sort == "problems" {
        rows.sort_by_key(|row| order::state_rank(row["health"]["state"].as_str().unwrap_or("")));
    }
    let snapshot = staleness.map(|s| json!({ "age_ms": s.age_ms, "unread": s.unread }));
    Json(json!({
        "now_ms": delayq::time::now_ms(),
        "writes": ui.access.writes(),
        "codec": delayq::codec::Codec::name(ui.ctx.codecs.default()),
        "stuck_after_ms": STUCK_MS,
        "lagging_after_ms": lagging_after.as_millis() as u64,
        "total": names.len(),
        "offset": offset,
        "limit": limit,
        "sort": sort,
        "state": state,
        "snapshot": snapshot,
        "queues": rows,
    }))
    .into_response()
}

/// `sort` (`name` when absent) and `state` (none when absent or empty), each one of the known
/// values; else a 400 naming them.
fn order_params(
    params: &HashMap<String, String>,
) -> Result<(&'static str, Option<&'static str>), Box<Response>> {
    let known = |key: &str, value: &str, among: &[&'static str]| {
        among.iter().copied().find(|&k| k == value).ok_or_else(|| {
            let list = among.join(", ");
            Box::new(failure(
                StatusCode::BAD_REQUEST,
                format!("{key}={value:?}: one of {list}"),
            ))
        })
    };
    let sort = known(
        "sort",
        params.get("sort").map_or("name", String::as_str),
        &order::SORTS,
    )?;
    let state = match params.get("state").map(String::as_str) {
        None | Some("") => None,
        Some(state) => Some(known("state", state, &health::STATES)?),
    };
    Ok((sort, state))
}
