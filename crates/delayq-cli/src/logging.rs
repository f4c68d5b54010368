//! Where the process's own words go: tracing events, and the status lines a daemon says
//! (started, stopped, totals), as text for a person or as one JSON object per line for a log
//! collector (`--log-format json`).

use std::sync::OnceLock;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{Layer, Registry};

/// How stderr's lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LogFormat {
    /// Text for a person: `delayq: ...` status lines, tracing's compact lines.
    Text,
    /// One JSON object per line (`timestamp`, `level`, `target`, `fields` with `message`), the
    /// status lines included.
    Json,
}

static FORMAT: OnceLock<LogFormat> = OnceLock::new();

/// Installs the tracing subscriber: stderr's lines filtered by `RUST_LOG` when set, else
/// `default_filter`, beside `extra` (the span exporter, which filters for itself).
pub(crate) fn init<L>(format: LogFormat, default_filter: &str, extra: L)
where
    L: Layer<Registry> + Send + Sync + 'static,
{
    let _ = FORMAT.set(format);
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_filter));
    let lines = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let lines = match format {
        // Colours only for a person at a terminal, never into a log file or pipe.
        LogFormat::Text => lines
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .boxed(),
        LogFormat::Json => lines.json().boxed(),
    };
    tracing_subscriber::registry()
        .with(extra)
        .with(lines.with_filter(filter))
        .init();
}

/// Says a status line: `delayq: LINE` on stderr as text, or an INFO event (target `delayq`)
/// in JSON, so that a JSON log has no line of another shape.
pub(crate) fn status_line(line: std::fmt::Arguments<'_>) {
    match FORMAT.get() {
        Some(LogFormat::Json) => tracing::info!(target: "delayq", "{line}"),
        _ => eprintln!("delayq: {line}"),
    }
}

/// Says why the process ends with an error: as [`status_line`], at ERROR.
pub(crate) fn fatal(line: std::fmt::Arguments<'_>) {
    match FORMAT.get() {
        Some(LogFormat::Json) => tracing::error!(target: "delayq", "{line}"),
        _ => eprintln!("delayq: {line}"),
    }
}

/// `status!("moved {n}")`: [`status_line`] with `format!`'s arguments.
macro_rules! status {
    ($($arg:tt)*) => {
        $crate::logging::status_line(format_args!($($arg)*))
    };
}
pub(crate) use status;
