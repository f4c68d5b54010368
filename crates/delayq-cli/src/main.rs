//! `delayq`: operate Redisson-compatible delayed queues from the shell.
//!
//! - `cli.rs`: the options and subcommands; `connection.rs`: the connection options (timeouts,
//!   TLS) and the URL without its secrets.
//! - `commands/`: one file per command group (`queue.rs`: offer, reschedule, remove, peek,
//!   stats, clear; `take.rs`; `lists.rs`: dead letters and quarantine; `work.rs`; `transfer.rs`);
//!   `target.rs`: the queue a command acts on, one or sharded (`--shards N`).
//! - `text_codec.rs`: values as command-line text.
//! - `serve.rs`: `/metrics` and `/healthz` for `transfer`, `work` and `ui` (`--listen`).
//! - `otel.rs` (feature `otel`): spans exported over OTLP.
//! - `ui/`: the dashboard's page (`index.html`, `app.js`, `style.css`, built in) and its JSON
//!   API; `commands/ui.rs` starts it.

mod cli;
mod commands;
mod connection;
mod ctx;
mod duration;
mod exit;
#[cfg(feature = "otel")]
mod otel;
mod progress;
mod serve;
mod show;
mod text_codec;
mod ui;

use clap::Parser;
use std::process::ExitCode;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::Layer as _;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    // Daemons say what they do (started, caught up, stopped); one-off commands only warn.
    let default_filter = match cli.command {
        cli::Command::Transfer(cli::TransferArgs { once: false, .. })
        | cli::Command::Work(_)
        | cli::Command::Ui(_) => "warn,delayq=info",
        _ => "warn",
    };
    let log = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        // Colours only for a person at a terminal, never into a log file or pipe.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_filter)),
        );
    let subscriber = tracing_subscriber::registry().with(log);
    #[cfg(feature = "otel")]
    let (subscriber, export) = match otel::Export::start(&cli) {
        Ok(export) => (
            subscriber.with(export.as_ref().map(otel::Export::layer)),
            export,
        ),
        Err(err) => {
            eprintln!("delayq: {err}");
            return exit::Status::Usage.into();
        }
    };
    subscriber.init();
    let status = run(cli);
    // The last spans go out after the runtime is gone: the exporter's client blocks.
    #[cfg(feature = "otel")]
    if let Some(export) = export {
        export.shutdown();
    }
    status
}

/// Runs the command on a single-threaded runtime; its exit status.
fn run(cli: cli::Cli) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("delayq: cannot start the runtime: {err}");
            return exit::Status::Other.into();
        }
    };
    match runtime.block_on(commands::run(cli)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => exit::Status::False.into(),
        Err(err) => {
            eprintln!("delayq: {}", exit::describe(&err));
            exit::status(&err).into()
        }
    }
}
