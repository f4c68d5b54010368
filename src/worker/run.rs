//! Running a worker: the take loop, and one job's life.

use super::gate::{Gates, Slot};
use super::next::next_job;
use super::reserve::{Reservation, Reserver};
use super::sources::Sources;
use super::taker::Taker;
use super::tally::{self, JobTally};
use super::{Counters, HandlerError, Job, JobError, WorkerBuilder, WorkerStats};
use crate::codec::Codec;
use crate::metrics::Settled;
use crate::queue::DelayedQueue;
use crate::redis::server::ServerCheck;
use crate::reliable::{Delivery, Receipt};
use crate::retry::RetryPolicy;
use crate::telemetry::{messaging_span, Operation};
use crate::{Error, Result};
use futures::FutureExt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::task_tracker::TaskTrackerToken;
use tokio_util::task::TaskTracker;

/// Takes values while there are permits, runs each job on the tracker, and at a stop lets the
/// running jobs finish within the grace period before giving the rest back.
pub(super) async fn run<C, F, Fut, E>(
    builder: WorkerBuilder<C, F>,
    counters: Arc<Counters>,
) -> Result<WorkerStats>
where
    C: Codec,
    C::Value: 'static,
    F: Fn(Job<C::Value>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = std::result::Result<(), E>> + Send + 'static,
    E: HandlerError,
{
    let mut sources = Sources::open(&builder.queues, &builder.config, &builder.priority).await?;
    let stop = builder.stop.clone();
    let abort = CancellationToken::new();
    let signals = (builder.on_signal)
        .then(|| stop_on_signal(stop.clone(), abort.clone()))
        .transpose()?;
    let job = JobCtx {
        handler: Arc::new(builder.handler),
        retry: Arc::new(builder.retry),
        visibility: builder.config.visibility(),
        abort,
        abort_grace: builder.abort_grace,
        give_up: CancellationToken::new(),
        handling: TaskTracker::new(),
        counters: counters.clone(),
    };
    let tracker = TaskTracker::new();
    let permits = Arc::new(Semaphore::new(builder.concurrency));
    let names: Vec<&str> = builder.queues.iter().map(DelayedQueue::name).collect();
    let client = builder.queues[0].client();
    let (observer, tallies) = tally::start(client, builder.observe, &names, &counters);
    let name = names.join(",");
    let server_check = check_server(builder.queues[0].client(), builder.server_check, &name).await;
    tracing::info!(queue = %name, concurrency = builder.concurrency, "worker started");

    let mut gates = Gates::new(&builder.queues, builder.limit_key.clone(), job.visibility);
    let mut taker = Taker::new(&mut sources, &stop, &counters, &name);
    let mut reserver = builder
        .logical
        .clone()
        .map(|logical| Reserver::new(logical, job.visibility));
    loop {
        let Some((permit, reservation)) = next_turn(&stop, &permits, reserver.as_mut()).await
        else {
            break;
        };
        let Some((queue, delivery, slot)) = next_job(&mut gates, &mut taker, &permits).await else {
            break;
        };
        let job = job.clone();
        // Every queue a worker takes from has its tally (made from the same names).
        let metrics = tallies[&*queue].clone();
        let span = job_span(&queue, &delivery);
        // Counted as running from the take, so that a stop cannot miss a job about to start.
        let handling = job.handling.token();
        tracker.spawn(tracing::Instrument::instrument(
            async move {
                job.run(queue, delivery, metrics, handling).await;
                drop(reservation);
                drop(permit);
                Slot::settled(slot);
            },
            span,
        ));
    }

    gates.drop_ready();
    let deadline = wind_down(&name, &tracker, &job, builder.grace, builder.settle_timeout).await;
    close_sources(&name, &builder.queues, sources, deadline).await;
    stop_companions(signals, server_check).await;
    observer.shutdown_by(Some(deadline)).await;
    let stats = counters.snapshot();
    tracing::info!(queue = %name, ?stats, "worker stopped");
    Ok(stats)
}

/// A permit for the next job, then, under a sharded queue's own limits, its reservation (held
/// until the job settles); `None` when the worker stops first.
async fn next_turn<C: Codec>(
    stop: &CancellationToken,
    permits: &Arc<Semaphore>,
    reserver: Option<&mut Reserver<C>>,
) -> Option<(tokio::sync::OwnedSemaphorePermit, Option<Reservation>)> {
    let permit = tokio::select! {
        biased;
        _ = stop.cancelled() => return None,
        permit = permits.clone().acquire_owned() => permit.ok()?,
    };
    let reservation = match reserver {
        Some(reserver) => reserver.reserve(stop).await?,
        None => None,
    };
    Some((permit, reservation))
}

/// The span of one job, its handler and its settlement.
fn job_span<V>(queue: &str, delivery: &Delivery<V>) -> tracing::Span {
    messaging_span!(
        tracing::Level::INFO,
        "job",
        Operation::Process,
        "process",
        queue,
        id = delivery.id(),
        attempt = delivery.attempt()
    )
}

/// Reads the server's eviction policy, warning when it evicts keys, and again every `every`.
async fn check_server(
    client: &fred::clients::Client,
    every: Option<Duration>,
    name: &str,
) -> Option<ServerCheck> {
    let eviction = crate::redis::server::warn_if_evicting(client, "worker", name).await;
    every.map(|every| ServerCheck::spawn(client.clone(), every, eviction, "worker", name.into()))
}

/// Stops the tasks that ran beside the worker: the signal listener, the server check.
async fn stop_companions(signals: Option<JoinHandle<()>>, server_check: Option<ServerCheck>) {
    if let Some(signals) = signals {
        signals.abort();
        let _ = signals.await;
    }
    if let Some(check) = server_check {
        check.shutdown().await;
    }
}

/// Gives back the values the worker's consumers hold, waiting for Redis until `deadline`.
async fn close_sources<C: Codec>(
    name: &str,
    queues: &[DelayedQueue<C>],
    sources: Sources<C>,
    deadline: tokio::time::Instant,
) {
    if tokio::time::timeout_at(deadline, sources.close())
        .await
        .is_ok()
    {
        return;
    }
    let inflight: Vec<&str> = queues.iter().map(|q| q.keys().inflight()).collect();
    tracing::warn!(
        queue = %name,
        inflight = %inflight.join(","),
        "Redis did not take back the values the worker's consumers hold in time; they stay \
         in the in-flight set and the reaper gives them back after their visibility deadline"
    );
}

/// Stops taking; lets running handlers finish within `grace` (or until `job.abort` is
/// cancelled early, by a second signal); then abandons the rest, which gives their values back
/// unprocessed; then waits up to `settle_timeout` for Redis to take the outcomes, and gives up
/// the ones it has not taken. Returns the deadline for the rest of the shutdown.
async fn wind_down<F>(
    name: &str,
    tracker: &TaskTracker,
    job: &JobCtx<F>,
    grace: Duration,
    settle_timeout: Duration,
) -> tokio::time::Instant {
    tracker.close();
    job.handling.close();
    let running = job.handling.len();
    if running > 0 {
        tracing::info!(queue = %name, running, grace_s = grace.as_secs_f64(), "worker stopping; waiting for running jobs (a second signal ends the wait)");
    } else {
        tracing::info!(queue = %name, "worker stopping");
    }
    tokio::select! {
        biased;
        _ = job.abort.cancelled() => {
            tracing::warn!(queue = %name, running = job.handling.len(), "grace period ended early; giving back unfinished jobs");
        }
        _ = job.handling.wait() => {}
        _ = tokio::time::sleep(grace) => {
            tracing::warn!(queue = %name, running = job.handling.len(), "grace period over; giving back unfinished jobs");
        }
    }
    job.abort.cancel();
    wait_for_abandoned(name, job).await;
    let deadline = tokio::time::Instant::now() + settle_timeout;
    // Settling takes a round trip or two; say what the worker waits for only when it lasts.
    let quick = tokio::time::Instant::now() + Duration::from_millis(100);
    if tokio::time::timeout_at(quick, tracker.wait()).await.is_ok() {
        return deadline;
    }
    tracing::info!(
        queue = %name,
        values = tracker.len(),
        up_to_s = settle_timeout.as_secs_f64(),
        "waiting for Redis to settle the in-flight values of finished or abandoned jobs"
    );
    if tokio::time::timeout_at(deadline, tracker.wait())
        .await
        .is_err()
    {
        tracing::warn!(
            queue = %name,
            values = tracker.len(),
            "Redis did not settle them in time; they stay in the in-flight set and the reaper \
             gives them back after their visibility deadline"
        );
        job.give_up.cancel();
        tracker.wait().await;
    }
    deadline
}

/// Waits while abandoned handlers stop (each within its abort grace), saying so when it lasts:
/// their values are given back only once they have.
async fn wait_for_abandoned<F>(name: &str, job: &JobCtx<F>) {
    let quick = tokio::time::Instant::now() + Duration::from_millis(100);
    if tokio::time::timeout_at(quick, job.handling.wait())
        .await
        .is_ok()
    {
        return;
    }
    tracing::info!(
        queue = %name,
        jobs = job.handling.len(),
        up_to_s = job.abort_grace.as_secs_f64(),
        "waiting for abandoned jobs to stop before giving their values back"
    );
    job.handling.wait().await;
}

/// Cancels `stop` on SIGINT or SIGTERM, and `abort` (the end of the grace period) on the next
/// one; the task is aborted and awaited when the worker ends.
fn stop_on_signal(stop: CancellationToken, abort: CancellationToken) -> Result<JoinHandle<()>> {
    // Streams made once: a signal between the first and the second wait is not missed.
    #[cfg(unix)]
    let mut signal = {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate()).map_err(Error::Signal)?;
        let mut int = signal(SignalKind::interrupt()).map_err(Error::Signal)?;
        async move || {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
        }
    };
    #[cfg(not(unix))]
    let signal = async || {
        let _ = tokio::signal::ctrl_c().await;
    };
    Ok(tokio::spawn(async move {
        tokio::select! {
            () = signal() => {}
            () = stop.cancelled() => {}
        }
        stop.cancel();
        signal().await;
        tracing::warn!("second stop signal; ending the grace period now");
        abort.cancel();
    }))
}

/// A delivery whose value goes to the dead letters without running: its receipt, and why (boxed:
/// the receipt is large, and this is the rare way).
type Unrunnable = Box<(Receipt, String)>;

/// How one job ended.
enum Outcome {
    Done,
    Failed(JobError),
    Abandoned,
}

/// What every job of one worker shares.
struct JobCtx<F> {
    handler: Arc<F>,
    retry: Arc<RetryPolicy>,
    visibility: Duration,
    /// Cancelled when the grace period is over: running jobs are abandoned.
    abort: CancellationToken,
    /// How long an abandoned handler is still polled, to stop cleanly.
    abort_grace: Duration,
    /// Cancelled when the worker stops waiting for Redis to settle: settlements still waiting
    /// are dropped (their values stay in flight for the reaper).
    give_up: CancellationToken,
    /// One token per job whose handler runs (not yet settling).
    handling: TaskTracker,
    counters: Arc<Counters>,
}

impl<F> Clone for JobCtx<F> {
    fn clone(&self) -> Self {
        JobCtx {
            handler: self.handler.clone(),
            retry: self.retry.clone(),
            visibility: self.visibility,
            abort: self.abort.clone(),
            abort_grace: self.abort_grace,
            give_up: self.give_up.clone(),
            handling: self.handling.clone(),
            counters: self.counters.clone(),
        }
    }
}

impl<F> JobCtx<F> {
    /// One job: check it may run, run the handler with heartbeats, settle the outcome.
    async fn run<V, Fut, E>(
        &self,
        queue: Arc<str>,
        delivery: Delivery<V>,
        m: JobTally,
        handling: TaskTrackerToken,
    ) where
        V: Send + 'static,
        F: Fn(Job<V>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::result::Result<(), E>> + Send + 'static,
        E: HandlerError,
    {
        m.started(delivery.attempt());
        let (job, mut receipt) = match self.prepare(queue, delivery) {
            Ok(ready) => ready,
            Err(refused) => {
                let (receipt, message) = *refused;
                drop(handling);
                self.settle_dead(receipt, &message, &m).await;
                return m.finished();
            }
        };
        let attempt = receipt.attempt();
        let started = std::time::Instant::now();
        let outcome = self.run_with_heartbeat(job, &mut receipt).await;
        drop(handling);
        if !matches!(outcome, Outcome::Abandoned) {
            let failed = matches!(outcome, Outcome::Failed(_));
            m.handled(started.elapsed().as_secs_f64(), failed);
        }
        self.settle(receipt, attempt, outcome, &m).await;
        m.finished();
    }

    /// The job for a delivery, or why its value goes to the dead letters without running: it
    /// does not decode, or it was delivered more often than the policy allows.
    fn prepare<V>(
        &self,
        queue: Arc<str>,
        delivery: Delivery<V>,
    ) -> std::result::Result<(Job<V>, Receipt), Unrunnable> {
        let (value, receipt) = delivery.into_parts();
        let attempt = receipt.attempt();
        let value = match value {
            Ok(value) => value,
            Err(err) => return Err(Box::new((receipt, format!("value does not decode: {err}")))),
        };
        if attempt > self.retry.max_attempts() {
            let message = format!(
                "delivered {attempt} times, more than the {} attempts allowed, without an outcome \
                 (its workers crashed or missed the visibility deadline)",
                self.retry.max_attempts()
            );
            return Err(Box::new((receipt, message)));
        }
        let job = Job {
            value,
            attempt,
            id: receipt.id().to_owned(),
            raw: receipt.raw().clone(),
            queue,
            admitted_ms: receipt.admitted_ms(),
            abort: self.abort.clone(),
        };
        Ok((job, receipt))
    }

    /// Runs the handler, pushing the deadline back every third of the visibility timeout,
    /// until it ends or the grace period is over; an abandoned handler is still polled (with
    /// heartbeats) for the abort grace, so it can see its abort token and stop cleanly before
    /// its value is given back.
    async fn run_with_heartbeat<V, Fut, E>(&self, job: Job<V>, receipt: &mut Receipt) -> Outcome
    where
        V: Send + 'static,
        F: Fn(Job<V>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::result::Result<(), E>> + Send + 'static,
        E: HandlerError,
    {
        let handler = self.handler.clone();
        let work =
            AssertUnwindSafe(
                async move { handler(job).await.map_err(HandlerError::into_job_error) },
            )
            .catch_unwind();
        tokio::pin!(work);
        let abandoned = self.abort.cancelled();
        if let Some(result) = self.with_heartbeat(&mut work, receipt, abandoned).await {
            return match result {
                Ok(Ok(())) => Outcome::Done,
                Ok(Err(err)) => Outcome::Failed(err),
                Err(panic) => Outcome::Failed(JobError::new(format!(
                    "handler panicked: {}",
                    panic_message(panic.as_ref())
                ))),
            };
        }
        let cut_off = tokio::time::sleep(self.abort_grace);
        let abort_grace_ms = self.abort_grace.as_millis() as u64;
        match self.with_heartbeat(&mut work, receipt, cut_off).await {
            Some(_) => tracing::debug!("abandoned job stopped; giving its value back"),
            None => tracing::warn!(
                abort_grace_ms,
                "abandoned job did not stop within the abort grace; dropped, giving its value back"
            ),
        }
        Outcome::Abandoned
    }

    /// Polls `work` until it ends (its output) or `until` does (`None`), pushing the deadline
    /// back every third of the visibility timeout meanwhile.
    async fn with_heartbeat<T>(
        &self,
        work: &mut (impl Future<Output = T> + Unpin),
        receipt: &mut Receipt,
        until: impl Future<Output = ()>,
    ) -> Option<T> {
        tokio::pin!(until);
        let heartbeat = (self.visibility / 3).max(Duration::from_millis(5));
        loop {
            tokio::select! {
                biased;
                () = &mut until => return None,
                output = &mut *work => return Some(output),
                _ = tokio::time::sleep(heartbeat) => {
                    // An unreachable Redis must not hold up the end of the grace period.
                    let extended = tokio::select! {
                        biased;
                        () = &mut until => return None,
                        extended = receipt.extend(self.visibility) => extended,
                    };
                    match extended {
                        Ok(true) => {}
                        Ok(false) => tracing::warn!(
                            "the job outlived its visibility deadline; the value was given to another consumer"
                        ),
                        Err(err) => {
                            Counters::bump(&self.counters.errors);
                            tracing::warn!(error = %err, "heartbeat failed");
                        }
                    }
                }
            }
        }
    }

    /// Acks, retries, dead-letters or gives back, as the outcome says.
    async fn settle(&self, receipt: Receipt, attempt: u32, outcome: Outcome, m: &JobTally) {
        match outcome {
            Outcome::Done => {
                let acked = self.unless_given_up(receipt.ack()).await;
                m.settlement(Some(Settled::Acked), acked);
            }
            Outcome::Failed(err) if err.permanent || self.retry.is_exhausted(attempt) => {
                tracing::warn!(error = %err, "job failed for good; dead-lettering the value");
                self.settle_dead(receipt, err.message(), m).await;
            }
            Outcome::Failed(err) => {
                let delay = err
                    .retry_after
                    .unwrap_or_else(|| self.retry.delay_for(attempt));
                tracing::info!(error = %err, retry_in_ms = delay.as_millis() as u64, "job failed; retrying");
                let retried = self.unless_given_up(receipt.nack(delay)).await;
                m.settlement(Some(Settled::Retried), retried);
            }
            Outcome::Abandoned => {
                let given = self.unless_given_up(receipt.give_back()).await;
                m.settlement(None, given);
            }
        }
    }

    /// A settlement, or [`Error::Closed`] once the worker gave up waiting for Redis.
    async fn unless_given_up(&self, settle: impl Future<Output = Result<bool>>) -> Result<bool> {
        tokio::select! {
            settled = settle => settled,
            _ = self.give_up.cancelled() => Err(Error::Closed),
        }
    }

    async fn settle_dead(&self, receipt: Receipt, message: &str, m: &JobTally) {
        let dead = self.unless_given_up(receipt.dead_letter(message)).await;
        m.settlement(Some(Settled::Dead), dead);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panic_messages() {
        assert_eq!(panic_message(&"boom"), "boom");
        assert_eq!(panic_message(&String::from("bang")), "bang");
        assert_eq!(panic_message(&42u8), "(no message)");
    }
}
