//! `--shards N` and `--previous-shards P`: a sharded queue's number of shards (and the number
//! before, while it changes), for the commands whose queue is not a [`QueueArg`](crate::cli::QueueArg).

use clap::Args;

/// The number of shards of a sharded queue, as the commands take it.
#[derive(Debug, Args)]
pub(crate) struct ShardArgs {
    /// The queue is sharded over N shards (QUEUE:{0} .. QUEUE:{N-1}; see docs/sharding.md).
    #[arg(long, value_name = "N", value_parser = parse_shards)]
    pub(crate) shards: Option<usize>,
    /// While changing a sharded queue's number of shards: it had P before.
    #[arg(long, value_name = "P", value_parser = parse_shards, requires = "shards")]
    pub(crate) previous_shards: Option<usize>,
}

/// A number of shards: 1 to [`delayq::MAX_SHARDS`].
pub(crate) fn parse_shards(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if (1..=delayq::MAX_SHARDS).contains(&n) => Ok(n),
        _ => Err(format!(
            "a number of shards is a whole number from 1 to {}",
            delayq::MAX_SHARDS
        )),
    }
}
