//! The settle calls of one reliable consumer's deliveries: ack, nack (or give back), dead
//! letter, extend.

use super::config::ReliableConfig;
use super::dead;
use crate::redis::ops::{ack, dead as dead_op, extend, nack};
use crate::redis::script::QueueSpec;
use crate::time::{now_ms, Delay};
use crate::Result;
use fred::clients::Client;
use std::time::Duration;
use tokio::sync::mpsc;

/// What settling a delivery needs, shared by a consumer and its deliveries.
#[derive(Debug)]
pub(super) struct SettleCtx {
    pub(super) client: Client,
    pub(super) queue: QueueSpec,
    pub(super) config: ReliableConfig,
    /// Ids of deliveries dropped unsettled, for the consumer to give back.
    pub(super) returns: mpsc::UnboundedSender<String>,
}

impl SettleCtx {
    /// The work on delivery `id` is done.
    pub(super) async fn ack(&self, id: &str) -> Result<bool> {
        ack::run(&self.client, &self.queue, id).await
    }

    /// Gives delivery `id` back: after `delay`, or at once; `unprocessed` uncounts the attempt
    /// and puts the value at the head of the target list.
    pub(super) async fn nack(&self, id: &str, delay: Duration, unprocessed: bool) -> Result<bool> {
        let delay = Delay::checked(delay)?;
        nack::run(&self.client, &self.queue, id, delay, unprocessed).await
    }

    /// Dead-letters delivery `id` after `attempts` with `error`.
    pub(super) async fn dead(&self, id: &str, attempts: u32, error: &str) -> Result<bool> {
        let header = dead::header(attempts, now_ms(), error);
        let limit = self.config.dead_letter_limit();
        let (done, trimmed) = dead_op::run(&self.client, &self.queue, id, header, limit).await?;
        if trimmed > 0 {
            tracing::warn!(
                queue = self.queue.keys.target(),
                trimmed,
                limit,
                "the dead-letter list is full: its oldest dead letters were dropped (raise \
                 dead_letter_limit, or replay or purge them)"
            );
        }
        Ok(done)
    }

    /// Pushes delivery `id`'s deadline to `visibility` from now.
    pub(super) async fn extend(&self, id: &str, visibility: Duration) -> Result<Option<i64>> {
        extend::run(&self.client, &self.queue, id, Delay::span(visibility)?).await
    }
}
