//! Running a parsed command: connect, then hand over to the command's group.

mod check;
mod docs;
mod lists;
mod pause;
mod queue;
mod target;
mod transfer;
mod ui;
mod work;

use crate::cli::{Cli, Command, Global, ValueArgs};
use crate::text_codec::TextCodec;
use anyhow::{bail, Context};
use delayq::fred::clients::Client;
use delayq::{redact_url, DelayedQueue, ShardedQueue};
use std::io::{Read, Write};

/// What every command works with: the connection, the codec and the global options.
pub(crate) struct Ctx {
    pub(crate) client: Client,
    pub(crate) codec: TextCodec,
    pub(crate) global: Global,
}

impl Ctx {
    /// The queue `name` with the global options and no scheduler of its own.
    pub(crate) async fn queue(&self, name: &str) -> delayq::Result<DelayedQueue<TextCodec>> {
        self.queue_builder(name).transfer(false).build().await
    }

    /// The values a command was given: the argument, or the content of --value-file / stdin
    /// (`-`), split at NUL bytes with --null-data.
    pub(crate) fn values(&self, args: &ValueArgs) -> anyhow::Result<Vec<String>> {
        let from_stdin = |()| -> anyhow::Result<Vec<u8>> {
            let mut buf = Vec::new();
            std::io::stdin()
                .lock()
                .read_to_end(&mut buf)
                .context("cannot read the value from stdin")?;
            Ok(buf)
        };
        let raw = match (&args.value, &args.value_file) {
            (Some(v), None) if v != "-" => return Ok(vec![v.clone()]),
            (Some(_), None) => from_stdin(())?,
            (None, Some(path)) if path.as_os_str() == "-" => from_stdin(())?,
            (None, Some(path)) => std::fs::read(path)
                .with_context(|| format!("cannot read the value from {}", path.display()))?,
            _ => anyhow::bail!("give the value as an argument or with --value-file"),
        };
        let chunks: Vec<Vec<u8>> = if self.global.null_data {
            let mut parts: Vec<Vec<u8>> = raw.split(|&b| b == 0).map(<[u8]>::to_vec).collect();
            if raw.last() == Some(&0) {
                parts.pop();
            }
            parts
        } else {
            vec![raw]
        };
        chunks
            .into_iter()
            .map(|c| self.codec.text_of_input(c).map_err(anyhow::Error::from))
            .collect()
    }

    /// Prints one record: `text` and a line break (a NUL with --null-data), or `json` on a line
    /// of its own with --json.
    pub(crate) fn print(
        &self,
        out: &mut impl Write,
        text: &str,
        json: impl FnOnce() -> serde_json::Value,
    ) -> std::io::Result<()> {
        if self.global.json {
            return writeln!(out, "{}", json());
        }
        out.write_all(text.as_bytes())?;
        out.write_all(if self.global.null_data { b"\0" } else { b"\n" })
    }

    /// Prints a value read from the queue (see [`Ctx::print`]).
    pub(crate) fn print_value(&self, out: &mut impl Write, value: &str) -> std::io::Result<()> {
        self.print(out, value, || self.codec.json_of(value))
    }

    /// The sharded queue `name` of `shards` shards with the global options and no scheduler.
    pub(crate) async fn sharded(
        &self,
        name: &str,
        shards: usize,
    ) -> delayq::Result<ShardedQueue<TextCodec>> {
        ShardedQueue::builder(self.client.clone(), name, shards, self.codec.clone())
            .options(self.global.options())
            .transfer(false)
            .build()
            .await
    }

    /// A builder for the queue `name` with the global options (entry format, clock).
    pub(crate) fn queue_builder(&self, name: &str) -> delayq::DelayedQueueBuilder<TextCodec> {
        DelayedQueue::builder(self.client.clone(), name, self.codec.clone())
            .options(self.global.options())
    }
}

/// Connects as the global options say; no message carries the password.
async fn connect(global: &Global) -> anyhow::Result<Client> {
    let url = redact_url(&global.url);
    let options = global.connection.options();
    let mut config = options
        .config(&global.url)
        .with_context(|| format!("bad Redis URL {url}"))?;
    if let Some(password) = password(global)? {
        config.password = Some(password);
    }
    match delayq::connect_with(&options.builder_for(config)).await {
        Ok(client) => Ok(client),
        Err(err) if err.is_connection_error() => {
            Err(err).with_context(|| format!("cannot connect to {url}"))
        }
        Err(err) => Err(err.into()),
    }
}

/// The password from `--password-file` or `--password-from-env`, if either is given.
fn password(global: &Global) -> anyhow::Result<Option<String>> {
    if let Some(path) = &global.password_file {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the password file {}", path.display()))?;
        let line = text.lines().next().unwrap_or("").trim_end_matches('\r');
        if line.is_empty() {
            bail!("the password file {} is empty", path.display());
        }
        return Ok(Some(line.to_owned()));
    }
    if global.password_env {
        return match std::env::var("REDIS_PASSWORD") {
            Ok(password) if !password.is_empty() => Ok(Some(password)),
            _ => bail!("--password-from-env: REDIS_PASSWORD is not set"),
        };
    }
    Ok(None)
}

/// Runs the command; false when it ran but has something to report by its exit status (a
/// `remove`/`reschedule --exit-status` that found nothing, a check that warns).
pub(crate) async fn run(cli: Cli) -> anyhow::Result<bool> {
    match cli.command {
        Command::Completions { shell } => return docs::completions(shell).map(|()| true),
        Command::Man => return docs::man().map(|()| true),
        _ => {}
    }
    let global = cli.global;
    let codec =
        TextCodec::new(global.codec, global.java_class.clone()).map_err(anyhow::Error::msg)?;
    let client = connect(&global).await?;
    let ctx = Ctx {
        client,
        codec,
        global,
    };
    let done = |result: anyhow::Result<()>| result.map(|()| true);
    match cli.command {
        Command::Offer {
            target,
            value,
            delay,
            unique,
        } => {
            let values = ctx.values(&value)?;
            done(queue::offer(&ctx, &target, &values, delay, unique).await)
        }
        Command::Reschedule {
            target,
            value,
            delay,
            exit_status,
        } => {
            let values = ctx.values(&value)?;
            queue::reschedule(&ctx, &target, &values, delay)
                .await
                .map(|found| found || !exit_status)
        }
        Command::Take {
            target,
            count,
            timeout,
        } => done(queue::take(&ctx, &target, count, timeout).await),
        Command::Remove {
            target,
            value,
            exit_status,
        } => {
            let values = ctx.values(&value)?;
            queue::remove(&ctx, &target, &values)
                .await
                .map(|found| found || !exit_status)
        }
        Command::Peek { target, limit } => done(queue::peek(&ctx, &target, limit).await),
        Command::Stats { target } => done(queue::stats(&ctx, &target).await),
        Command::Check { target } => check::check(&ctx, &target).await,
        Command::Clear { target } => done(queue::clear(&ctx, &target).await),
        Command::Pause { target } => done(pause::pause(&ctx, &target, true).await),
        Command::Resume { target } => done(pause::pause(&ctx, &target, false).await),
        Command::Work(args) => done(work::work(&ctx, args).await),
        Command::Dead { action } => done(lists::dead(&ctx, action).await),
        Command::Quarantine { action } => done(lists::quarantine(&ctx, action).await),
        Command::Transfer(args) => done(transfer::transfer(&ctx, &args).await),
        Command::Ui(args) => done(ui::ui(ctx, args).await),
        Command::Completions { .. } | Command::Man => Ok(true),
    }
}
