//! `GET /api/workers?per_queue=`: every live delayq process across the queues the dashboard
//! sees, each with the queues it serves and the deliveries it holds in flight.
//!
//! The processes come from the registry of every process (`delayq_live:{delayq}`, one
//! `ZRANGEBYSCORE`, see `delayq::inspect::live_processes`), their records merged by id (a
//! process's worker and scheduler share it); a delivery is known by its id, which names the
//! process that took it, when, and the attempt (`delayq::reliable::DeliveryOrigin`). The
//! deliveries are read from the queues the live processes serve and those the gauges' last
//! reading saw holding some (at most [`MAX_QUEUES`] queues, in name order): per queue the
//! `per_queue` nearest deadlines with their count (`ZCARD` and a bounded `ZRANGE`, ids only,
//! no value, in one round trip), 16 queues at a time. A delivery whose process is not live
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
/// The most queues whose deliveries one answer reads.
const MAX_QUEUES: usize = 1_000;
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
    fn add(&mut self, record: ProcessInfo, queues: impl IntoIterator<Item = String>) {
        let first = self.kinds.is_empty();
        self.kinds.insert(record.kind);
        self.queues.extend(queues);
        self.patterns.extend(record.patterns);
        self.started_ms = match first {
            true => record.started_ms,
            false => self.started_ms.min(record.started_ms),
        };
        self.beat_ms = self.beat_ms.max(record.beat_ms);
        (self.host, self.pid, self.version) = (record.host, record.pid, record.version);
    }
}

impl Process {
    /// The process as the answer has it, its deliveries earliest start first.
    fn json(mut self, id: String) -> serde_json::Value {
        self.in_flight
            .sort_by_key(|row| row["started_ms"].as_i64().unwrap_or(i64::MAX));
        json!({
            "id": id,
            "kinds": self.kinds,
            "host": self.host,
            "pid": self.pid,
            "version": self.version,
            "started_ms": self.started_ms,
            "beat_ms": self.beat_ms,
            "queues": self.queues,
            "patterns": self.patterns,
            "in_flight": self.in_flight,
        })
    }
}

/// Puts each delivery read with the live process that holds it: the queues' rows (how many
/// deliveries each holds and shows, or why it was not read) and the deliveries no live process
/// holds.
fn place(
    reads: Vec<Read>,
    processes: &mut BTreeMap<String, Process>,
    now_ms: i64,
) -> (Vec<serde_json::Value>, Vec<serde_json::Value>) {
    let (mut queues, mut unowned) = (Vec::new(), Vec::new());
    for (name, read) in reads {
        let page = match read {
            Ok(page) => page,
            Err(err) => {
                queues.push(json!({ "name": name, "error": format!("{err:#}") }));
                continue;
            }
        };
        queues.push(json!({
            "name": name,
            "in_flight": page.total,
            "shown": page.deliveries.len(),
        }));
        for delivery in page.deliveries {
            let origin = delivery.origin;
            let row = json!({
                "queue": name,
                "id": delivery.id,
                "process": origin.process,
                "attempt": origin.attempt,
                "started_ms": origin.started_ms,
                "running_ms": origin.started_ms.map(|at| now_ms - at),
                "deadline_ms": delivery.deadline_ms,
            });
            match origin.process.as_ref().and_then(|id| processes.get_mut(id)) {
                Some(process) => process.in_flight.push(row),
                None => unowned.push(row),
            }
        }
    }
    (queues, unowned)
}

/// What one queue gave: a page of its deliveries.
type Read = (String, anyhow::Result<InFlightPage>);

impl Ui {
    async fn deliveries(&self, name: String, per_queue: usize) -> Read {
        let read = async {
            Ok(self
                .queue(&name)
                .await?
                .inspect()
                .in_flight(per_queue)
                .await?)
        };
        let read = bounded(read).await;
        (name, read)
    }

    /// The live processes within `--match` (a process serving none of its queues left out,
    /// unless it finds queues by discovery), merged by id.
    async fn live(&self) -> anyhow::Result<BTreeMap<String, Process>> {
        let mut processes: BTreeMap<String, Process> = BTreeMap::new();
        for record in delayq::inspect::live_processes(&self.ctx.client).await? {
            let queues: Vec<String> = record
                .queues
                .iter()
                .filter(|name| self.serves(name))
                .cloned()
                .collect();
            if queues.is_empty() && record.patterns.is_empty() && self.pattern.is_some() {
                continue;
            }
            let id = record.id.clone();
            processes.entry(id).or_default().add(record, queues);
        }
        Ok(processes)
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
    let mut processes = match bounded(ui.live()).await {
        Ok(processes) => processes,
        Err(err) => return failure(StatusCode::BAD_GATEWAY, format!("{err:#}")),
    };
    // The queues served, and those last seen holding deliveries (of a process gone, say).
    let mut names: BTreeSet<String> = processes
        .values()
        .flat_map(|p| p.queues.iter().cloned())
        .collect();
    let seen = ui.seen.seen();
    let holding = seen.into_iter().filter(|(_, s)| s.in_flight > 0);
    names.extend(holding.map(|(name, _)| name).filter(|name| ui.serves(name)));
    let queues_left_out = names.len().saturating_sub(MAX_QUEUES);
    let ui_ref = &ui;
    let reads: Vec<Read> = futures::stream::iter(names.into_iter().take(MAX_QUEUES))
        .map(|name| async move { ui_ref.deliveries(name, per_queue).await })
        .buffered(QUEUES_AT_ONCE)
        .collect()
        .await;
    let now_ms = delayq::time::now_ms();
    let (queues, unowned) = place(reads, &mut processes, now_ms);
    let processes: Vec<_> = processes
        .into_iter()
        .map(|(id, process)| process.json(id))
        .collect();
    Json(json!({
        "now_ms": now_ms,
        "per_queue": per_queue,
        "processes": processes,
        "unowned": unowned,
        "queues": queues,
        "queues_left_out": queues_left_out,
    }))
    .into_response()
}
