//! Running a parsed command: connect, then hand over to the command's group.

mod lists;
mod queue;
mod transfer;
mod work;

use crate::cli::{Cli, Command, Global, ValueArgs};
use crate::text_codec::TextCodec;
use anyhow::Context;
use delayq::fred::clients::Client;
use delayq::DelayedQueue;
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

    /// A builder for the queue `name` with the global options (entry format, clock).
    pub(crate) fn queue_builder(&self, name: &str) -> delayq::DelayedQueueBuilder<TextCodec> {
        DelayedQueue::builder(self.client.clone(), name, self.codec.clone())
            .entry_format(self.global.entry_format())
            .clock(self.global.clock())
    }
}

/// Runs the command.
pub(crate) async fn run(cli: Cli) -> anyhow::Result<()> {
    let global = cli.global;
    let codec =
        TextCodec::new(global.codec, global.java_class.clone()).map_err(anyhow::Error::msg)?;
    let client = delayq::connect(&global.url)
        .await
        .with_context(|| format!("cannot connect to {}", global.url))?;
    let ctx = Ctx {
        client,
        codec,
        global,
    };
    match cli.command {
        Command::Offer {
            queue,
            value,
            delay,
            unique,
        } => {
            let values = ctx.values(&value)?;
            queue::offer(&ctx, &queue, &values, delay, unique).await
        }
        Command::Reschedule {
            queue,
            value,
            delay,
        } => {
            let values = ctx.values(&value)?;
            queue::reschedule(&ctx, &queue, &values, delay).await
        }
        Command::Take {
            queue,
            count,
            timeout,
        } => queue::take(&ctx, &queue, count, timeout).await,
        Command::Remove { queue, value } => {
            let values = ctx.values(&value)?;
            queue::remove(&ctx, &queue, &values).await
        }
        Command::Peek { queue, limit } => queue::peek(&ctx, &queue, limit).await,
        Command::Stats { queue } => queue::stats(&ctx, &queue).await,
        Command::Clear { queue } => queue::clear(&ctx, &queue).await,
        Command::Work(args) => work::work(&ctx, args).await,
        Command::Dead { action } => lists::dead(&ctx, action).await,
        Command::Quarantine { action } => lists::quarantine(&ctx, action).await,
        Command::Transfer { queues, once } => transfer::transfer(&ctx, &queues, once).await,
    }
}
