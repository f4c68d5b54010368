//! The worker: a reliable consumer with bounded concurrency, heartbeats, retries, dead letters
//! and graceful shutdown, for the common case.
//!
//! ```no_run
//! # async fn ex(queue: delayq::DelayedQueue<delayq::codec::StringCodec>) -> Result<(), delayq::Error> {
//! use delayq::{JobError, RetryPolicy};
//! use std::time::Duration;
//!
//! let stats = queue
//!     .worker(8, |job: delayq::Job<String>| async move {
//!         if job.value().is_empty() {
//!             return Err(JobError::permanent("empty order id"));
//!         }
//!         // ... cancel the order; `?` turns any std error into a retryable failure ...
//!         Ok(())
//!     })
//!     .retry(RetryPolicy::exponential(5, Duration::from_secs(1), Duration::from_secs(60)))
//!     .stop_on_signal()
//!     .run()
//!     .await?;
//! println!("acked {}", stats.acked);
//! # Ok(()) }
//! ```

use crate::codec::Codec;
use crate::queue::DelayedQueue;
use crate::reliable::{Delivery, ReliableConfig};
use crate::retry::RetryPolicy;
use crate::{Error, Result};
use bytes::Bytes;
use futures::FutureExt;
use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// One value handed to a worker's handler.
#[derive(Debug)]
pub struct Job<V> {
    value: V,
    attempt: u32,
    id: String,
    raw: Bytes,
    abort: CancellationToken,
}

impl<V> Job<V> {
    /// The value.
    pub fn value(&self) -> &V {
        &self.value
    }

    /// Takes the value out.
    pub fn into_value(self) -> V {
        self.value
    }

    /// Which delivery of this value this is (1 for the first).
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// The delivery id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The value's bytes.
    pub fn raw(&self) -> &Bytes {
        &self.raw
    }

    /// Cancelled when the worker's shutdown grace period is over and this job is about to be
    /// abandoned (its value is then given back unprocessed): a long job can stop cleanly.
    pub fn abort_token(&self) -> &CancellationToken {
        &self.abort
    }
}

/// Why a job failed: retried by the worker's [`RetryPolicy`], unless permanent.
///
/// Any `std::error::Error` converts into a retryable `JobError` (so `?` works in handlers).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobError {
    message: String,
    permanent: bool,
    retry_after: Option<Duration>,
}

impl JobError {
    /// A retryable failure.
    pub fn new(message: impl Into<String>) -> Self {
        JobError {
            message: message.into(),
            permanent: false,
            retry_after: None,
        }
    }

    /// A failure that no retry will fix: the value goes to the dead letters at once.
    pub fn permanent(message: impl Into<String>) -> Self {
        JobError {
            permanent: true,
            ..JobError::new(message)
        }
    }

    /// Retry after `delay` instead of the policy's wait (the attempt limit still applies).
    #[must_use]
    pub fn with_retry_after(mut self, delay: Duration) -> Self {
        self.retry_after = Some(delay);
        self
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// True for a permanent failure.
    pub fn is_permanent(&self) -> bool {
        self.permanent
    }
}

impl fmt::Display for JobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl<E: std::error::Error + Send + Sync + 'static> From<E> for JobError {
    fn from(err: E) -> Self {
        let mut message = err.to_string();
        let mut source = err.source();
        while let Some(cause) = source {
            let text = cause.to_string();
            if !message.contains(&text) {
                message.push_str(": ");
                message.push_str(&text);
            }
            source = cause.source();
        }
        JobError::new(message)
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
        }
    }

    fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// Builds and runs a worker; made by [`DelayedQueue::worker`].
#[must_use]
pub struct WorkerBuilder<C: Codec, F> {
    queue: DelayedQueue<C>,
    concurrency: usize,
    handler: F,
    retry: RetryPolicy,
    config: ReliableConfig,
    grace: Duration,
    stop: CancellationToken,
    on_signal: bool,
}

impl<C: Codec, F> fmt::Debug for WorkerBuilder<C, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkerBuilder")
            .field("queue", &self.queue.name())
            .field("concurrency", &self.concurrency)
            .field("retry", &self.retry)
            .field("config", &self.config)
            .field("grace", &self.grace)
            .field("on_signal", &self.on_signal)
            .finish_non_exhaustive()
    }
}

impl<C: Codec> DelayedQueue<C> {
    /// A worker that runs `handler` on this queue's values, at most `concurrency` at a time,
    /// with acknowledgements, heartbeats, retries ([`RetryPolicy::default`] unless set) and
    /// dead letters. Nothing runs until [`run`](WorkerBuilder::run) or
    /// [`spawn`](WorkerBuilder::spawn).
    ///
    /// `handler` returns `Ok(())` (the value is acknowledged), or a [`JobError`] (retried after
    /// the policy's wait, or dead-lettered after the last attempt or when permanent). A panic in
    /// the handler counts as a failed attempt. Values that do not decode with the queue's codec
    /// are dead-lettered without calling the handler, as are values delivered more times than
    /// the policy allows without an outcome (their workers kept crashing or timing out).
    pub fn worker<F, Fut>(&self, concurrency: usize, handler: F) -> WorkerBuilder<C, F>
    where
        F: Fn(Job<C::Value>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::result::Result<(), JobError>> + Send + 'static,
    {
        WorkerBuilder {
            queue: self.clone(),
            concurrency,
            handler,
            retry: RetryPolicy::default(),
            config: ReliableConfig::default(),
            grace: Duration::from_secs(30),
            stop: CancellationToken::new(),
            on_signal: false,
        }
    }
}

impl<C, F, Fut> WorkerBuilder<C, F>
where
    C: Codec,
    C::Value: 'static,
    F: Fn(Job<C::Value>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = std::result::Result<(), JobError>> + Send + 'static,
{
    /// The retry policy.
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.retry = policy;
        self
    }

    /// The reliable consumer's settings (visibility timeout, reaper, dead-letter limit).
    pub fn reliable_config(mut self, config: ReliableConfig) -> Self {
        self.config = config;
        self
    }

    /// The visibility timeout: how long a job may go without a heartbeat before its value is
    /// given to another consumer. Heartbeats run every third of it while a job runs.
    pub fn visibility(mut self, visibility: Duration) -> Self {
        self.config.visibility = visibility;
        self
    }

    /// How long running jobs get to finish after a stop is asked for; jobs still running then
    /// are abandoned and their values given back unprocessed. Default: 30 s.
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }

    /// Stops the worker when `token` is cancelled.
    pub fn stop_on(mut self, token: CancellationToken) -> Self {
        self.stop = token;
        self
    }

    /// Stops the worker on SIGINT (Ctrl-C) or, on Unix, SIGTERM.
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
        self.retry.validate()?;
        self.config.validate()
    }

    /// Runs the worker until it is stopped (see [`stop_on`](Self::stop_on),
    /// [`stop_on_signal`](Self::stop_on_signal)), then stops taking, lets running jobs finish
    /// within the grace period, gives back the rest, and returns what it did.
    ///
    /// # Errors
    ///
    /// An invalid configuration, or no connection at start. Redis errors while running are
    /// logged and retried with backoff, never returned.
    pub async fn run(self) -> Result<WorkerStats> {
        let counters = Arc::new(Counters::default());
        self.run_with(counters).await
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
        let join = tokio::spawn(self.run_with(counters.clone()));
        Ok(WorkerHandle {
            stop,
            join: Some(join),
            counters,
        })
    }

    async fn run_with(self, counters: Arc<Counters>) -> Result<WorkerStats> {
        self.validate()?;
        let consumer = self
            .queue
            .reliable_consumer_with(self.config.clone())
            .await?;
        let stop = self.stop.clone();
        let signals = if self.on_signal {
            Some(stop_on_signal(stop.clone())?)
        } else {
            None
        };
        let abort = CancellationToken::new();
        let tracker = TaskTracker::new();
        let permits = Arc::new(Semaphore::new(self.concurrency));
        let handler = Arc::new(self.handler);
        let retry = Arc::new(self.retry);
        let name = self.queue.name().to_owned();
        tracing::info!(queue = %name, concurrency = self.concurrency, "worker started");

        let mut backoff = Duration::from_millis(100);
        loop {
            let permit = tokio::select! {
                biased;
                _ = stop.cancelled() => break,
                permit = permits.clone().acquire_owned() => match permit {
                    Ok(permit) => permit,
                    Err(_) => break,
                },
            };
            let delivery = match consumer.take_or_stop(&stop).await {
                Ok(Some(delivery)) => delivery,
                Ok(None) => break,
                Err(err) => {
                    Counters::bump(&counters.errors);
                    tracing::warn!(queue = %name, error = %err, retry_in_ms = backoff.as_millis() as u64, "take failed; retrying");
                    tokio::select! {
                        _ = stop.cancelled() => break,
                        _ = tokio::time::sleep(backoff) => {}
                    }
                    backoff = (backoff * 2).min(Duration::from_secs(5));
                    continue;
                }
            };
            backoff = Duration::from_millis(100);
            Counters::bump(&counters.taken);
            let job = run_job(
                delivery,
                handler.clone(),
                retry.clone(),
                self.config.visibility,
                abort.clone(),
                counters.clone(),
            );
            tracker.spawn(async move {
                job.await;
                drop(permit);
            });
        }

        // Stop taking; let running jobs finish within the grace period; abandon the rest.
        tracker.close();
        tracing::info!(queue = %name, running = tracker.len(), "worker stopping");
        if tokio::time::timeout(self.grace, tracker.wait())
            .await
            .is_err()
        {
            tracing::warn!(queue = %name, running = tracker.len(), "grace period over; giving back unfinished jobs");
            abort.cancel();
            tracker.wait().await;
        }
        consumer.close().await;
        if let Some(signals) = signals {
            signals.abort();
            let _ = signals.await;
        }
        let stats = counters.snapshot();
        tracing::info!(queue = %name, ?stats, "worker stopped");
        Ok(stats)
    }
}

/// Cancels `stop` on SIGINT or SIGTERM; the task is aborted and awaited when the worker ends.
fn stop_on_signal(stop: CancellationToken) -> Result<JoinHandle<()>> {
    #[cfg(unix)]
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| Error::InvalidConfig(format!("cannot listen for SIGTERM: {e}")))?;
    Ok(tokio::spawn(async move {
        #[cfg(unix)]
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
            _ = stop.cancelled() => {}
        }
        #[cfg(not(unix))]
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = stop.cancelled() => {}
        }
        stop.cancel();
    }))
}

/// How one job ended.
enum Outcome {
    Done,
    Failed(JobError),
    Abandoned,
}

async fn run_job<V, F, Fut>(
    delivery: Delivery<V>,
    handler: Arc<F>,
    retry: Arc<RetryPolicy>,
    visibility: Duration,
    abort: CancellationToken,
    counters: Arc<Counters>,
) where
    V: Send + 'static,
    F: Fn(Job<V>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = std::result::Result<(), JobError>> + Send + 'static,
{
    let (value, mut receipt) = delivery.into_parts();
    let attempt = receipt.attempt();
    let value = match value {
        Ok(value) => value,
        Err(err) => {
            let message = format!("value does not decode: {err}");
            settle_dead(receipt, &message, &counters).await;
            return;
        }
    };
    if attempt > retry.max_attempts() {
        let message = format!(
            "delivered {attempt} times, more than the {} attempts allowed, without an outcome \
             (its workers crashed or missed the visibility deadline)",
            retry.max_attempts()
        );
        settle_dead(receipt, &message, &counters).await;
        return;
    }

    let job = Job {
        value,
        attempt,
        id: receipt.id().to_owned(),
        raw: receipt.raw().clone(),
        abort: abort.clone(),
    };
    let work = AssertUnwindSafe(async move { handler(job).await }).catch_unwind();
    tokio::pin!(work);
    let heartbeat = (visibility / 3).max(Duration::from_millis(5));
    let outcome = loop {
        tokio::select! {
            biased;
            _ = abort.cancelled() => break Outcome::Abandoned,
            result = &mut work => break match result {
                Ok(Ok(())) => Outcome::Done,
                Ok(Err(err)) => Outcome::Failed(err),
                Err(panic) => Outcome::Failed(JobError::new(format!(
                    "handler panicked: {}",
                    panic_message(panic.as_ref())
                ))),
            },
            _ = tokio::time::sleep(heartbeat) => match receipt.extend(visibility).await {
                Ok(true) => {}
                Ok(false) => tracing::warn!(
                    queue_item = receipt.id(),
                    "the job outlived its visibility deadline; the value was given to another consumer"
                ),
                Err(err) => {
                    Counters::bump(&counters.errors);
                    tracing::warn!(error = %err, "heartbeat failed");
                }
            },
        }
    };

    match outcome {
        Outcome::Done => {
            let acked = receipt.ack().await;
            record(&counters, &counters.acked, acked, "ack");
        }
        Outcome::Failed(err) if err.permanent || retry.is_exhausted(attempt) => {
            tracing::warn!(attempt, error = %err, "job failed for good; dead-lettering the value");
            settle_dead(receipt, err.message(), &counters).await;
        }
        Outcome::Failed(err) => {
            let delay = err.retry_after.unwrap_or_else(|| retry.delay_for(attempt));
            tracing::info!(attempt, error = %err, retry_in_ms = delay.as_millis() as u64, "job failed; retrying");
            let retried = receipt.nack(delay).await;
            record(&counters, &counters.retried, retried, "retry");
        }
        Outcome::Abandoned => {
            let given = receipt.give_back().await;
            record(&counters, &counters.given_back, given, "give back");
        }
    }
}

async fn settle_dead(receipt: crate::reliable::Receipt, message: &str, counters: &Counters) {
    let dead = receipt.dead_letter(message).await;
    record(counters, &counters.dead, dead, "dead-letter");
}

/// Counts a settlement's result. A failed one leaves the value in flight: the reaper gives it
/// back after its deadline, so nothing is lost.
fn record(counters: &Counters, counter: &AtomicU64, result: Result<bool>, what: &str) {
    match result {
        Ok(true) => Counters::bump(counter),
        Ok(false) => {
            Counters::bump(&counters.lost);
            tracing::warn!(
                what,
                "the value was no longer ours (its visibility deadline had passed)"
            );
        }
        Err(err) => {
            Counters::bump(&counters.errors);
            tracing::warn!(what, error = %err, "settling failed; the value returns after its visibility deadline");
        }
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(text) = panic.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = panic.downcast_ref::<String>() {
        text.clone()
    } else {
        "(no message)".to_owned()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_errors_from_std_errors_keep_their_causes() {
        #[derive(Debug)]
        struct Outer(std::io::Error);
        impl fmt::Display for Outer {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("payment call failed")
            }
        }
        impl std::error::Error for Outer {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.0)
            }
        }
        let err: JobError = Outer(std::io::Error::other("connection reset")).into();
        assert_eq!(err.message(), "payment call failed: connection reset");
        assert!(!err.is_permanent());
        let permanent = JobError::permanent("no such order");
        assert!(permanent.is_permanent());
        assert_eq!(permanent.to_string(), "no such order");
        assert_eq!(
            JobError::new("x")
                .with_retry_after(Duration::from_secs(3))
                .retry_after,
            Some(Duration::from_secs(3))
        );
    }

    #[test]
    fn panic_messages() {
        assert_eq!(panic_message(&"boom"), "boom");
        assert_eq!(panic_message(&String::from("bang")), "bang");
        assert_eq!(panic_message(&42u8), "(no message)");
    }
}
