//! HTTP for the long-running commands: `/metrics` (Prometheus text) and `/healthz`, served on
//! `--listen` by `delayq transfer`, `delayq work` and `delayq ui`; the connection's reconnects
//! and errors counted. `listen.rs`: the listener they share (bind rule, Host check, connection
//! cap, header timeout); `pulse.rs`: when Redis last answered; `recorder.rs`: the metrics
//! recorder (per queue or aggregate, series retired); `gauges.rs`: the queues' gauges, read
//! within a budget of Redis commands; `mount.rs`: `--base-path`, every route under one path.

mod gauges;
mod head;
mod listen;
mod mount;
mod pulse;
mod recorder;

pub(crate) use gauges::{Gauges, Readings, Seen};
pub(crate) use listen::{bind, AllowedHost, Bound, ListenArgs};
pub(crate) use mount::{parse_base_path, BasePath};
pub(crate) use recorder::{recorder, MetricsMode};

use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use delayq::fred::clients::Client;
use delayq::fred::interfaces::{ClientLike, EventInterface};
use delayq::SchedulerGroup;
use pulse::Pulse;
use recorder::Exporter;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// Whether a request's headers may read a route.
type Guard = Arc<dyn Fn(&HeaderMap) -> bool + Send + Sync>;

/// What `/metrics` and `/healthz` read.
#[derive(Clone)]
pub(crate) struct Observed {
    exporter: Exporter,
    /// The queues' gauges, as last read.
    readings: Arc<Readings>,
    pub(crate) client: Client,
    /// The scheduler group whose subscription and transfers the health reports.
    pub(crate) group: Option<SchedulerGroup>,
    pulse: Arc<Pulse>,
    /// How long Redis may go without answering a call before the health is 503.
    unhealthy_after: Duration,
    /// Whether a request's headers may read `/metrics`; none: anyone may.
    metrics_guard: Option<Guard>,
}

impl Observed {
    /// What the health of `client` (and `group`, if any) is read from; `args` says how long
    /// Redis may stay silent.
    pub(crate) fn new(
        client: &Client,
        group: Option<SchedulerGroup>,
        args: &ListenArgs,
    ) -> anyhow::Result<Observed> {
        Ok(Observed {
            exporter: recorder(args.metrics)?,
            readings: Arc::default(),
            client: client.clone(),
            group,
            pulse: Pulse::new(),
            unhealthy_after: args.unhealthy_after,
            metrics_guard: None,
        })
    }

    /// `/metrics` only to requests whose headers `may` allows (401 to the others).
    pub(crate) fn guard_metrics(
        &mut self,
        may: impl Fn(&HeaderMap) -> bool + Send + Sync + 'static,
    ) {
        self.metrics_guard = Some(Arc::new(may));
    }

    /// The queues' gauges as the background read last saw them.
    pub(crate) fn readings(&self) -> Arc<Readings> {
        self.readings.clone()
    }
}

/// The routes `/metrics` and `/healthz`.
fn routes(observed: Observed) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(healthz))
        .with_state(Arc::new(observed))
}

async fn metrics(State(observed): State<Arc<Observed>>, headers: HeaderMap) -> Response {
    if let Some(may) = &observed.metrics_guard {
        if !may(&headers) {
            let body =
                Json(serde_json::json!({ "error": "a valid token is needed to read /metrics" }));
            return (StatusCode::UNAUTHORIZED, body).into_response();
        }
    }
    let content_type = "text/plain; version=0.0.4; charset=utf-8";
    let mut text = observed.exporter.render();
    let now = delayq::time::now_ms();
    text.push_str(&observed.readings.render(observed.exporter.mode, now));
    ([(header::CONTENT_TYPE, content_type)], text).into_response()
}

/// The health as JSON: 200 while connected (and subscribed, with a scheduler) and Redis
/// answered a call within `--unhealthy-after`, else 503.
async fn healthz(State(observed): State<Arc<Observed>>) -> Response {
    let (status, body) = health(&observed);
    (status, Json(body)).into_response()
}

pub(crate) fn health(observed: &Observed) -> (StatusCode, serde_json::Value) {
    let connected = observed.client.is_connected();
    let now = delayq::time::now_ms();
    let (subscribed, last_ms) = match &observed.group {
        Some(group) => (Some(group.is_subscribed()), group.stats().last_transfer_ms),
        None => (None, None),
    };
    let redis_ok_age_ms = observed.pulse.age_ms(now);
    let answering = redis_ok_age_ms <= observed.unhealthy_after.as_millis() as i64;
    let healthy = connected && subscribed != Some(false) && answering;
    let body = serde_json::json!({
        "status": if healthy { "ok" } else { "unavailable" },
        "connected": connected,
        "subscribed": subscribed,
        "redis_ok_age_ms": redis_ok_age_ms,
        "last_transfer_age_ms": last_ms.map(|ms| now.saturating_sub(ms)),
        "queues": observed.group.as_ref().map(|g| g.names().len()),
    });
    let status = match healthy {
        true => StatusCode::OK,
        false => StatusCode::SERVICE_UNAVAILABLE,
    };
    (status, body)
}

/// The HTTP server and its helpers (the gauges' read, the connection's events, the health
/// probe), stopped by [`Server::shutdown`].
pub(crate) struct Server {
    token: CancellationToken,
    tasks: JoinSet<()>,
    pub(crate) addr: SocketAddr,
}

impl Server {
    /// Serves `/metrics`, `/healthz` and `pages` on `bound`, all under `base` when given; with
    /// `gauges`, reads the queues' gauges in the background.
    pub(crate) fn start(
        bound: Bound,
        base: Option<&BasePath>,
        observed: Observed,
        pages: Router,
        gauges: Option<Gauges>,
    ) -> Server {
        let addr = bound.addr;
        let client = observed.client.clone();
        let pulse = observed.pulse.clone();
        let readings = observed.readings.clone();
        let mut router = pages.merge(routes(observed));
        if let Some(base) = base {
            router = base.mount(router);
        }
        let under = base.map_or("", BasePath::as_str);
        let token = CancellationToken::new();
        let mut tasks = JoinSet::new();
        tasks.spawn(bound.serve(router, token.clone()));
        tasks.spawn(pulse.run(client.clone(), token.clone()));
        tasks.spawn(count_connection_events(client, token.clone()));
        if let Some(gauges) = gauges {
            tasks.spawn(gauges.run(readings, token.clone()));
        }
        crate::logging::status!("serving http://{addr}{under}/metrics and {under}/healthz");
        Server { token, tasks, addr }
    }

    /// Stops serving and waits for the tasks.
    pub(crate) async fn shutdown(mut self) {
        self.token.cancel();
        while self.tasks.join_next().await.is_some() {}
    }
}

/// Counts the command connection's reconnects and errors (`delayq_reconnects_total`,
/// `delayq_connection_errors_total`).
async fn count_connection_events(client: Client, stop: CancellationToken) {
    let mut reconnects = client.reconnect_rx();
    let mut errors = client.error_rx();
    loop {
        tokio::select! {
            _ = stop.cancelled() => break,
            event = reconnects.recv() => match event {
                Ok(_) => delayq::metrics::reconnected(),
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(_) => break,
            },
            event = errors.recv() => match event {
                Ok(_) => delayq::metrics::connection_error(),
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(_) => break,
            },
        }
    }
}
