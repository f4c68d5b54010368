//! Limits across processes: a concurrency cap and a rate per queue, and per key, stored in
//! Redis and enforced by every delayq worker of the queue.
//!
//! - `rule.rs`: [`Rate`] and [`KeyRule`] (and how a key is read from a value's bytes).
//! - `stored.rs`: the limits' Redis hash (`delayq_limits:{NAME}`) and reading it back.
//! - `usage.rs`: [`StoredLimits`], the door `queue.limits()` returns (set, get, clear), and
//!   [`LimitUsage`], what the limits hold now.
//!
//! ```no_run
//! # async fn ex(queue: delayq::DelayedQueue<delayq::codec::StringCodec>) -> Result<(), delayq::Error> {
//! use delayq::limit::{KeyRule, Limits};
//!
//! let limits = Limits::default()
//!     .with_concurrency(3)
//!     .with_rate("100/1s".parse()?)
//!     .with_key(KeyRule::JsonPointer("/customer".into()))
//!     .with_key_concurrency(1);
//! queue.limits().set(&limits).await?;
//! assert_eq!(queue.limits().get().await?, Some(limits));
//! # Ok(()) }
//! ```
//!
//! # How the worker enforces them
//!
//! Everything runs by the Redis server's clock (`TIME`), in scripts of the queue's hash slot,
//! so every process sees the same slots and tokens.
//!
//! - **Concurrency cap**: a zset of slot holders (delivery id → lease end). A slot is taken in
//!   one script with the rate tokens before the handler runs: under queue-wide limits alone,
//!   by the script that takes the values (`limit_take.lua`: up to the worker's free permits
//!   in one call, each value with its slot and token, while the limits allow; nothing is taken
//!   while they refuse); with per-key limits, right after the take, once the value's key is known
//!   (`limit_admit.lua` for a batch, `limit_acquire.lua` for one value: see **Fairness**). Its
//!   lease is the visibility timeout, renewed by the job's heartbeats
//!   (every third of it: `limit_extend.lua` pushes the value's deadline and the leases back in
//!   one call) and released when the job settles (an ack releases them in the same call,
//!   `limit_ack.lua`; a retry or a dead letter with a second one). A killed process's slots
//!   free at their lease's end (the acquiring scripts drop run-out leases).
//! - **Rate N per period**: GCRA with emission interval `T = period / N`: a start is granted
//!   when `now >= TAT` (or when `TAT` falls within `now`'s millisecond: the start is granted
//!   at `TAT`, so one call may grant several starts of a fast rate), then
//!   `TAT = max(TAT, now - T/2) + T`. Keeping the arrival time within
//!   `T/2` of a late start keeps throughput at N per period when waiters wake a little late,
//!   and bounds bursts: each grant's TAT is at least `T/2` past it, and each TAT at least `T`
//!   past the one before, so grants `k` apart are at least `(k - 1)T - T/2` apart, and any
//!   window of length `W` sees at most `ceil((W + T/2) / T)` starts: at most `N + 1` in any one
//!   period. The grant time of each job is its [`admitted_ms`](crate::Job::admitted_ms): the
//!   bound holds for those times exactly, whenever the handlers start.
//! - **Waiting**: a worker at a queue-wide limit takes no more values. It holds the one it has
//!   (in flight, heartbeats on) and waits for the moment the script names: the next token for a
//!   rate (asking again at least every second, so a change of limits is seen); for a cap, the
//!   earliest lease end, waking early when a job of this process settles, and otherwise asking
//!   again every 50 ms (other processes' releases are not announced), so it never polls in a
//!   busy loop. Each wait is logged at debug level and measured (`delayq_limit_wait_seconds`).
//!   A worker over several queues ([`with_queue`](crate::WorkerBuilder::with_queue)) applies
//!   each queue's own limits; rather than hold the other queues up, it gives a refused value
//!   back to the head of its list and rests that queue until the time named (50 ms at most for
//!   a cap, a second for a token).
//! - **Per key**: a value's key comes from the worker's
//!   [`limit_key`](crate::WorkerBuilder::limit_key) closure, else the stored [`KeyRule`]; a
//!   value without one gets only the queue-wide limits. A value whose key is at its cap, out of
//!   tokens, or already has values held back is **held back**: in the same script it leaves the
//!   in-flight set (its attempt given back) for the tail of the key's list
//!   (`delayq_limit_parked:{NAME}:KEY`), and the key enters a zset scored by when it may be
//!   tried again (its next lease end or token; now when one of its slots is released, and for
//!   every key when the limits change). Workers take from a due held key (its oldest value, in
//!   the script that acquires) before the target list, and stop a blocking wait on the target
//!   list when a held key falls due (looking at least every 50 ms while keys are held). So a
//!   value is always in flight or on a list in Redis (a killed worker loses none), and a key's
//!   values start in the order one worker took them: values that two processes take at the
//!   same moment may start in either order, as without limits. The first value of a key held
//!   back is logged at info level, the others at debug.
//! - **Fairness**: a burst for one key is moved aside, not waited behind, and in batches: a
//!   worker of one queue under per-key limits takes up to 64 values at once (its free permits
//!   and 16 more: values whose keys are held back cost it no permit, so a batch reaches past a
//!   burst; 64 bounds one script's run) and settles them all in one script call
//!   (`limit_admit.lua`), in take order. Each value starts while the worker has a permit left
//!   and its key and the queue-wide limits allow it; is held back when its key is at its
//!   limits or has values held back (behind them, in order); or else, with no permit left or
//!   the queue-wide limits refusing, goes back to the head of the target list, the batch's
//!   values in their order and their attempts given back (a key's later values in the batch
//!   then go back behind it), and the worker waits the time the limits name before taking
//!   again. Between the take and that call the values are in flight, reaped as any value when
//!   the worker dies. A worker over several queues takes and settles one value at a time
//!   (`limit_acquire.lua`). So another key's value starts once the workers have held back what
//!   is ahead of it, three round trips (two takes and the script) per batch ahead. Measured
//!   (tests/it/limit, two workers of concurrency 4 of a debug build on a loaded 2-core
//!   machine, key cap 1): with 10,000 values of key A ahead, key B's ten values all started
//!   within 1.2 s (1.0 s with 2,000 ahead), against 3.8 s (1.4 s) taking one value at a time,
//!   as at commit c32ea23, and 11 s on a more loaded machine. The test asserts 30 s for 2,000,
//!   for a loaded machine.
//! - **Cost**: a job under limits that do not bind makes as many round trips as one without
//!   (the take takes the slot and token, the ack releases them, the heartbeat renews them);
//!   with per-key limits a batch of values adds one (the admitting script) and saves the takes
//!   a value at a time would make. Measured with `benches/run.sh --only limits` (one worker of
//!   concurrency 16, empty handlers, release build, loaded 2-core machine; each run the median
//!   of five alternating rounds; benches/results/2026-11-27-dae8dd1-limits): about 1.05 of
//!   the throughput without limits under a key cap of 1,000 (batches of up to 32 values here:
//!   the takes saved outweigh the script), and 0.81 under a queue-wide cap of 1,000 and
//!   1,000,000/s (that path unchanged; 0.77 over seven earlier runs). Taking and settling one
//!   value at a time, as at commit c32ea23, per-key limits cost 0.55 (0.53-0.56, seven runs).
//! - **One representation**: the scripts read the caps and rates from the stored hash
//!   (`lua/lib/limit.lua`'s `delayq_limit_spec`, one `HMGET` with the version), so a number
//!   goes from [`Limits`] to its hash field to the script; the worker keeps only the version
//!   it read and how a value's key is read.
//! - **Changes** take effect without a restart: each limited call carries the version of the
//!   limits the worker read, and the script answers "stale" when it changed, so the worker
//!   reads them again at once; a worker without limits looks for new ones once a second.
//! - **Malformed stored limits fail closed**: a hash delayq did not write (a hand edit: an
//!   unknown field, a number that does not parse or is out of range) reads as
//!   [`Error::MalformedLimits`](crate::Error::MalformedLimits), and a limit script that finds
//!   a malformed number answers so, naming the field, taking and starting nothing. A worker
//!   then takes nothing from the queue (a worker over several queues rests that one) until the
//!   limits are stored again or cleared, looking once a second and logging an error once a
//!   minute while it lasts. A limits key of another type (a string) closes the gate the same
//!   way, and so does any failed read by a worker that has read no good limits yet.
//!   Clearing the per-key limits moves the values held back to the head of the target list
//!   (each key's oldest first).
//! - **Not limited**: Java consumers taking from the target list directly, and delayq's
//!   [`ReliableConsumer`](crate::ReliableConsumer) used on its own; only workers enforce limits.
//!   A [`ShardedQueue`](crate::ShardedQueue)'s shards are queues of their own, each with its
//!   own limits; the sharded queue's limits as a whole are reserved before each take
//!   ([`ShardedQueue::limits`](crate::ShardedQueue::limits), `docs/sharding.md`).

mod paused;
mod rule;
mod stored;
mod usage;

pub use rule::{KeyRule, Rate};
pub use usage::{LimitUsage, StoredLimits};

pub(crate) use rule::KeyReader;
pub(crate) use stored::from_fields;

use crate::Result;
use rule::invalid;

/// A queue's limits, stored in Redis ([`StoredLimits::set`], from `queue.limits()`) and
/// enforced by every delayq worker of the queue (see the [module docs](self)). A limit left
/// unset is no limit. Set with the `with_*` methods, read with the bare-named getters.
///
/// Stored as the hash `delayq_limits:{NAME}`: `concurrency`, `rate_count` and `rate_period_ms`,
/// `key_pointer` or `key_regex`, `key_concurrency`, `key_rate_count` and `key_rate_period_ms`,
/// and a `version` token that changes with every store.
///
/// ```
/// use delayq::limit::Limits;
///
/// let limits = Limits::default().with_concurrency(3);
/// assert_eq!(limits.concurrency(), Some(3));
/// assert_eq!(limits.key_concurrency(), None);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Limits {
    pub(crate) concurrency: Option<u32>,
    pub(crate) rate: Option<Rate>,
    pub(crate) key: Option<KeyRule>,
    pub(crate) key_concurrency: Option<u32>,
    pub(crate) key_rate: Option<Rate>,
}

impl Limits {
    /// The most jobs of the queue running at once, across every worker process.
    /// Default: `None`, no cap.
    pub fn with_concurrency(mut self, n: u32) -> Self {
        self.concurrency = Some(n);
        self
    }

    /// The most jobs of the queue started per period, across every worker process.
    /// Default: `None`, no rate.
    pub fn with_rate(mut self, rate: Rate) -> Self {
        self.rate = Some(rate);
        self
    }

    /// How a value's key is read from its bytes, for workers without a
    /// [`limit_key`](crate::WorkerBuilder::limit_key) closure. Default: `None`.
    pub fn with_key(mut self, rule: KeyRule) -> Self {
        self.key = Some(rule);
        self
    }

    /// The most jobs of one key running at once. Default: `None`, no cap.
    pub fn with_key_concurrency(mut self, n: u32) -> Self {
        self.key_concurrency = Some(n);
        self
    }

    /// The most jobs of one key started per period. Default: `None`, no rate.
    pub fn with_key_rate(mut self, rate: Rate) -> Self {
        self.key_rate = Some(rate);
        self
    }

    /// The queue-wide concurrency cap.
    pub fn concurrency(&self) -> Option<u32> {
        self.concurrency
    }

    /// The queue-wide rate.
    pub fn rate(&self) -> Option<Rate> {
        self.rate
    }

    /// How a value's key is read.
    pub fn key(&self) -> Option<&KeyRule> {
        self.key.as_ref()
    }

    /// The concurrency cap per key.
    pub fn key_concurrency(&self) -> Option<u32> {
        self.key_concurrency
    }

    /// The rate per key.
    pub fn key_rate(&self) -> Option<Rate> {
        self.key_rate
    }

    /// Whether any per-key limit is set.
    pub fn per_key(&self) -> bool {
        self.key_concurrency.is_some() || self.key_rate.is_some()
    }

    /// Whether no limit is set at all.
    pub fn is_empty(&self) -> bool {
        self.concurrency.is_none() && self.rate.is_none() && !self.per_key()
    }

    /// Refuses caps of 0, bad rates and key rules that do not compile (or a JSON pointer
    /// without the feature `json`). Per-key limits without a key rule are allowed: workers
    /// then need a [`limit_key`](crate::WorkerBuilder::limit_key) closure, and a worker without
    /// one applies only the queue-wide limits (it says so in a warning).
    pub fn validate(&self) -> Result<()> {
        for (name, cap) in [
            ("concurrency", self.concurrency),
            ("key concurrency", self.key_concurrency),
        ] {
            if cap == Some(0) {
                return Err(invalid(format!("{name} 0: a cap must be at least 1")));
            }
        }
        for rate in [self.rate, self.key_rate].into_iter().flatten() {
            rate.validate()?;
        }
        if let Some(rule) = &self.key {
            rule.validate()?;
        }
        Ok(())
    }
}
