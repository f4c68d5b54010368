//! The queue a command acts on: its name, and its shards when it is sharded.

use clap::Args;

/// The queue a command acts on.
#[derive(Debug, Args)]
pub(crate) struct QueueArg {
    /// The destination queue's name.
    pub(crate) queue: String,
    /// The queue is sharded over N shards (QUEUE:{0} .. QUEUE:{N-1}; see docs/sharding.md).
    #[arg(long, value_name = "N", value_parser = crate::shard_args::parse_shards)]
    pub(crate) shards: Option<usize>,
    /// While changing a sharded queue's number of shards: it had P before (see "Changing the
    /// number of shards" in docs/sharding.md); `stats` then tells whether the old layout has
    /// drained, and once it has, records the new count.
    #[arg(long, value_name = "P", value_parser = crate::shard_args::parse_shards, requires = "shards")]
    pub(crate) previous_shards: Option<usize>,
}
