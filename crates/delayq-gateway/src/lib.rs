#![doc = include_str!("../README.md")]
#![warn(
    missing_docs,
    missing_debug_implementations,
    rust_2018_idioms,
    unreachable_pub
)]
#![cfg_attr(not(test), forbid(clippy::panic, clippy::print_stdout))]
//! # Layout
//!
//! - `error.rs`: [`Error`] and the JSON error answers.
//! - `webhooks.rs`: the opt-in Standard Webhooks signature.
//! - `config.rs`: [`GatewayConfig`].
//! - `access.rs`: the tokens' roles, and which routes each may call.
//! - `meter.rs`: the metrics (requests by route and status, deliveries by outcome, latencies).
//! - `redact.rs`: `Upstash-Redact-Fields`, the parts of a message the read APIs hide.
//! - `envelope.rs`: a message as its queue entry holds it (rmp-serde).
//! - `signature.rs`: the `Upstash-Signature` JWT.
//! - `retry_delay.rs`: the `Upstash-Retry-Delay` expression.
//! - `headers.rs`: the `Upstash-*` headers of a publish.
//! - `scripts.rs`: the gateway's Lua scripts (`lua/`), run by EVALSHA.
//! - `store.rs`: the gateway's own keys (message index, deduplication ids).
//! - `kept.rs`: delivered messages kept readable for a while.
//! - `keys.rs`: the signing keys in Redis, `GET /v2/keys`, `POST /v2/keys/rotate`.
//! - `events.rs`: the events of messages, `GET /v2/events` and `/v2/logs`.
//! - `lanes.rs`: the delayq queues of QStash queues and of flow-control values.
//! - `publish.rs`: `POST /v2/publish/{destination}`.
//! - `callback.rs`: the callback and failure-callback messages.
//! - `queues.rs`: `POST /v2/enqueue/{queue}/{destination}` and `/v2/queues`.
//! - `batch.rs`: `POST /v2/batch`.
//! - `messages.rs`: `GET`/`DELETE /v2/messages/{id}`, `DELETE /v2/messages`.
//! - `schedules.rs`: `/v2/schedules` on the queue's recurring schedules.
//! - `deliver.rs`: the delivery worker's handler.
//! - `lane_workers.rs`: a delivery worker per lane, as the lanes come and go.
//! - `flow_control.rs`: `GET /v2/flowControl[/{key}]` from the flow-control lanes' limits.
//! - `dlq_filter.rs`: the ids and filters of the DLQ's calls.
//! - `dlq.rs`: the dead letters as QStash's DLQ (list, get, delete one or many, retry).
//! - `native.rs`: the native queues (`/v1/queues/...`): offer into any Redisson queue.
//! - `view.rs`: what the gateway stores, read back for the dashboard (secrets redacted).

mod access;
mod batch;
mod callback;
mod config;
mod deliver;
mod dlq;
mod dlq_filter;
mod envelope;
mod error;
mod events;
mod flow_control;
mod headers;
mod kept;
mod keys;
mod lane_workers;
mod lanes;
mod messages;
mod meter;
mod native;
mod publish;
mod queues;
mod redact;
mod retry_delay;
mod schedules;
mod scripts;
mod signature;
mod store;
pub mod view;
mod webhooks;

pub use config::{GatewayConfig, MAX_RETRIES};
pub use error::{Error, Result};
pub use meter::describe_metrics;

use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use delayq::codec::ByteArrayCodec;
use delayq::fred::clients::Client;
use delayq::{DelayedQueue, RetryPolicy, WorkerHandle};
use std::sync::Arc;

/// What the routes and the delivery worker share.
pub(crate) struct Shared {
    config: GatewayConfig,
    queue: DelayedQueue<ByteArrayCodec>,
    store: store::Store,
    keys: keys::Keys,
    lanes: lanes::Lanes,
    http: reqwest::Client,
    /// The Standard Webhooks signer, when the signature is asked for.
    webhooks: Option<webhooks::Signer>,
    /// The client the native queues are built on.
    client: Client,
    native: native::NativeQueues,
}

/// A QStash-compatible gateway on one delayq queue: [`router`](Self::router) serves the HTTP
/// API, [`deliver`](Self::deliver) runs the deliveries. Several processes may serve one queue
/// on one Redis.
///
/// ```no_run
/// # async fn ex() -> Result<(), Box<dyn std::error::Error>> {
/// let client = delayq::connect("redis://127.0.0.1:6379").await?;
/// let config = delayq_gateway::GatewayConfig::new("a-token-of-16-chars-or-more", "sig_current")
///     .with_next_key("sig_next")
///     .allow_destination("http://127.0.0.1:3000/");
/// let gateway = delayq_gateway::Gateway::new(client, config).await?;
/// let delivery = gateway.deliver()?;
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8480").await?;
/// axum::serve(listener, gateway.router()).await?;
/// delivery.shutdown().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Gateway {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("config", &self.shared.config)
            .finish_non_exhaustive()
    }
}

impl Gateway {
    /// A gateway on `client` (an `init()`ed fred client, e.g. from [`delayq::connect`]); builds
    /// its queue, whose transfer scheduler runs in this process.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidConfig`], [`Error::Client`], or the queue's error.
    pub async fn new(client: Client, config: GatewayConfig) -> Result<Gateway> {
        config.validate()?;
        // One process-wide rustls provider: ring, the one delayq's own TLS uses. Another
        // already installed by the program is kept.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(config.request_timeout)
            .build()
            .map_err(Error::Client)?;
        let queue = DelayedQueue::builder(client.clone(), config.queue.clone(), ByteArrayCodec)
            .build()
            .await?;
        let lanes = lanes::Lanes::new(client.clone(), &config.queue);
        let store = store::Store::new(client.clone(), &config.queue);
        scripts::load_all(&client)
            .await
            .map_err(|err| Error::Queue(err.into()))?;
        let webhooks = config.webhooks_signer()?;
        let keys = keys::Keys::seeded(
            client.clone(),
            &config.queue,
            &config.current_key,
            &config.next_key,
        )
        .await
        .map_err(|err| Error::Queue(err.into()))?;
        Ok(Gateway {
            shared: Arc::new(Shared {
                config,
                queue,
                store,
                keys,
                lanes,
                http,
                webhooks,
                client,
                native: native::NativeQueues::default(),
            }),
        })
    }

    /// The HTTP API, every route behind a bearer token of a role it admits; mount it at the root or
    /// [`nest`](Router::nest) it under a prefix.
    pub fn router(&self) -> Router {
        let shared = self.shared.clone();
        Router::new()
            .route("/v2/publish/{*destination}", post(publish::publish))
            .route("/v2/batch", post(batch::batch))
            .route("/v2/enqueue/{queue}/{*destination}", post(queues::enqueue))
            .route("/v2/queues", get(queues::list).post(queues::upsert))
            .route("/v2/queues/{name}", get(queues::get).delete(queues::delete))
            .route("/v2/queues/{name}/pause", post(queues::pause))
            .route("/v2/queues/{name}/resume", post(queues::resume))
            .route("/v2/messages", axum::routing::delete(messages::cancel_many))
            .route(
                "/v2/messages/{id}",
                get(messages::get).delete(messages::cancel),
            )
            .route("/v2/dlq", get(dlq::list).delete(dlq::delete_many))
            .route("/v2/dlq/{id}", get(dlq::get).delete(dlq::delete))
            .route("/v2/dlq/retry", post(dlq::retry_many))
            .route("/v2/dlq/retry/{id}", post(dlq::retry))
            .route("/v1/queues/{name}", get(native::size))
            .route("/v1/queues/{name}/offer", post(native::offer))
            .route(
                "/v1/queues/{name}/handles/{handle}",
                axum::routing::delete(native::cancel),
            )
            .route("/v2/schedules", get(schedules::list))
            .route(
                "/v2/schedules/{*rest}",
                axum::routing::any(schedules::route),
            )
            .route("/v2/events", get(events::events))
            .route("/v2/logs", get(events::logs))
            .route("/v2/flowControl", get(flow_control::list))
            .route(
                "/v2/flowControl/{*key}",
                axum::routing::any(flow_control::route),
            )
            .route("/v2/keys", get(keys::get))
            .route("/v2/keys/rotate", post(keys::rotate))
            .fallback(not_found)
            .layer(axum::middleware::from_fn_with_state(
                shared.clone(),
                access::authorize,
            ))
            .layer(axum::middleware::from_fn(meter::count_requests))
            .with_state(shared)
    }

    /// Starts delivering due messages on a task of its own (at most the configured
    /// concurrency at once); the handle stops it.
    ///
    /// # Errors
    ///
    /// An invalid worker configuration.
    pub fn deliver(&self) -> Result<Delivery> {
        let config = &self.shared.config;
        // Each message's own retries decide when it is given up; the policy only paces the
        // retries, and allows more attempts than any message may ask for.
        let policy = RetryPolicy::exponential(
            MAX_RETRIES + 2,
            config.backoff_first,
            config.backoff_max.max(config.backoff_first),
        )
        .with_multiplier(std::f64::consts::E.powf(2.5));
        let shared = self.shared.clone();
        let worker = self
            .shared
            .queue
            .worker(config.concurrency, move |job| {
                deliver::deliver(shared.clone(), job)
            })
            .retry(policy.clone())
            .spawn()?;
        let stop = delayq::CancellationToken::new();
        let lanes = tokio::spawn(lane_workers::supervise(
            self.shared.clone(),
            policy,
            stop.clone(),
        ));
        Ok(Delivery {
            worker,
            lanes,
            stop,
        })
    }

    /// Whether `headers` carry one of the gateway's admin tokens (`Authorization: Bearer
    /// TOKEN`, compared in constant time): for routes a program mounts beside the router, such
    /// as `/metrics`.
    pub fn authorizes(&self, headers: &axum::http::HeaderMap) -> bool {
        access::role_of(&self.shared, headers).is_some_and(|c| c.role == access::Role::Admin)
    }

    /// The delayq queue the messages are entries of.
    pub fn queue(&self) -> &DelayedQueue<ByteArrayCodec> {
        &self.shared.queue
    }
}

/// The running deliveries of a [`Gateway`].
#[derive(Debug)]
pub struct Delivery {
    worker: WorkerHandle,
    /// The task that keeps a worker per lane (QStash queues, flow-control values).
    lanes: tokio::task::JoinHandle<()>,
    stop: delayq::CancellationToken,
}

impl Delivery {
    /// Stops taking messages, lets attempts under way finish, and waits.
    ///
    /// # Errors
    ///
    /// The worker's error.
    pub async fn shutdown(self) -> Result<()> {
        self.stop.cancel();
        let _ = self.lanes.await;
        self.worker.shutdown().await?;
        Ok(())
    }
}

async fn not_found() -> Response {
    error::ApiError::not_found("no such endpoint in this gateway (see docs/gateway.md)")
        .into_response()
}

pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
