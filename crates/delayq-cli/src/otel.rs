//! The `otel` feature: the spans of offers, jobs and settlements exported over OTLP/HTTP
//! (protobuf) to a collector, when `OTEL_EXPORTER_OTLP_ENDPOINT` (or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) or `--otlp-endpoint` names one. The other standard
//! variables (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_EXPORTER_OTLP_HEADERS`,
//! `OTEL_EXPORTER_OTLP_TIMEOUT`, `OTEL_BSP_*`) work as the OpenTelemetry SDK reads them.

use crate::cli::{Cli, Command};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig as _;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::Layer;

/// The service name when `OTEL_SERVICE_NAME` says none.
const SERVICE_NAME: &str = "delayq";

/// A running exporter: spans go out in batches from the SDK's own thread until
/// [`shutdown`](Export::shutdown) sends the last of them.
pub(crate) struct Export {
    provider: SdkTracerProvider,
}

impl Export {
    /// Starts exporting when an endpoint is named, else `Ok(None)`.
    pub(crate) fn start(cli: &Cli) -> Result<Option<Export>, String> {
        let flag = match &cli.command {
            Command::Transfer(args) => args.otlp.otlp_endpoint.as_deref(),
            Command::Work(args) => args.otlp.otlp_endpoint.as_deref(),
            _ => None,
        };
        let from_env = [
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        ]
        .iter()
        .any(|var| std::env::var_os(var).is_some_and(|value| !value.is_empty()));
        if flag.is_none() && !from_env {
            return Ok(None);
        }
        // reqwest has no TLS provider of its own in this workspace (the gateway's choice): the
        // exporter's client needs the process's default, rustls with ring.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary);
        if let Some(base) = flag {
            exporter = exporter.with_endpoint(format!("{}/v1/traces", base.trim_end_matches('/')));
        }
        let exporter = exporter
            .build()
            .map_err(|err| format!("cannot start the OTLP exporter: {err}"))?;
        let mut resource = opentelemetry_sdk::Resource::builder();
        if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
            resource = resource.with_service_name(SERVICE_NAME);
        }
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource.build())
            .build();
        Ok(Some(Export { provider }))
    }

    /// The layer that hands the spans of delayq (its debug ones too: offers, settlements,
    /// script calls) to the exporter, whatever `RUST_LOG` lets through to the log.
    pub(crate) fn layer<S>(&self) -> impl Layer<S>
    where
        S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
    {
        let tracer = self.provider.tracer(SERVICE_NAME);
        tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_filter(Targets::new().with_target("delayq", tracing::Level::DEBUG))
    }

    /// Sends the spans still buffered and stops the exporter's thread; outside the runtime,
    /// since the exporter's HTTP client blocks. It waits as long as one export may take
    /// ([`flush_timeout`]), where the SDK's own shutdown gives up after 5 s: on a busy machine
    /// a command's last spans were dropped although the collector was up.
    pub(crate) fn shutdown(self) {
        if let Err(err) = self.provider.shutdown_with_timeout(flush_timeout()) {
            eprintln!("delayq: the OTLP exporter did not send every span: {err}");
        }
    }
}

/// How long the last export may take at exit: `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT` or
/// `OTEL_EXPORTER_OTLP_TIMEOUT` (milliseconds, as the exporter reads them), else the
/// OpenTelemetry default of 10 s.
fn flush_timeout() -> std::time::Duration {
    let millis = [
        "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
        "OTEL_EXPORTER_OTLP_TIMEOUT",
    ]
    .iter()
    .find_map(|var| std::env::var(var).ok()?.trim().parse::<u64>().ok())
    .unwrap_or(10_000);
    std::time::Duration::from_millis(millis)
}
