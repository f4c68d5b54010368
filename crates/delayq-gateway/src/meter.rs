//! The gateway's metrics, through the [`metrics`](https://docs.rs/metrics) facade (the
//! `delayq` binary renders them on `/metrics`); nothing is recorded until a program installs a
//! recorder. Names follow delayq's (`delayq_` prefix, `_total` counters, `_seconds`
//! histograms); the labels have a few values each, and no queue label (one gateway queue a
//! process), so the series live as long as the process.
//!
//! - `delayq_gateway_requests_total{route, status}`: API requests by route (a fixed name per
//!   route, `other` for none) and status class (`2xx`, `4xx`, `5xx`, ...);
//! - `delayq_gateway_request_duration_seconds{route}`: time to answer them;
//! - `delayq_gateway_deliveries_total{outcome}`: delivery attempts by outcome (`delivered`,
//!   `retried`, `dead_lettered`, `cancelled`);
//! - `delayq_gateway_attempt_duration_seconds`: one attempt's time, from sending to the answer
//!   (or the timeout);
//! - `delayq_gateway_delivery_latency_seconds`: from a message's due time to its delivery (the
//!   waits between retries included).

use axum::extract::Request;
use axum::http::Method;
use axum::middleware::Next;
use axum::response::Response;
use std::time::{Duration, Instant};

/// Every metric of the gateway: name, kind and HELP text.
const METRICS: &[(&str, Kind, &str)] = &[
    (
        "delayq_gateway_requests_total",
        Kind::Counter,
        "gateway API requests, by route and status class",
    ),
    (
        "delayq_gateway_request_duration_seconds",
        Kind::Histogram,
        "time to answer a gateway API request, by route",
    ),
    (
        "delayq_gateway_deliveries_total",
        Kind::Counter,
        "gateway delivery attempts, by outcome",
    ),
    (
        "delayq_gateway_attempt_duration_seconds",
        Kind::Histogram,
        "time of one delivery attempt, from sending to the answer or the timeout",
    ),
    (
        "delayq_gateway_delivery_latency_seconds",
        Kind::Histogram,
        "from a message's due time to its delivery, waits between retries included",
    ),
];

#[derive(Clone, Copy)]
enum Kind {
    Counter,
    Histogram,
}

/// Gives the installed recorder the HELP text of every gateway metric. Call it once, after
/// installing the recorder.
pub fn describe_metrics() {
    for (name, kind, help) in METRICS {
        match kind {
            Kind::Counter => metrics::describe_counter!(*name, *help),
            Kind::Histogram => metrics::describe_histogram!(*name, *help),
        }
    }
}

/// What became of one delivery attempt.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Outcome {
    Delivered,
    Retried,
    DeadLettered,
    Cancelled,
}

impl Outcome {
    fn label(self) -> &'static str {
        match self {
            Outcome::Delivered => "delivered",
            Outcome::Retried => "retried",
            Outcome::DeadLettered => "dead_lettered",
            Outcome::Cancelled => "cancelled",
        }
    }
}

/// Counts one attempt's outcome.
pub(crate) fn delivery(outcome: Outcome) {
    metrics::counter!("delayq_gateway_deliveries_total", "outcome" => outcome.label()).increment(1);
}

/// Records one attempt's time.
pub(crate) fn attempt_took(took: Duration) {
    metrics::histogram!("delayq_gateway_attempt_duration_seconds").record(took.as_secs_f64());
}

/// Records a delivered message's latency: from `due_ms` (epoch ms) to now.
pub(crate) fn delivered_late(due_ms: i64) {
    let late_ms = crate::now_ms().saturating_sub(due_ms).max(0);
    metrics::histogram!("delayq_gateway_delivery_latency_seconds").record(late_ms as f64 / 1000.0);
}

/// The layer around every route (the 401s and 403s of the access layer included): counts the
/// request by route and status class and records its time.
pub(crate) async fn count_requests(request: Request, next: Next) -> Response {
    let route = route_of(request.method(), request.uri().path());
    let started = Instant::now();
    let response = next.run(request).await;
    let class = match response.status().as_u16() / 100 {
        1 => "1xx",
        2 => "2xx",
        3 => "3xx",
        4 => "4xx",
        _ => "5xx",
    };
    metrics::counter!("delayq_gateway_requests_total", "route" => route, "status" => class)
        .increment(1);
    metrics::histogram!("delayq_gateway_request_duration_seconds", "route" => route)
        .record(started.elapsed().as_secs_f64());
    response
}

/// The `route` label of `method path`: a fixed name per route, so that the label has a few
/// values whatever the paths.
pub(crate) fn route_of(method: &Method, path: &str) -> &'static str {
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let (get, post, delete) = (Method::GET, Method::POST, Method::DELETE);
    match (method, segments.as_slice()) {
        (m, ["v2", "publish", _, ..]) if *m == post => "publish",
        (m, ["v2", "enqueue", _, _, ..]) if *m == post => "enqueue",
        (m, ["v2", "batch"]) if *m == post => "batch",
        (m, ["v2", "messages", _]) if *m == get => "messages_get",
        (m, ["v2", "messages", _]) if *m == delete => "messages_cancel",
        (m, ["v2", "messages"]) if *m == delete => "messages_cancel_many",
        (m, ["v2", "dlq"]) if *m == get => "dlq_list",
        (m, ["v2", "dlq"]) if *m == delete => "dlq_delete_many",
        (m, ["v2", "dlq", "retry", ..]) if *m == post => "dlq_retry",
        (m, ["v2", "dlq", _]) if *m == get => "dlq_get",
        (m, ["v2", "dlq", _]) if *m == delete => "dlq_delete",
        (m, ["v2", "flowControl"]) if *m == get => "flow_control_list",
        (m, ["v2", "flowControl", _, ..]) if *m == get => "flow_control_get",
        (m, ["v2", "flowControl", _, .., "resetRate"]) if *m == post => "flow_control_reset_rate",
        (m, ["v2", "flowControl", _, .., "pause"]) if *m == post => "flow_control_pause",
        (m, ["v2", "flowControl", _, .., "resume"]) if *m == post => "flow_control_resume",
        (m, ["v1", "queues", _, "offer"]) if *m == post => "native_offer",
        (m, ["v1", "queues", _, "handles", _]) if *m == delete => "native_cancel",
        (m, ["v1", "queues", _]) if *m == get => "native_size",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn route_names() {
        let cases = [
            (Method::POST, "/v2/publish/http://h/a?b", "publish"),
            (Method::POST, "/v2/enqueue/q/https://h/", "enqueue"),
            (Method::GET, "/v2/messages/msg_1", "messages_get"),
            (Method::DELETE, "/v2/messages", "messages_cancel_many"),
            (Method::POST, "/v2/dlq/retry/x", "dlq_retry"),
            (Method::POST, "/v2/dlq/retry", "dlq_retry"),
            (Method::DELETE, "/v2/dlq/x", "dlq_delete"),
            (Method::DELETE, "/v2/dlq", "dlq_delete_many"),
            (Method::GET, "/v2/flowControl", "flow_control_list"),
            (Method::GET, "/v2/flowControl/a/b", "flow_control_get"),
            (
                Method::POST,
                "/v2/flowControl/a/resetRate",
                "flow_control_reset_rate",
            ),
            (
                Method::POST,
                "/v2/flowControl/a/pause",
                "flow_control_pause",
            ),
            (
                Method::POST,
                "/v2/flowControl/a/b/resume",
                "flow_control_resume",
            ),
            (Method::POST, "/v2/flowControl/a/pin", "other"),
            (Method::POST, "/v1/queues/orders/offer", "native_offer"),
            (
                Method::DELETE,
                "/v1/queues/orders/handles/h",
                "native_cancel",
            ),
            (Method::GET, "/v1/queues/orders", "native_size"),
            (Method::GET, "/v2/publish/http://h/", "other"),
            (Method::GET, "/nothing/here", "other"),
        ];
        for (method, path, name) in cases {
            assert_eq!(route_of(&method, path), name, "{method} {path}");
        }
    }
}
