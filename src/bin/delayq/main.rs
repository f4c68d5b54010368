//! `delayq`: operate Redisson-compatible delayed queues from the shell.
//!
//! - `cli.rs`: the options and subcommands; `connection.rs`: the connection options (timeouts,
//!   TLS) and the URL without its secrets.
//! - `commands/`: one file per command group (`queue.rs`: offer, reschedule, take, remove,
//!   peek, stats, clear; `lists.rs`: dead letters and quarantine; `work.rs`; `transfer.rs`).
//! - `text_codec.rs`: values as command-line text.

mod cli;
mod commands;
mod connection;
mod text_codec;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("delayq: cannot start the runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(commands::run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("delayq: {}", error_chain(&err));
            ExitCode::FAILURE
        }
    }
}

/// The error and its causes, leaving out a cause its parent's message already includes.
fn error_chain(err: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in err.chain() {
        let message = cause.to_string();
        if !text.contains(&message) {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&message);
        }
    }
    text
}
