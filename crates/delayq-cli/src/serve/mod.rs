//! HTTP for the long-running commands: `/metrics` (Prometheus text) and `/healthz`, served on
//! `--listen` by `delayq transfer`, `delayq work` and `delayq ui`; the gauges' periodic read;
//! the connection's reconnects and errors counted. `listen.rs`: the listener they share (bind
//! rule, Host check, connection cap, header timeout); `pulse.rs`: when Redis last answered.

mod listen;
mod pulse;

pub(crate) use listen::{bind, Bound, ListenArgs};

use anyhow::Context;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use delayq::fred::clients::Client;
use delayq::fred::interfaces::{ClientLike, EventInterface};
use delayq::SchedulerGroup;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use pulse::Pulse;
use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// Histogram buckets (seconds): 1 ms to 60 s.
const BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];
/// How often the gauges are read from Redis.
const GAUGE_EVERY: Duration = Duration::from_secs(2);

/// The process's Prometheus recorder, installed once.
pub(crate) fn recorder() -> anyhow::Result<PrometheusHandle> {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    if let Some(handle) = HANDLE.get() {
        return Ok(handle.clone());
    }
    let handle = PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), BUCKETS)
        .context("bad histogram buckets")?
        .install_recorder()
        .context("cannot install the metrics recorder")?;
    Ok(HANDLE.get_or_init(|| handle).clone())
}

/// What `/metrics` and `/healthz` read.
#[derive(Clone)]
pub(crate) struct Observed {
    pub(crate) prometheus: PrometheusHandle,
    pub(crate) client: Client,
    /// The scheduler group whose subscription and transfers the health reports.
    pub(crate) group: Option<SchedulerGroup>,
    pulse: Arc<Pulse>,
    /// How long Redis may go without answering a call before the health is 503.
    unhealthy_after: Duration,
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
            prometheus: recorder()?,
            client: client.clone(),
            group,
            pulse: Pulse::new(),
            unhealthy_after: args.unhealthy_after,
        })
    }
}

/// The routes `/metrics` and `/healthz`.
fn routes(observed: Observed) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(healthz))
        .with_state(Arc::new(observed))
}

async fn metrics(State(observed): State<Arc<Observed>>) -> Response {
    observed.prometheus.run_upkeep();
    let content_type = "text/plain; version=0.0.4; charset=utf-8";
    (
        [(header::CONTENT_TYPE, content_type)],
        observed.prometheus.render(),
    )
        .into_response()
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
    /// Serves `/metrics`, `/healthz` and `pages` on `bound`; with `gauges`, reads the queues'
    /// gauges every 2 s.
    pub(crate) fn start(
        bound: Bound,
        observed: Observed,
        pages: Router,
        gauges: Option<Gauges>,
    ) -> Server {
        let addr = bound.addr;
        let client = observed.client.clone();
        let pulse = observed.pulse.clone();
        let router = pages.merge(routes(observed));
        let token = CancellationToken::new();
        let mut tasks = JoinSet::new();
        tasks.spawn(bound.serve(router, token.clone()));
        tasks.spawn(pulse.run(client.clone(), token.clone()));
        tasks.spawn(count_connection_events(client, token.clone()));
        if let Some(gauges) = gauges {
            tasks.spawn(gauges.run(token.clone()));
        }
        crate::logging::status!("serving http://{addr}/metrics and /healthz");
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

/// The periodic read behind the gauges: each queue's counters (two short scripts).
pub(crate) struct Gauges {
    pub(crate) ctx_client: Client,
    pub(crate) names: Box<dyn Fn() -> Vec<String> + Send + Sync>,
    pub(crate) codec: crate::text_codec::TextCodec,
    pub(crate) options: delayq::QueueOptions,
}

impl Gauges {
    async fn run(self, stop: CancellationToken) {
        let mut tick = tokio::time::interval(GAUGE_EVERY);
        loop {
            tokio::select! {
                _ = stop.cancelled() => break,
                _ = tick.tick() => {}
            }
            for name in (self.names)() {
                let queue = delayq::DelayedQueue::builder(
                    self.ctx_client.clone(),
                    name.as_str(),
                    self.codec.clone(),
                )
                .options(self.options)
                .transfer(false)
                .build()
                .await;
                let Ok(queue) = queue else { continue };
                // A failed read leaves the gauges as they were; errors are counted elsewhere.
                let (Ok(stats), Ok(reliable)) = (queue.stats().await, queue.reliable_stats().await)
                else {
                    continue;
                };
                let now = delayq::time::now_ms();
                delayq::metrics::record_queue_gauges(&name, &stats, Some(&reliable), now);
            }
        }
    }
}
