//! `GET /api/workers?per_queue=`: every live delayq process across the queues the dashboard
//! sees, each with the queues it serves and the deliveries it holds in flight.
//!
//! A process is known by its registry records (one per queue it serves, see
//! `delayq::inspect::ProcessInfo`), merged by id; a delivery by its id, which names the
//! process that took it, when, and the attempt (`delayq::reliable::DeliveryOrigin`). Per queue
//! the page reads its registry (one pipelined round trip, as the overview does) and its
//! `per_queue` nearest-deadline deliveries with their count (one more: `ZCARD` and a bounded
//! `ZRANGE`, ids only, no value), 16 queues at a time. A delivery whose process is not live
//! (it died, or an id of the earlier form) is listed apart, under `unowned`.

use super::{bounded, failure, paging, Shared, Ui};
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use delayq::inspect::ProcessInfo;
use delayq::reliable::InFlightPage;
use futures::StreamExt;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Deliveries read per queue unless `per_queue` says otherwise, and the most it may ask.
const PER_QUEUE: usize = 50;
const MAX_PER_QUEUE: usize = 500;
/// How many queues are read at once.
const QUEUES_AT_ONCE: usize = 16;

/// One live process, its records merged.
#[derive(Default)]
struct Process {
    kinds: BTreeSet<String>,
    host: String,
    pid: u32,
    version: String,
    started_ms: i64,
    beat_ms: i64,
    queues: BTreeSet<String>,
    patterns: BTreeSet<String>,
    in_flight: Vec<serde_json::Value>,
}

impl Process {
    fn add(&mut self, queue: &str, record: ProcessInfo) {
        let first = self.kinds.is_empty();
        self.kinds.insert(record.kind);
        self.queues.insert(queue.to_owned());
        self.patterns.extend(record.patterns);
        self.started_ms = match first {
            true => record.started_ms,
            false => self.started_ms.min(record.started_ms),
        };
        self.beat_ms = self.beat_ms.max(record.beat_ms);
        (self.host, self.pid, self.version) = (record.host, record.pid, record.version);
    }
}

/// What one queue gave: its live processes' records and a page of its deliveries.
type Read = (String, anyhow::Result<(Vec<ProcessInfo>, InFlightPage)>);

impl Ui {
    async fn read_for_workers(&self, name: String, per_queue: usize) -> Read {
        let read = async {
            let queue = self.queue(&name).await?;
            let (processes, in_flight) = tokio::join!(
                queue.inspect().processes(),
                queue.inspect().in_flight(per_queue)
            );
            anyhow::Ok((processes?, in_flight?))
        };
        let read = bounded(read).await;
        (name, read)
    }
}

/// `GET /api/workers`.
pub(super) async fn workers(
    State(ui): State<Shared>,
    Query(params): Query<HashMap<String, String>>,
) -> Response {
    let per_queue = match paging::numbers(&params, [("per_queue", PER_QUEUE)]) {
        Ok([n]) => n.min(MAX_PER_QUEUE),
        Err(refused) => return *refused,
    };
    let names = match bounded(ui.names()).await {
        Ok(names) => names,
        Err(err) => return failure(StatusCode::BAD_GATEWAY, format!("{err:#}")),
    };
    let ui_ref = &ui;
    let reads: Vec<Read> = futures::stream::iter(names)
        .map(|name| async move { ui_ref.read_for_workers(name, per_queue).await })
        .buffered(QUEUES_AT_ONCE)
        .collect()
        .await;
    let now_ms = delayq::time::now_ms();
    let mut processes: BTreeMap<String, Process> = BTreeMap::new();
    let mut pages = Vec::new();
    let mut queues = Vec::new();
    for (name, read) in reads {
        match read {
            Ok((records, page)) => {
                for record in records {
                    let id = record.id.clone();
                    processes.entry(id).or_default().add(&name, record);
                }
                queues.push(json!({
                    "name": name,
                    "in_flight": page.total,
                    "shown": page.deliveries.len(),
                }));
                pages.push((name, page));
            }
            Err(err) => queues.push(json!({ "name": name, "error": format!("{err:#}") })),
        }
    }
    let mut unowned = Vec::new();
    for (name, page) in pages {
        for delivery in page.deliveries {
            let row = json!({
                "queue": name,
                "id": delivery.id,
                "process": delivery.origin.process,
                "attempt": delivery.origin.attempt,
                "started_ms": delivery.origin.started_ms,
                "running_ms": delivery.origin.started_ms.map(|at| now_ms - at),
                "deadline_ms": delivery.deadline_ms,
            });
            match delivery
                .origin
                .process
                .as_ref()
                .and_then(|id| processes.get_mut(id))
            {
                Some(process) => process.in_flight.push(row),
                None => unowned.push(row),
            }
        }
    }
    let processes: Vec<_> = processes
        .into_iter()
        .map(|(id, mut p)| {
            p.in_flight
                .sort_by_key(|row| row["started_ms"].as_i64().unwrap_or(i64::MAX));
            json!({
                "id": id,
                "kinds": p.kinds,
                "host": p.host,
                "pid": p.pid,
                "version": p.version,
                "started_ms": p.started_ms,
                "beat_ms": p.beat_ms,
                "queues": p.queues,
                "patterns": p.patterns,
                "in_flight": p.in_flight,
            })
        })
        .collect();
    Json(json!({
        "now_ms": now_ms,
        "per_queue": per_queue,
        "processes": processes,
        "unowned": unowned,
        "queues": queues,
    }))
    .into_response()
}
