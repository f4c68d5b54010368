//! The `otel` feature: `delayq offer` and `delayq work` export their spans over OTLP/HTTP to a
//! receiver the test runs, with the messaging semantic-convention attributes, and send the
//! last of them as they exit.

use crate::common::{unique_name, wait_until, TestRedis, PATIENCE};
use crate::work_lifecycle::Worker;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

const BIN: &str = env!("CARGO_BIN_EXE_delayq");

/// The export timeout the commands are given: a loaded machine may take seconds to send and
/// answer one request on loopback, and the last spans go out as a command exits.
const EXPORT_TIMEOUT_MS: &str = "120000";

/// One span as received, with its process's `service.name`.
#[derive(Debug, Clone)]
struct Received {
    service: String,
    span: Span,
}

type Spans = Arc<Mutex<Vec<Received>>>;

/// What the receiver's handler holds: the spans kept, and how long it waits before it answers.
type Kept = (Spans, std::time::Duration);

/// A collector's OTLP/HTTP trace endpoint (`POST /v1/traces`, protobuf) on a loopback port,
/// keeping every span it is sent; on a thread of its own, stopped when dropped.
struct Receiver {
    endpoint: String,
    spans: Spans,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Receiver {
    fn start() -> Receiver {
        Receiver::answering_after(std::time::Duration::ZERO)
    }

    /// A receiver that keeps each export at once but answers it only after `delay`.
    fn answering_after(delay: std::time::Duration) -> Receiver {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let spans = Spans::default();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let kept = (spans.clone(), delay);
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                let app = axum::Router::new()
                    .route("/v1/traces", axum::routing::post(receive))
                    .with_state(kept);
                axum::serve(listener, app)
                    .with_graceful_shutdown(async move {
                        let _ = stopped.await;
                    })
                    .await
                    .unwrap();
            });
        });
        Receiver {
            endpoint,
            spans,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// The spans received so far.
    fn spans(&self) -> Vec<Received> {
        self.spans.lock().unwrap().clone()
    }

    /// Waits for a span named `name` (PATIENCE at most).
    fn wait_for(&self, name: &str) -> Received {
        wait_until(&format!("a span {name:?}"), PATIENCE, || {
            let spans = self.spans();
            spans
                .iter()
                .find(|r| r.span.name == name)
                .cloned()
                .ok_or_else(|| {
                    format!(
                        "{:?}",
                        spans.iter().map(|r| &r.span.name).collect::<Vec<_>>()
                    )
                })
        })
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Decodes one export request and keeps its spans; an empty export response (protobuf).
async fn receive(
    axum::extract::State((spans, delay)): axum::extract::State<Kept>,
    body: bytes::Bytes,
) -> impl axum::response::IntoResponse {
    keep(&spans, body);
    tokio::time::sleep(delay).await;
    (
        [(axum::http::header::CONTENT_TYPE, "application/x-protobuf")],
        Vec::new(),
    )
}

/// Decodes one export request into `spans`.
fn keep(spans: &Spans, body: bytes::Bytes) {
    let request = ExportTraceServiceRequest::decode(body).expect("an OTLP protobuf request");
    let mut kept = spans.lock().unwrap();
    for resource_spans in request.resource_spans {
        let service = resource_spans
            .resource
            .as_ref()
            .and_then(|resource| text(&resource.attributes, "service.name"))
            .unwrap_or_default();
        for scope in resource_spans.scope_spans {
            for span in scope.spans {
                kept.push(Received {
                    service: service.clone(),
                    span,
                });
            }
        }
    }
}

/// The text attribute `key`, if there is one.
fn text(attributes: &[KeyValue], key: &str) -> Option<String> {
    attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref()?.value.as_ref())
        .and_then(|value| match value {
            Value::StringValue(text) => Some(text.clone()),
            _ => None,
        })
}

/// Asserts the messaging attributes every span of `queue` carries.
fn assert_messaging(received: &Received, queue: &str, kind: SpanKind, operation: &str) {
    let span = &received.span;
    let attr = |key| text(&span.attributes, key);
    assert_eq!(span.kind, kind as i32, "{span:?}");
    assert_eq!(
        attr("messaging.system").as_deref(),
        Some("redis"),
        "{span:?}"
    );
    assert_eq!(
        attr("messaging.destination.name").as_deref(),
        Some(queue),
        "{span:?}"
    );
    assert_eq!(
        attr("messaging.operation.type").as_deref(),
        Some(operation),
        "{span:?}"
    );
}

#[test]
fn offers_and_jobs_are_exported_with_messaging_attributes() {
    let receiver = Receiver::start();
    let redis = TestRedis::start();
    let url = redis.url();
    let name = unique_name("otel");
    let dir = tempfile::tempdir().unwrap();

    // The endpoint from the standard variables; the spans go out as the command exits (the
    // batch delay is far longer than the test).
    let out = std::process::Command::new(BIN)
        .args(["--url", &url, "offer", &name, "order-1"])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &receiver.endpoint)
        .env("OTEL_SERVICE_NAME", "otel-test-producer")
        .env("OTEL_BSP_SCHEDULE_DELAY", "600000")
        .env("OTEL_EXPORTER_OTLP_TIMEOUT", EXPORT_TIMEOUT_MS)
        .env_remove("REDIS_URL")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    // What the command said is in the failure: an export that gave up says so there.
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!said.contains("did not send every span"), "{said}");
    let offer = receiver.wait_for(&format!("offer {name}"));
    assert_messaging(&offer, &name, SpanKind::Producer, "send");
    assert_eq!(offer.service, "otel-test-producer");
    assert_eq!(
        text(&offer.span.attributes, "messaging.operation.name").as_deref(),
        Some("offer")
    );
    let id = text(&offer.span.attributes, "messaging.message.id").expect("the entry's id");
    assert!(
        id.len() == 18 && id.starts_with("08") && id.bytes().all(|b| b.is_ascii_hexdigit()),
        "{id}"
    );

    // The endpoint from the flag; the worker's spans go out at its shutdown.
    let done = dir.path().join("done");
    let mut worker = Worker::start_with_env(
        &url,
        dir.path(),
        &[
            &name,
            "--otlp-endpoint",
            &receiver.endpoint,
            "--",
            "sh",
            "-c",
            &format!("cat > {}", done.display()),
        ],
        &[
            ("OTEL_BSP_SCHEDULE_DELAY", "600000"),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", EXPORT_TIMEOUT_MS),
        ],
    );
    wait_until("the job to run", PATIENCE, || {
        std::fs::read_to_string(&done)
            .ok()
            .filter(|value| value == "order-1")
            .ok_or_else(|| worker.log())
    });
    worker.signal("-TERM");
    assert!(worker.wait_exit().success(), "{}", worker.log());
    assert!(
        !worker.log().contains("did not send every span"),
        "{}",
        worker.log()
    );

    let job = receiver.wait_for(&format!("process {name}"));
    assert_messaging(&job, &name, SpanKind::Consumer, "process");
    assert_eq!(job.service, "delayq");
    let ack = receiver.wait_for(&format!("ack {name}"));
    assert_messaging(&ack, &name, SpanKind::Client, "settle");
    assert_eq!(
        ack.span.trace_id, job.span.trace_id,
        "the ack is in the job's trace"
    );
    assert_eq!(
        ack.span.parent_span_id, job.span.span_id,
        "the ack is the job's child"
    );
    // No context travels with a value: the job's trace is its own.
    assert_ne!(job.span.trace_id, offer.span.trace_id);
}

/// A command's last export waits for its answer as long as the export timeout allows, not the
/// SDK's 5 s shutdown: a collector (or a machine) slower than that lost the last spans, the
/// command saying "did not send every span" (seen under load in CI as a span never received).
#[test]
fn the_last_spans_wait_for_a_slow_collector() {
    let receiver = Receiver::answering_after(std::time::Duration::from_secs(7));
    let redis = TestRedis::start();
    let name = unique_name("otel-slow");
    let out = std::process::Command::new(BIN)
        .args(["--url", &redis.url(), "offer", &name, "order-1"])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &receiver.endpoint)
        .env("OTEL_BSP_SCHEDULE_DELAY", "600000")
        .env("OTEL_EXPORTER_OTLP_TIMEOUT", EXPORT_TIMEOUT_MS)
        .env_remove("REDIS_URL")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!said.contains("did not send every span"), "{said}");
    receiver.wait_for(&format!("offer {name}"));
}
