//! Running a parsed command: connect, then hand over to the command's group.

mod lists;
mod queue;
mod transfer;
mod work;

use crate::cli::{Cli, Command, Global};
use crate::connection::redact_url;
use crate::text_codec::TextCodec;
use anyhow::Context;
use delayq::fred::clients::Client;
use delayq::DelayedQueue;

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
    let client = global
        .connection
        .options()
        .connect(&global.url)
        .await
        .with_context(|| format!("cannot connect to {}", redact_url(&global.url)))?;
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
        } => queue::offer(&ctx, &queue, &value, delay, unique).await,
        Command::Reschedule {
            queue,
            value,
            delay,
        } => queue::reschedule(&ctx, &queue, &value, delay).await,
        Command::Take {
            queue,
            count,
            timeout,
        } => queue::take(&ctx, &queue, count, timeout).await,
        Command::Remove { queue, value } => queue::remove(&ctx, &queue, &value).await,
        Command::Peek { queue, limit } => queue::peek(&ctx, &queue, limit).await,
        Command::Stats { queue, json } => queue::stats(&ctx, &queue, json).await,
        Command::Clear { queue } => queue::clear(&ctx, &queue).await,
        Command::Work(args) => work::work(&ctx, args).await,
        Command::Dead { action } => lists::dead(&ctx, action).await,
        Command::Quarantine { action } => lists::quarantine(&ctx, action).await,
        Command::Transfer { queues, once } => transfer::transfer(&ctx, &queues, once).await,
    }
}
