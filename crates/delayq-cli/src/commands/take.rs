//! `delayq take`: values off the target list onto stdout, none lost on the way. A value is taken
//! only after the one before it is written; one that cannot be decoded or written goes back to
//! the head of its list (its bytes to stderr if even that fails), and the command fails. When
//! `--timeout` passes before `--count` values came, it says so on stderr and answers false
//! (exit 1): values reach the target list only through a transfer scheduler (`delayq
//! transfer`, a delayq or Redisson application), so a queue with none never fills.

use super::target::{each, Target};
use super::Ctx;
use crate::cli::QueueArg;
use crate::exit::Usage;
use delayq::codec::{ByteArrayCodec, Codec};
use delayq::{Consumer, ShardedQueue};
use std::io::Write;
use std::time::Duration;

/// The consumer of `take`: raw bytes, so a value given back is the very bytes taken.
type RawConsumer = Target<Consumer<ByteArrayCodec>, delayq::ShardedConsumer<ByteArrayCodec>>;

pub(crate) async fn take(
    ctx: &Ctx,
    target: &QueueArg,
    count: usize,
    timeout: Option<Duration>,
) -> anyhow::Result<bool> {
    if stdout_is_closed() {
        return Err(Usage(
            "stdout is closed: the values taken would be written nowhere; nothing was taken".into(),
        )
        .into());
    }
    let consumer: RawConsumer = match target.shards {
        None => Target::One(Consumer::new(&ctx.client, &target.queue, ByteArrayCodec).await?),
        Some(n) => Target::Sharded(
            ShardedQueue::builder(ctx.client.clone(), &target.queue, n, ByteArrayCodec)
                .options(ctx.global.options())
                .transfer(false)
                .build()
                .await?
                .consumer(),
        ),
    };
    let result = take_each(ctx, &consumer, &target.queue, count, timeout).await;
    // A sharded consumer has no connection of its own to close.
    if let Target::One(consumer) = consumer {
        consumer.close().await;
    }
    let taken = result?;
    if taken < count {
        let waited = humantime::format_duration(timeout.unwrap_or_default());
        let queue = &target.queue;
        crate::logging::fatal(format_args!(
            "took {taken} of {count} from {queue}: nothing more arrived within {waited} (values \
             reach {queue} when they are due and a transfer scheduler moves them: is `delayq \
             transfer {queue}` or an application's scheduler running?)"
        ));
    }
    Ok(taken == count)
}

async fn take_each(
    ctx: &Ctx,
    consumer: &RawConsumer,
    queue: &str,
    count: usize,
    timeout: Option<Duration>,
) -> anyhow::Result<usize> {
    let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
    let mut out = std::io::stdout().lock();
    for done in 0..count {
        let taken = match deadline {
            None => each!(consumer, c => c.take().await).map(Some),
            Some(deadline) => {
                let left = deadline.saturating_duration_since(tokio::time::Instant::now());
                if left.is_zero() {
                    return Ok(done);
                }
                each!(consumer, c => c.poll(left).await)
            }
        };
        let Some(raw) = taken? else {
            return Ok(done);
        };
        let codec = ctx.codec(queue);
        let (what, cause) = match codec.decode(&raw) {
            Ok(value) => match write_value(ctx, &mut out, queue, &value) {
                Ok(()) => continue,
                Err(err) => (
                    format!("cannot write a value taken from {queue} to stdout"),
                    anyhow::Error::from(err),
                ),
            },
            Err(err) => (
                format!(
                    "a value taken from {queue} does not decode with the {} codec",
                    codec.name()
                ),
                anyhow::Error::from(delayq::Error::Decode {
                    codec: codec.name(),
                    raw: raw.clone().into(),
                    source: Box::new(err),
                }),
            ),
        };
        let where_now = give_back(consumer, queue, raw).await;
        return Err(cause.context(format!("{what}; {where_now}")));
    }
    Ok(count)
}

fn write_value(ctx: &Ctx, out: &mut impl Write, queue: &str, value: &str) -> std::io::Result<()> {
    ctx.print_value(out, queue, value)?;
    out.flush()
}

/// Puts a value that was not handed over back at the head of its list, and says where it is
/// now: there, or (when even that fails) in this message as hex, the last place it exists.
async fn give_back(consumer: &RawConsumer, queue: &str, raw: Vec<u8>) -> String {
    let len = raw.len();
    let hex = crate::text_codec::encode_hex(&raw);
    match each!(consumer, c => c.give_back(&[raw]).await) {
        Ok(()) => format!("it is back at the head of {queue}"),
        Err(err) => format!(
            "it could not be put back ({err}) and has left Redis, so here are its {len} bytes in \
             hex: {hex}"
        ),
    }
}

/// True when stdout was closed when the process started (`>&-`): the Rust runtime then opens
/// `/dev/null` in its place, read-write, so writes succeed and vanish. A shell's `>/dev/null`
/// opens it write-only, and taking into it is the operator's choice.
fn stdout_is_closed() -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{FileTypeExt, MetadataExt};
        let (Ok(null), Ok(out)) = (
            std::fs::metadata("/dev/null"),
            std::fs::metadata("/dev/stdout"),
        ) else {
            return false;
        };
        // SAFETY: F_GETFL on fd 1 reads its flags; it has no other effect.
        let flags = unsafe { libc::fcntl(libc::STDOUT_FILENO, libc::F_GETFL) };
        out.file_type().is_char_device()
            && out.rdev() == null.rdev()
            && flags >= 0
            && flags & libc::O_ACCMODE == libc::O_RDWR
    }
    #[cfg(not(unix))]
    {
        false
    }
}
