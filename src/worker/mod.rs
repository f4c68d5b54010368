//! The worker: a reliable consumer with bounded concurrency, heartbeats, retries, dead letters
//! and graceful shutdown, for the common case.
//!
//! - `mod.rs`: [`Job`], [`WorkerBuilder`], [`WorkerHandle`], [`WorkerStats`].
//! - `job_error.rs`: [`JobError`] and [`HandlerError`], why a job failed.
//! - `priority.rs`: [`Priority`], how a worker over several queues chooses among them.
//! - `sources.rs`: where the values come from: one queue's blocking waits, or several queues'
//!   lengths looked at, the next chosen by the priority; a paused queue waited out.
//! - `taker.rs`: takes from the target lists, cut short when a held-back value is due.
//! - `gate.rs`: the queues' limits ([`crate::limit`]): slots and tokens acquired before a
//!   handler runs, values held back per key and taken back, slots renewed and released.
//! - `run.rs`: the loop (take, spawn, grace, give back) and one job's life (decode and attempt
//!   check, the handler with heartbeats, settling the outcome).
//! - `tally.rs`: each step of a job recorded once, into the counters, the metrics and the
//!   console's activity.
//! - `reserve.rs`: a sharded queue's limits as a whole, reserved before each take.
//! - `sharded.rs`: [`ShardedQueue::worker`](crate::ShardedQueue::worker) and the sharded
//!   queue's limits.
//!
//! ```no_run
//! # async fn ex(queue: delayq::DelayedQueue<delayq::codec::StringCodec>) -> Result<(), delayq::Error> {
//! use delayq::{JobError, RetryPolicy};
//! use std::time::Duration;
//!
//! let stats = queue
//!     .worker(8, |job: delayq::Job<String>| async move {
//!         if job.value().is_empty() {
//!             // Permanent: straight to the dead letters.
//!             return Err(JobError::permanent("empty order id").into());
//!         }
//!         // ... cancel the order; `?` on any error is a retryable failure ...
//!         Ok::<(), anyhow::Error>(())
//!     })
//!     .retry(RetryPolicy::exponential(5, Duration::from_secs(1), Duration::from_secs(60)))
//!     .stop_on_signal()
//!     .run()
//!     .await?;
//! println!("acked {}", stats.acked);
//! # Ok(()) }
//! ```

mod gate;
mod job_error;
mod next;
mod priority;
mod reserve;
mod run;
mod sharded;
mod sources;
mod taker;
mod tally;

use crate::codec::Codec;
use crate::observe::ObserveConfig;
use crate::queue::DelayedQueue;
use crate::reliable::ReliableConfig;
use crate::retry::RetryPolicy;
use crate::{Error, Result};
use bytes::Bytes;
use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub use job_error::{HandlerError, JobError};
pub use priority::Priority;

/// One value handed to a worker's handler.
#[derive(Debug)]
pub struct Job<V> {
    value: V,
    attempt: u32,
    id: String,
    raw: Bytes,
    queue: Arc<str>,
    admitted_ms: Option<i64>,
    abort: CancellationToken,
}

impl<V> Job<V> {
    /// The decoded value.
    pub fn value(&self) -> &V {
        &self.value
    }

    /// Takes the decoded value out.
    pub fn into_value(self) -> V {
        self.value
    }

    /// Which delivery of this value this is (1 for the first).
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// The delivery id (a member of `delayq_inflight:{NAME}`).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The name of the queue the value came from (one of several, for a worker made with
    /// [`WorkerBuilder::with_queue`]).
    pub fn queue(&self) -> &str {
        &self.queue
    }

    /// The value's bytes, as the codec wrote them.
    pub fn raw(&self) -> &Bytes {
        &self.raw
    }

    /// When the queue's [limits](crate::limit) granted this job its slot and token: the Redis
    /// server's clock (`TIME`, epoch ms) in the script that granted them. `None` when the queue
    /// has no limits. The rate's bound (at most N + 1 starts in any one period) holds for these
    /// times exactly, whatever delays the handler's start; record them to audit a rate.
    pub fn admitted_ms(&self) -> Option<i64> {
        self.admitted_ms
    }

    /// Cancelled when the worker's shutdown grace period is over and this job is abandoned: a
    /// long job can stop cleanly. The handler is still polled for the
    /// [`abort_grace`](WorkerBuilder::abort_grace) after the cancel, so it can see the token,
    /// clean up and return; only then (or when the abort grace runs out, by dropping the
    /// handler) is its value given back, unprocessed, whatever the handler returned.
    pub fn abort_token(&self) -> &CancellationToken {
        &self.abort
    }
}

/// Counters of a worker.
#[derive(Debug, Default)]
struct Counters {
    taken: AtomicU64,
    acked: AtomicU64,
    retried: AtomicU64,
    dead: AtomicU64,
    given_back: AtomicU64,
    lost: AtomicU64,
    errors: AtomicU64,
    paused_takes: AtomicU64,
}

/// What a worker did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct WorkerStats {
    /// Values taken.
    pub taken: u64,
    /// Values handled and acknowledged.
    pub acked: u64,
    /// Failed attempts given back for a retry.
    pub retried: u64,
    /// Values moved to the dead letters.
    pub dead: u64,
    /// Values given back unprocessed at shutdown.
    pub given_back: u64,
    /// Settlements refused because the value was no longer ours (its deadline had passed; it
    /// may be processed twice).
    pub lost: u64,
    /// Redis errors while taking or settling.
    pub errors: u64,
    /// Takes that found their queue [paused](crate::admin::Admin::pause) and took nothing (a
    /// paused queue is looked at again about every second).
    pub paused_takes: u64,
}

impl Counters {
    fn snapshot(&self) -> WorkerStats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        WorkerStats {
            taken: get(&self.taken),
            acked: get(&self.acked),
            retried: get(&self.retried),
            dead: get(&self.dead),
            given_back: get(&self.given_back),
            lost: get(&self.lost),
            errors: get(&self.errors),
            paused_takes: get(&self.paused_takes),
        }
    }

    fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// Builds and runs a worker; made by [`DelayedQueue::worker`].
#[must_use]
pub struct WorkerBuilder<C: Codec, F> {
    /// The queue the worker was made on, then those added with `with_queue`.
    queues: Vec<DelayedQueue<C>>,
    concurrency: usize,
    handler: F,
    retry: RetryPolicy,
    config: ReliableConfig,
    grace: Duration,
    abort_grace: Duration,
    settle_timeout: Duration,
    server_check: Option<Duration>,
    observe: ObserveConfig,
    stop: CancellationToken,
    on_signal: bool,
    /// The per-key limits' key of a value, instead of the stored [`KeyRule`](crate::limit::KeyRule).
    limit_key: Option<LimitKeyFn<C::Value>>,
    /// A sharded queue's logical handle, whose limits hold for every shard together.
    logical: Option<DelayedQueue<C>>,
    /// How the next queue is chosen when there are several.
    priority: Priority,
}

/// A worker's [`WorkerBuilder::limit_key`] closure.
type LimitKeyFn<V> = Arc<dyn Fn(&V) -> Option<String> + Send + Sync>;

impl<C: Codec, F> fmt::Debug for WorkerBuilder<C, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkerBuilder")
            .field(
                "queues",
                &self
                    .queues
                    .iter()
                    .map(DelayedQueue::name)
                    .collect::<Vec<_>>(),
            )
            .field("concurrency", &self.concurrency)
            .field("retry", &self.retry)
            .field("config", &self.config)
            .field("grace", &self.grace)
            .field("abort_grace", &self.abort_grace)
            .field("settle_timeout", &self.settle_timeout)
            .field("server_check", &self.server_check)
            .field("observe", &self.observe)
            .field("on_signal", &self.on_signal)
            .field("limit_key", &self.limit_key.is_some())
            .field("priority", &self.priority)
            .finish_non_exhaustive()
    }
}

/// **Workers**: handlers run on the queue's values with acknowledgements and retries.
impl<C: Codec> DelayedQueue<C> {
    /// A worker that runs `handler` on this queue's values, at most `concurrency` at a time,
    /// with acknowledgements, heartbeats, retries ([`RetryPolicy::default`] unless set) and
    /// dead letters. Nothing runs until [`run`](WorkerBuilder::run) or
    /// [`spawn`](WorkerBuilder::spawn).
    ///
    /// `handler` returns `Ok(())` (the value is acknowledged) or an error: retried after the
    /// policy's wait, or dead-lettered after the last attempt or when it is a permanent
    /// [`JobError`]. The error type is the handler's choice ([`JobError`], `anyhow::Error`,
    /// `Box<dyn Error + Send + Sync>`; see [`HandlerError`]), so `?` works in it. A
    /// panic in the handler counts as a failed attempt. Values that do not decode with the
    /// queue's codec are dead-lettered without calling the handler, as are values delivered more
    /// times than the policy allows without an outcome (their workers kept crashing or timing
    /// out).
    pub fn worker<F, Fut, E>(&self, concurrency: usize, handler: F) -> WorkerBuilder<C, F>
    where
        F: Fn(Job<C::Value>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::result::Result<(), E>> + Send + 'static,
        E: HandlerError,
    {
        WorkerBuilder::over(vec![self.clone()], concurrency, handler)
    }
}

impl<C: Codec, F> WorkerBuilder<C, F> {
    /// A builder over `queues` with the defaults.
    fn over(queues: Vec<DelayedQueue<C>>, concurrency: usize, handler: F) -> Self {
        WorkerBuilder {
            queues,
            concurrency,
            handler,
            retry: RetryPolicy::default(),
            config: ReliableConfig::default(),
            grace: Duration::from_secs(30),
            abort_grace: Duration::from_secs(5),
            settle_timeout: Duration::from_secs(10),
            server_check: Some(Duration::from_secs(60)),
            observe: ObserveConfig::default(),
            stop: CancellationToken::new(),
            on_signal: false,
            limit_key: None,
            logical: None,
            priority: Priority::default(),
        }
    }
}

impl<C, F, Fut, E> WorkerBuilder<C, F>
where
    C: Codec,
    C::Value: 'static,
    F: Fn(Job<C::Value>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = std::result::Result<(), E>> + Send + 'static,
    E: HandlerError,
{
    /// Takes values from `queue` too: one worker, one concurrency limit, one handler for
    /// several queues of one codec. [`Job::queue`] says where a value came from.
    ///
    /// A worker on one queue waits for values on a connection of its own; a worker on several
    /// opens none: it looks at the lengths of every target list (one round trip) and serves the
    /// queues that have values by its [`priority`](Self::priority) (in turn by default, one
    /// value each), looking again at least every 100 ms so that a flooded queue does not hold
    /// up the others. The transfer schedulers of the queues'
    /// client tell it at once which queue they filled; values moved by another process are
    /// seen within its idle wait (10 ms per queue, between 100 ms and 2 s). A queue whose calls
    /// fail (a wrong-type key, a refused command) waits out its own backoff while the others
    /// are served.
    ///
    /// ```no_run
    /// # async fn ex(
    /// #     orders: delayq::DelayedQueue<delayq::codec::StringCodec>,
    /// #     refunds: delayq::DelayedQueue<delayq::codec::StringCodec>,
    /// # ) -> Result<(), delayq::Error> {
    /// let stats = orders
    ///     .worker(4, |job: delayq::Job<String>| async move {
    ///         println!("{} from {}", job.value(), job.queue());
    ///         Ok::<(), delayq::JobError>(())
    ///     })
    ///     .with_queue(&refunds)
    ///     .stop_on_signal()
    ///     .run()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    /// Default: the queue the worker was made from, alone.
    pub fn with_queue(mut self, queue: &DelayedQueue<C>) -> Self {
        self.queues.push(queue.clone());
        self
    }

    /// How a worker over several queues chooses the queue of its next value: in turn (the
    /// default), in strict order, or by weight, the queues numbered in the order given (the one
    /// the worker was made from first, then each [`with_queue`](Self::with_queue)). See
    /// [`Priority`]; `docs/many-queues.md` compares it with Asynq's and Sidekiq's.
    ///
    /// ```no_run
    /// # async fn ex(
    /// #     critical: delayq::DelayedQueue<delayq::codec::StringCodec>,
    /// #     default: delayq::DelayedQueue<delayq::codec::StringCodec>,
    /// #     low: delayq::DelayedQueue<delayq::codec::StringCodec>,
    /// # ) -> Result<(), delayq::Error> {
    /// use delayq::worker::Priority;
    ///
    /// critical
    ///     .worker(8, |job: delayq::Job<String>| async move { Ok::<(), delayq::JobError>(()) })
    ///     .with_queue(&default)
    ///     .with_queue(&low)
    ///     // 60 % of the values from `critical`, 30 % from `default`, 10 % from `low`.
    ///     .priority(Priority::weighted([6, 3, 1]))
    ///     .run()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    /// Default: [`Priority::Turns`].
    pub fn priority(mut self, priority: Priority) -> Self {
        self.priority = priority;
        self
    }

    /// The key of a value for the queues' per-key limits
    /// ([`Limits::key_concurrency`](crate::limit::Limits::key_concurrency),
    /// [`key_rate`](crate::limit::Limits::key_rate)), read from the decoded value; `None` gives
    /// the value only the queue-wide limits. Without it the stored
    /// [`KeyRule`](crate::limit::KeyRule) reads the key from the value's bytes.
    ///
    /// ```no_run
    /// # async fn ex(queue: delayq::DelayedQueue<delayq::codec::StringCodec>) -> Result<(), delayq::Error> {
    /// queue
    ///     .worker(8, |job: delayq::Job<String>| async move { Ok::<(), delayq::JobError>(()) })
    ///     .limit_key(|order: &String| order.split(':').next().map(str::to_owned))
    ///     .run()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn limit_key(
        mut self,
        key: impl Fn(&C::Value) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        self.limit_key = Some(Arc::new(key));
        self
    }

    /// The retry policy. Default: [`RetryPolicy::default`].
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.retry = policy;
        self
    }

    /// The reliable consumer's settings: the visibility timeout (how long a job may go without
    /// a heartbeat before its value is given to another consumer; heartbeats run every third of
    /// it while a job runs), the reaper, the dead-letter limit.
    /// Default: [`ReliableConfig::default`].
    pub fn reliable_config(mut self, config: ReliableConfig) -> Self {
        self.config = config;
        self
    }

    /// How long running jobs get to finish after a stop is asked for; jobs still running then
    /// are abandoned (see [`abort_grace`](Self::abort_grace)) and their values given back
    /// unprocessed. Default: 30 s. With
    /// [`stop_on_signal`](Self::stop_on_signal), a second signal ends it at once.
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }

    /// How long an abandoned job's handler is still polled after its
    /// [`abort_token`](Job::abort_token) is cancelled, to stop cleanly (end what it started,
    /// such as a child process); the handler is dropped after it, and its value is given back
    /// only then, so that another worker does not get the value while this one still works on
    /// it. Keep it well under the visibility timeout (heartbeats go on meanwhile). Zero drops
    /// the handler at once. Default: 5 s.
    pub fn abort_grace(mut self, abort_grace: Duration) -> Self {
        self.abort_grace = abort_grace;
        self
    }

    /// How often the worker reads the server's `maxmemory-policy` again (it reads it at start),
    /// to warn once when a later `CONFIG SET` makes it a policy that evicts keys; `None`: only
    /// at start. A scheduler group reads it too (see
    /// [`GroupConfig::with_server_check`](crate::GroupConfig::with_server_check)): where a
    /// worker's queues run one on the same server, one of the two checks is enough. Default:
    /// 60 s.
    pub fn server_check(mut self, every: impl Into<Option<Duration>>) -> Self {
        self.server_check = every.into();
        self
    }

    /// What the worker keeps in Redis about itself: the per-minute counts of values taken and
    /// jobs acked, retried and dead-lettered, and its registry record (both on by default;
    /// [`ObserveConfig::off`] keeps nothing).
    pub fn observe(mut self, observe: ObserveConfig) -> Self {
        self.observe = observe;
        self
    }

    /// How long the worker waits at shutdown, once no handler runs any more, for Redis to take
    /// the jobs' outcomes (acks, retries, values given back), the values its consumers hold
    /// and its last activity counts.
    /// What Redis has not taken by then stays in the queue's in-flight set, and the reaper of
    /// any consumer gives it back after its visibility deadline: nothing is lost, the worker
    /// just does not wait for an unreachable Redis. Default: 10 s.
    pub fn settle_timeout(mut self, timeout: Duration) -> Self {
        self.settle_timeout = timeout;
        self
    }

    /// Stops the worker when `token` is cancelled.
    /// Default: no token; the worker runs until its handle stops it.
    pub fn stop_on(mut self, token: CancellationToken) -> Self {
        self.stop = token;
        self
    }

    /// Stops the worker on SIGINT (Ctrl-C) or, on Unix, SIGTERM; a second one (or a first one
    /// after a stop asked for otherwise) ends the grace period at once: running jobs are
    /// abandoned and their values given back.
    /// Default: signals are not handled.
    pub fn stop_on_signal(mut self) -> Self {
        self.on_signal = true;
        self
    }

    fn validate(&self) -> Result<()> {
        if self.concurrency == 0 {
            return Err(Error::InvalidConfig(
                "worker concurrency must be at least 1".into(),
            ));
        }
        let mut names: Vec<&str> = self.queues.iter().map(DelayedQueue::name).collect();
        names.sort_unstable();
        if let Some(twice) = names.windows(2).find(|pair| pair[0] == pair[1]) {
            return Err(Error::InvalidConfig(format!(
                "the worker is given the queue {} twice",
                twice[0]
            )));
        }
        if self.server_check == Some(Duration::ZERO) {
            return Err(Error::InvalidConfig(
                "the worker's server_check must be positive (or None)".into(),
            ));
        }
        if self.logical.is_some() && self.priority != Priority::Turns {
            return Err(Error::InvalidConfig(
                "a sharded queue's worker serves its shards in turn: a priority is between \
                 queues"
                    .into(),
            ));
        }
        self.priority.validate(self.queues.len())?;
        self.retry.validate()?;
        self.observe.validate()?;
        self.config.validate()
    }

    /// Runs the worker until it is stopped (see [`stop_on`](Self::stop_on),
    /// [`stop_on_signal`](Self::stop_on_signal)), then stops taking, lets running jobs finish
    /// within the grace period, abandons the rest (each gets the
    /// [`abort_grace`](Self::abort_grace) to stop cleanly) and gives their values back, waits
    /// for Redis to settle within the [`settle_timeout`](Self::settle_timeout), and returns
    /// what it did.
    ///
    /// # Errors
    ///
    /// An invalid configuration, or no connection at start. Redis errors while running are
    /// logged and retried with backoff, never returned.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future stops taking at once; values of jobs still running are given back by
    /// their dropped receipts or, failing that, by the reaper after the visibility timeout.
    pub async fn run(self) -> Result<WorkerStats> {
        self.validate()?;
        run::run(self, Arc::new(Counters::default())).await
    }

    /// Runs the worker on a task of its own; the handle stops it.
    ///
    /// # Errors
    ///
    /// An invalid configuration.
    pub fn spawn(self) -> Result<WorkerHandle> {
        self.validate()?;
        let counters = Arc::new(Counters::default());
        let stop = self.stop.clone();
        let join = tokio::spawn(run::run(self, counters.clone()));
        Ok(WorkerHandle {
            stop,
            join: Some(join),
            counters,
        })
    }
}

/// A worker running on its own task. Dropping the handle asks the worker to stop (without
/// waiting); [`shutdown`](Self::shutdown) asks and waits.
#[derive(Debug)]
pub struct WorkerHandle {
    stop: CancellationToken,
    join: Option<JoinHandle<Result<WorkerStats>>>,
    counters: Arc<Counters>,
}

impl WorkerHandle {
    /// What the worker did so far.
    pub fn stats(&self) -> WorkerStats {
        self.counters.snapshot()
    }

    /// The token that stops the worker.
    pub fn stop_token(&self) -> &CancellationToken {
        &self.stop
    }

    /// Stops the worker gracefully and waits for it: no new values are taken, running jobs
    /// finish (or are given back after the grace period).
    ///
    /// # Errors
    ///
    /// The worker's own error (e.g. no connection at start), or [`Error::Closed`] if its task
    /// panicked.
    pub async fn shutdown(mut self) -> Result<WorkerStats> {
        self.stop.cancel();
        match self.join.take() {
            Some(join) => join.await.map_err(|_| Error::Closed)?,
            None => Ok(self.counters.snapshot()),
        }
    }
}

impl Drop for WorkerHandle {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}
