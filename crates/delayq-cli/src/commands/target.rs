//! [`Target`]: the queue a command acts on, one queue or a sharded one (`--shards N`), so that
//! each command is written once for both.

use super::Ctx;
use crate::cli::QueueArg;
use crate::text_codec::TextCodec;
use delayq::{DelayedQueue, ShardedQueue};

/// One queue's or a sharded queue's handle, or what each gives for the same purpose (such as
/// its consumer); [`each!`] runs the same code on either.
pub(crate) enum Target<One = DelayedQueue<TextCodec>, Sharded = ShardedQueue<TextCodec>> {
    One(One),
    Sharded(Sharded),
}

/// `$body` with `$q` bound to the handle `$target` holds, whichever kind it is.
macro_rules! each {
    ($target:expr, $q:ident => $body:expr) => {
        match $target {
            $crate::commands::target::Target::One($q) => $body,
            $crate::commands::target::Target::Sharded($q) => $body,
        }
    };
}
pub(crate) use each;

impl Ctx {
    /// The queue `arg` names (sharded with `--shards`), with no scheduler of its own.
    pub(crate) async fn target(&self, arg: &QueueArg) -> delayq::Result<Target> {
        Ok(match arg.shards {
            None => Target::One(self.queue(&arg.queue).await?),
            Some(n) => Target::Sharded(self.sharded(&arg.queue, n, arg.previous_shards).await?),
        })
    }

    /// The queue `arg` names, for `command`, which reads one queue's own keys: with `--shards`,
    /// a usage error that names the shards to run it on instead.
    pub(crate) async fn one(
        &self,
        arg: &QueueArg,
        command: &str,
    ) -> delayq::Result<DelayedQueue<TextCodec>> {
        if let Some(n) = arg.shards {
            let shard = |i| ShardedQueue::<TextCodec>::shard_name(&arg.queue, i);
            return Err(delayq::Error::InvalidConfig(format!(
                "`delayq {command}` has no --shards: it reads one queue's own keys, and each \
                 shard of a sharded queue has its own; run it on each shard by name ({} .. {})",
                shard(0),
                shard(n.saturating_sub(1)),
            )));
        }
        self.queue(&arg.queue).await
    }
}
