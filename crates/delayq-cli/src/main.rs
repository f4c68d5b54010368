//! `delayq`: operate Redisson-compatible delayed queues from the shell.
//!
//! - `cli.rs`: the options and subcommands (`queue_arg.rs`: the queue a command acts on;
//!   `list_args.rs`: the subcommands over a queue's lists); `connection.rs`: the connection options (timeouts,
//!   TLS) and the URL without its secrets.
//! - `commands/`: one file per command group (`queue.rs`: offer, reschedule, remove, cancel,
//!   peek, stats, clear; `queues.rs`: every queue; `take.rs`; `lists.rs`: dead letters and
//!   quarantine; `work.rs`; `transfer.rs`; `limit.rs`: flow-control limits, shown by
//!   `limit_view.rs` there, in `stats` and in the dashboard);
//!   `target.rs`: the queue a command acts on, one or sharded (`--shards N`).
//! - `text_codec/`: values as command-line text (`detect.rs`: `--codec auto`);
//!   `codec_choice.rs`: each queue's codec (`--codec-for`); `logging.rs`: tracing and status
//!   lines, as text or JSON (`--log-format`).
//! - `serve/`: `/metrics` and `/healthz` for `transfer`, `work` and `ui` (`--listen`).
//! - `otel.rs` (feature `otel`): spans exported over OTLP.
//! - `commands/gateway.rs`: `delayq gateway`, the QStash-compatible gateway of the
//!   `delayq-gateway` crate on the same listener (options in `gateway_args.rs`).
//! - `ui/`: the dashboard's page (`index.html`, `app.js`, `style.css`, built in) and its JSON
//!   API; `commands/ui.rs` starts it.

mod cli;
mod codec_choice;
mod commands;
mod connection;
mod ctx;
mod dedup_args;
mod durability_args;
mod duration;
mod exit;
mod gateway_args;
mod limit_args;
mod limit_view;
mod list_args;
mod lists;
mod logging;
#[cfg(feature = "otel")]
mod otel;
mod progress;
mod queue_arg;
mod schedule_args;
mod serve;
mod shard_args;
mod show;
mod text_codec;
mod ui;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    // Daemons say what they do (started, caught up, stopped); one-off commands only warn.
    let default_filter = match cli.command {
        cli::Command::Transfer(cli::TransferArgs { once: false, .. })
        | cli::Command::Work(_)
        | cli::Command::Ui(_)
        | cli::Command::Gateway(_) => "warn,delayq=info,delayq_gateway=info",
        _ => "warn",
    };
    #[cfg(feature = "otel")]
    let export = match otel::Export::start(&cli) {
        Ok(export) => export,
        Err(err) => {
            eprintln!("delayq: {err}");
            return exit::Status::Usage.into();
        }
    };
    #[cfg(feature = "otel")]
    let extra = export.as_ref().map(otel::Export::layer);
    #[cfg(not(feature = "otel"))]
    let extra = tracing_subscriber::layer::Identity::new();
    logging::init(cli.global.log_format, default_filter, extra);
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
            logging::fatal(format_args!("cannot start the runtime: {err}"));
            return exit::Status::Other.into();
        }
    };
    let json = cli.global.json;
    // A command that only prints has done its work when its reader stops reading; `take` and
    // `work` hand values over, and say what became of a value a closed pipe refused.
    let only_prints = !matches!(
        cli.command,
        cli::Command::Take { .. } | cli::Command::Work(_)
    );
    match runtime.block_on(commands::run(cli)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => exit::Status::False.into(),
        Err(err) if only_prints && exit::is_closed_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            match json {
                true => eprintln!("{}", serde_json::json!({ "error": exit::json_of(&err) })),
                false => logging::fatal(format_args!("{}", exit::describe(&err))),
            }
            exit::status(&err).into()
        }
    }
}
