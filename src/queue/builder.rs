//! The one builder core of both kinds of queue: [`BuildCore`], the settings a
//! [`DelayedQueueBuilder`](super::DelayedQueueBuilder) and a
//! [`ShardedQueueBuilder`](super::ShardedQueueBuilder) share (a sharded queue builds each shard
//! from a copy of its own), and [`core_setters!`], their setters written once.

use crate::durable::{Durability, DurableWrites};
use crate::options::QueueOptions;
use crate::transfer::{GroupConfig, TransferConfig};
use fred::clients::Client;
use std::sync::Arc;

/// What a queue is built from, whichever its kind.
#[derive(Debug)]
pub(crate) struct BuildCore<C> {
    pub(crate) client: Client,
    pub(crate) name: String,
    pub(crate) codec: Arc<C>,
    pub(crate) options: QueueOptions,
    pub(crate) transfer: bool,
    pub(crate) transfer_config: TransferConfig,
    pub(crate) group_config: Option<GroupConfig>,
    pub(crate) durability: Durability,
    /// Durable writes shared with other queues (the shards of one sharded queue), if any.
    pub(crate) durable: Option<DurableWrites>,
}

impl<C> BuildCore<C> {
    /// The queue `name` on `client` with the defaults.
    pub(crate) fn new(client: Client, name: String, codec: Arc<C>) -> Self {
        BuildCore {
            client,
            name,
            codec,
            options: QueueOptions::default(),
            transfer: true,
            transfer_config: TransferConfig::default(),
            group_config: None,
            durability: Durability::none(),
            durable: None,
        }
    }

    /// The same settings for the queue `name` (a shard of this one).
    pub(crate) fn named(&self, name: String) -> Self {
        BuildCore {
            client: self.client.clone(),
            name,
            codec: self.codec.clone(),
            options: self.options,
            transfer: self.transfer,
            transfer_config: self.transfer_config,
            group_config: self.group_config,
            durability: self.durability,
            durable: self.durable.clone(),
        }
    }
}

/// The setters both builders share, on their `core` field, with their docs written once.
macro_rules! core_setters {
    () => {
        /// The entry format and clock (see [`QueueOptions`](crate::QueueOptions)), used by
        /// every call of the queue (of each shard), the scheduler it starts and its reliable
        /// consumers. Default: current entries, this process's clock.
        pub fn options(mut self, options: crate::QueueOptions) -> Self {
            self.core.options = options;
            self
        }

        /// Whether the queue (each shard) is transferred by this process, as every Java
        /// `RDelayedQueue` is: it runs or joins the transfer scheduler of its client (one
        /// shared [`SchedulerGroup`](crate::SchedulerGroup), one pub/sub connection for all
        /// its queues). Default: true.
        pub fn transfer(mut self, enabled: bool) -> Self {
            self.core.transfer = enabled;
            self
        }

        /// Batches, index, call time and backoff of the queue's (each shard's) transfers.
        /// Used when the queue joins its client's scheduler group; a queue the group has
        /// already keeps its settings, and other ones asked for are logged as a warning.
        /// Default: [`TransferConfig::default`](crate::TransferConfig::default).
        pub fn transfer_config(mut self, config: crate::TransferConfig) -> Self {
            self.core.transfer_config = config;
            self
        }

        /// Sweep and concurrency of the client's scheduler group, if this queue starts it; a
        /// group that runs already keeps its own, and other ones asked for here are logged as a
        /// warning. Default: [`GroupConfig::default`](crate::GroupConfig::default).
        pub fn group_config(mut self, config: crate::GroupConfig) -> Self {
            self.core.group_config = Some(config);
            self
        }
    };
}
pub(crate) use core_setters;
