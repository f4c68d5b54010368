//! The gateway's metrics through a real Prometheus recorder (the one `delayq gateway` renders):
//! requests by route and status class, deliveries by outcome, and the latency histograms, each
//! count checked against what the test did. One test in this file: the recorder is the
//! process's.

mod common;

use common::*;
use metrics_exporter_prometheus::PrometheusBuilder;
use std::time::{Duration, Instant};

const PUBLISHER: &str = "publisher-token-0123456789";

/// The value of the series `name{labels}` in `text` (labels in the recorder's order), 0 when
/// absent.
fn value(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .map_or(0.0, |v| v.trim().parse().unwrap())
}

#[tokio::test(flavor = "multi_thread")]
async fn requests_deliveries_and_latencies_are_counted() {
    let recorder = PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    metrics::set_global_recorder(recorder).unwrap();
    delayq_gateway::describe_metrics();

    let redis = TestRedis::start();
    let receiver = Receiver::start().await;
    let gw = TestGateway::start(&redis, &receiver, |c| c.with_publish_token(PUBLISHER)).await;
    let base = receiver.base();
    for path in ["200/m", "500-200/m", "489/m"] {
        let (status, _) = gw
            .publish(&format!("{base}{path}"), &[], b"x".to_vec())
            .await;
        assert_eq!(status, 201);
    }
    // Refusals: a bad delay (400), no token (401), a publisher on the DLQ (403), an unknown
    // message (404).
    let (status, _) = gw
        .publish(
            &format!("{base}200/m"),
            &[("Upstash-Delay", "soon")],
            vec![],
        )
        .await;
    assert_eq!(status, 400);
    let client = reqwest::Client::new();
    let no_token = client
        .get(format!("{}/v2/dlq", gw.base))
        .send()
        .await
        .unwrap();
    assert_eq!(no_token.status(), 401);
    let publisher = client
        .get(format!("{}/v2/dlq", gw.base))
        .bearer_auth(PUBLISHER)
        .send()
        .await
        .unwrap();
    assert_eq!(publisher.status(), 403);
    assert_eq!(gw.call("GET", "/v2/messages/msg_nothing").await.0, 404);

    // 200: one attempt; 500 then 200: two; 489: one, then the DLQ. Waited for until every
    // series below has its last count: a delivery is counted a moment before its latency is
    // recorded, a moment a loaded machine can stretch.
    let deadline = Instant::now() + PATIENCE;
    let text = loop {
        let text = handle.render();
        let done = value(
            &text,
            r#"delayq_gateway_deliveries_total{outcome="delivered"}"#,
        ) >= 2.0
            && value(
                &text,
                r#"delayq_gateway_deliveries_total{outcome="dead_lettered"}"#,
            ) >= 1.0
            && value(&text, "delayq_gateway_attempt_duration_seconds_count") >= 4.0
            && value(&text, "delayq_gateway_delivery_latency_seconds_count") >= 2.0;
        if done {
            break text;
        }
        assert!(Instant::now() < deadline, "deliveries not counted:\n{text}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let at = |series: &str| value(&text, series);
    assert_eq!(
        at(r#"delayq_gateway_requests_total{route="publish",status="2xx"}"#),
        3.0,
        "{text}"
    );
    assert_eq!(
        at(r#"delayq_gateway_requests_total{route="publish",status="4xx"}"#),
        1.0
    );
    assert_eq!(
        at(r#"delayq_gateway_requests_total{route="dlq_list",status="4xx"}"#),
        2.0
    );
    assert_eq!(
        at(r#"delayq_gateway_requests_total{route="messages_get",status="4xx"}"#),
        1.0
    );
    assert_eq!(
        at(r#"delayq_gateway_deliveries_total{outcome="delivered"}"#),
        2.0
    );
    assert_eq!(
        at(r#"delayq_gateway_deliveries_total{outcome="retried"}"#),
        1.0
    );
    assert_eq!(
        at(r#"delayq_gateway_deliveries_total{outcome="dead_lettered"}"#),
        1.0
    );
    assert_eq!(at("delayq_gateway_attempt_duration_seconds_count"), 4.0);
    assert_eq!(at("delayq_gateway_delivery_latency_seconds_count"), 2.0);
    // The retried message waited its backoff before its delivery: 200 ms less the policy's
    // jitter (up to 20 % off: 160 ms; the sum was 0.195 s in a run where this said 0.2).
    assert!(
        at("delayq_gateway_delivery_latency_seconds_sum") >= 0.16,
        "{text}"
    );
    assert_eq!(
        at(r#"delayq_gateway_request_duration_seconds_count{route="publish"}"#),
        4.0
    );
    assert!(text.contains("# HELP delayq_gateway_deliveries_total gateway delivery attempts"));
    gw.shutdown().await;
}
