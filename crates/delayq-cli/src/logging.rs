//! Where the process's own words go: tracing events, and the status lines a daemon says
//! (started, stopped, totals), as text for a person or as one JSON object per line for a log
//! collector (`--log-format json`).

use std::sync::OnceLock;

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

/// Installs the tracing subscriber: `RUST_LOG` when set, else `default_filter`.
pub(crate) fn init(format: LogFormat, default_filter: &str) {
    let _ = FORMAT.set(format);
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_filter));
    let builder = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(filter);
    match format {
        // Colours only for a person at a terminal, never into a log file or pipe.
        LogFormat::Text => builder
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .init(),
        LogFormat::Json => builder.json().init(),
    }
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
