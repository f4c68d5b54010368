//! The dashboard: its page (built into the binary, nothing fetched from elsewhere) and the JSON
//! API under `/api` that the page uses (documented in docs/operations.md).
//!
//! Reads: `GET /api/queues?offset=&limit=&q=&sort=&state=` (a page of the queues' counters, with
//! the total; `q`: a part of the name; every queue ordered and filtered, see overview.rs),
//! `GET /api/queues/{name}?tab=&from=` (one queue: the due times of the next hour and a page of
//! one of its lists, each value as a bounded preview), `GET /api/queues/{name}/activity`,
//! `/days?days=` and `/processes` (its last hour of activity, its last 90 days of it with
//! their dates, its live workers and schedulers).
//! `GET /api/workers?per_queue=`: every live process across the queues, with the queues it
//! serves and the deliveries it holds (workers.rs).
//! `GET /api/gateway`: the gateways' QStash queues, flow-control lanes, schedules and dead
//! letters' count; a gateway queue's rows carry each message decoded (gateway.rs).
//! `GET /api/whoami`: the role of the request's token and the role each action needs.
//! Writes, each with the token of a role that may do it as `Authorization: Bearer TOKEN` and
//! the header `X-Delayq-Write: 1` (access.rs):
//! `POST /api/queues/{name}/{replay,purge-dead,purge-quarantine,pause,resume}` and
//! `POST /api/queues/{name}/pending/{handle}/{cancel,run-now}`,
//! `POST /api/queues/{name}/dead/{at}/{id}/{retry,delete}`,
//! `POST /api/queues/{name}/in_flight/{id}/give-back`.
//! A queue's recurring schedules: `GET /api/queues/{name}/schedules` and
//! `POST /api/queues/{name}/schedules/{id}/{pause,resume,trigger,remove}` (schedules.rs).
//! A queue's flow-control limits and their use: `GET /api/queues/{name}/limits` and
//! `POST /api/queues/{name}/limits/{set-limits,clear-limits}` (limits.rs).

mod access;
mod activity;
mod detail;
mod gateway;
mod health;
mod items;
mod job;
mod limits;
mod order;
mod overview;
mod paging;
mod schedules;
mod search;
mod workers;

use crate::ctx::Ctx;
// The rows of a queue's lists, shared with the CLI's list commands.
use crate::lists::rows as preview;
use crate::text_codec::TextCodec;
use access::refusal;
pub(crate) use access::Tokens;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use delayq::DelayedQueue;
pub(crate) use health::LAGGING_AFTER;
use serde_json::json;
use std::sync::Arc;

const JAVASCRIPT: &str = "text/javascript; charset=utf-8";
/// The page and its assets, built into the binary: path, content type, body (index.html loads
/// the scripts, `app.js` first: the others add their parts to it).
const ASSETS: [(&str, &str, &str); 11] = [
    ("/", "text/html; charset=utf-8", include_str!("index.html")),
    (
        "/style.css",
        "text/css; charset=utf-8",
        include_str!("style.css"),
    ),
    ("/app.js", JAVASCRIPT, include_str!("app.js")),
    ("/access.js", JAVASCRIPT, include_str!("access.js")),
    ("/codec.js", JAVASCRIPT, include_str!("codec.js")),
    ("/search.js", JAVASCRIPT, include_str!("search.js")),
    ("/overview.js", JAVASCRIPT, include_str!("overview.js")),
    ("/schedules.js", JAVASCRIPT, include_str!("schedules.js")),
    ("/limits.js", JAVASCRIPT, include_str!("limits.js")),
    ("/workers.js", JAVASCRIPT, include_str!("workers.js")),
    ("/gateway.js", JAVASCRIPT, include_str!("gateway.js")),
];

/// How long a request waits for Redis: the client queues commands while it reconnects, so
/// without a bound a request would wait out the whole outage.
const REDIS_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// What every request of the dashboard shares.
pub(crate) struct Ui {
    pub(crate) ctx: Ctx,
    /// The tokens of the roles that may write; none: read-only.
    pub(crate) access: Arc<access::Tokens>,
    /// `--match`: the queues the dashboard shows and serves; every other name is answered 404
    /// before anything is read from Redis.
    pub(crate) pattern: Option<String>,
    /// The queues as the background read of the gauges last saw them: what the overview
    /// orders and filters every queue by.
    pub(crate) seen: Arc<crate::serve::Readings>,
    /// The `--allow-host` names: a write's `Origin` may be a page of one besides the
    /// request's own Host.
    pub(crate) origins: Vec<crate::serve::AllowedHost>,
    /// How long a queue's list may hold values, fewer taken than wait, before it reads
    /// "lagging" (`--lagging-after`; see health.rs).
    pub(crate) lagging_after: std::time::Duration,
    /// How long a request's body may take to arrive (`--http-header-timeout`).
    pub(crate) body_wait: std::time::Duration,
}

type Shared = Arc<Ui>;

/// The page, its assets and the API.
pub(crate) fn routes(ui: Ui) -> Router {
    let mut router = Router::new();
    for (path, content_type, body) in ASSETS {
        router = router.route(path, get(move || async move { asset(content_type, body) }));
    }
    let ui = Arc::new(ui);
    let api = Router::new()
        .route("/api/whoami", get(access::whoami))
        .route("/api/queues", get(overview::overview))
        .route("/api/workers", get(workers::workers))
        .route("/api/gateway", get(gateway::gateways))
        .route("/api/queues/{name}", get(detail::queue))
        .route("/api/queues/{name}/activity", get(activity::history))
        .route("/api/queues/{name}/days", get(activity::days))
        .route("/api/queues/{name}/processes", get(activity::processes))
        .route("/api/queues/{name}/schedules", get(schedules::list))
        .route(
            "/api/queues/{name}/schedules/{id}/{action}",
            post(schedules::act),
        )
        .route("/api/queues/{name}/limits", get(limits::get))
        .route("/api/queues/{name}/limits/{action}", post(limits::act))
        .route("/api/queues/{name}/{action}", post(write))
        .route("/api/queues/{name}/job/{tab}/{item}", get(job::job))
        .route(
            "/api/queues/{name}/pending/{handle}/{action}",
            post(items::pending),
        )
        .route(
            "/api/queues/{name}/dead/{at}/{id}/{action}",
            post(items::dead),
        )
        .route(
            "/api/queues/{name}/in_flight/{id}/{action}",
            post(items::in_flight),
        )
        .route_layer(axum::middleware::from_fn_with_state(
            ui.clone(),
            access::reads,
        ))
        .with_state(ui);
    router.merge(api)
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            // Nothing from elsewhere: scripts, styles and images come from this server only.
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'self'; img-src 'self' data:",
            ),
        ],
        body,
    )
        .into_response()
}

/// `work` bounded by [`REDIS_WAIT`]; past it, an error saying Redis did not answer.
pub(crate) async fn bounded<T>(
    work: impl std::future::Future<Output = anyhow::Result<T>>,
) -> anyhow::Result<T> {
    match tokio::time::timeout(REDIS_WAIT, work).await {
        Ok(result) => result,
        Err(_) => anyhow::bail!("Redis did not answer within {} s", REDIS_WAIT.as_secs()),
    }
}

/// An error as `{"error": "..."}` with its status.
pub(crate) fn failure(status: StatusCode, message: impl Into<String>) -> Response {
    (status, Json(json!({ "error": message.into() }))).into_response()
}

impl Ui {
    /// Whether `--match` lets the dashboard serve the queue `name`.
    fn serves(&self, name: &str) -> bool {
        self.pattern
            .as_deref()
            .is_none_or(|pattern| delayq::names::glob_match(pattern, name))
    }

    /// The 404 for a queue outside `--match`, if `name` is one.
    pub(crate) fn outside(&self, name: &str) -> Option<Response> {
        match self.serves(name) {
            true => None,
            false => Some(failure(
                StatusCode::NOT_FOUND,
                format!("no queue {name:?} here: the dashboard serves only --match"),
            )),
        }
    }

    /// The queue `name`, read through the global options; no scheduler. A name outside
    /// `--match` is refused here too, so that no handler can reach one.
    pub(crate) async fn queue(&self, name: &str) -> anyhow::Result<DelayedQueue<TextCodec>> {
        anyhow::ensure!(self.serves(name), "the queue {name:?} is outside --match");
        Ok(self.ctx.queue(name).await?)
    }
}

/// `POST /api/queues/{name}/{action}`: replay or purge dead letters, purge the quarantine,
/// pause or resume delayq's schedulers for the queue.
async fn write(
    State(ui): State<Shared>,
    Path((name, action)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    if let Some(refused) = refusal(&ui, &headers, &action).or_else(|| ui.outside(&name)) {
        return refused;
    }
    match bounded(run_write(&ui, &name, &action)).await {
        Ok(Some(body)) => {
            tracing::info!(queue = %name, action, "dashboard write");
            Json(body).into_response()
        }
        Ok(None) => failure(StatusCode::NOT_FOUND, format!("no action {action:?}")),
        Err(err) => failure(StatusCode::BAD_GATEWAY, format!("{err:#}")),
    }
}

async fn run_write(ui: &Ui, name: &str, action: &str) -> anyhow::Result<Option<serde_json::Value>> {
    let queue = ui.queue(name).await?;
    Ok(Some(match action {
        "replay" => {
            let mut replayed = 0;
            loop {
                let n = queue
                    .admin()
                    .replay_dead_letters(1_000, std::time::Duration::ZERO)
                    .await?;
                if n == 0 {
                    break;
                }
                replayed += n;
            }
            json!({ "replayed": replayed })
        }
        "purge-dead" => json!({ "purged": queue.admin().purge_dead_letters().await? }),
        "purge-quarantine" => json!({ "purged": queue.admin().purge_quarantine().await? }),
        "pause" => {
            queue.admin().pause().await?;
            json!({ "paused": true })
        }
        "resume" => {
            queue.admin().resume().await?;
            json!({ "paused": false })
        }
        _ => return Ok(None),
    }))
}
