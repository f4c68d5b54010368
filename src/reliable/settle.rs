//! The settle calls of one reliable consumer's deliveries: ack, nack (or give back), dead
//! letter, extend.

use super::config::ReliableConfig;
use super::dead;
use crate::durable::{Durability, DurableWrites};
use crate::redis::ops::{ack, dead as dead_op, extend, limit_ack, limit_extend, limit_lease, nack};
use crate::redis::script::QueueSpec;
use crate::retry::{Backoff, Retrying};
use crate::telemetry::{messaging_span, Operation};
use crate::time::{now_ms, Delay};
use crate::Result;
use fred::clients::Client;
use std::time::Duration;
use tokio::sync::mpsc;
use tracing::Instrument;

/// What settling a delivery needs, shared by a consumer and its deliveries.
#[derive(Debug)]
pub(super) struct SettleCtx {
    pub(super) client: Client,
    pub(super) queue: QueueSpec,
    pub(super) config: ReliableConfig,
    /// Where dead letters are written, and what they wait for: the queue handle's durability.
    pub(super) durable: DurableWrites,
    pub(super) durability: Durability,
    /// Ids of deliveries dropped unsettled, for the consumer to give back.
    pub(super) returns: mpsc::UnboundedSender<String>,
}

impl SettleCtx {
    /// The work on delivery `id` is done; the slots it holds for the limit key `slots` (if
    /// any) are released in the same call.
    pub(super) async fn ack(&self, id: &str, slots: Option<&str>) -> Result<bool> {
        settle_call(resend_on_drop("ack", || async move {
            match slots {
                Some(key) => limit_ack::run(&self.client, &self.queue, id, key).await,
                None => ack::run(&self.client, &self.queue, id).await,
            }
        }))
        .instrument(self.span("ack"))
        .await
    }

    /// Releases the slots delivery `id` holds for the limit key `slots`, if any (it settled
    /// otherwise than by an ack). A failure is logged: they free at their lease's end.
    pub(super) async fn release(&self, id: &str, slots: Option<&str>) {
        let Some(key) = slots else {
            return;
        };
        let released = limit_lease::run(&self.client, &self.queue, id, key, None);
        match tokio::time::timeout(RELEASE_TIMEOUT, released).await {
            Ok(Ok(_)) => {}
            Ok(Err(err)) => {
                tracing::warn!(error = %err, "limits: releasing a slot failed; it frees at its lease's end")
            }
            Err(_) => {
                tracing::warn!("limits: releasing a slot timed out; it frees at its lease's end")
            }
        }
    }

    /// Gives delivery `id` back: after `delay`, or at once; `unprocessed` uncounts the attempt
    /// and puts the value at the head of the target list.
    pub(super) async fn nack(&self, id: &str, delay: Duration, unprocessed: bool) -> Result<bool> {
        let delay = Delay::checked(delay)?;
        settle_call(resend_on_drop("nack", || {
            nack::run(&self.client, &self.queue, id, delay, unprocessed)
        }))
        .instrument(self.span(if unprocessed { "give_back" } else { "nack" }))
        .await
    }

    /// Dead-letters delivery `id` after `attempts` with `error`, confirmed as the queue's
    /// durability asks when it moved.
    pub(super) async fn dead(&self, id: &str, attempts: u32, error: &str) -> Result<bool> {
        let header = dead::header(attempts, now_ms(), error);
        let limit = self.config.dead_letter_limit();
        let writer = self.durable.writer(self.durability).await?;
        let (done, trimmed) = settle_call(resend_on_drop("dead letter", || {
            dead_op::run(writer.client(), &self.queue, id, header.clone(), limit)
        }))
        .instrument(self.span("dead_letter"))
        .await?;
        if done {
            writer.confirm(self.queue.keys.target()).await?;
        }
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

    /// The span of one settle call (`operation`: ack, nack, give_back, dead_letter).
    fn span(&self, operation: &'static str) -> tracing::Span {
        messaging_span!(
            tracing::Level::DEBUG,
            "settle",
            Operation::Settle,
            operation,
            self.queue.keys.target()
        )
    }

    /// Pushes delivery `id`'s deadline, and the leases of the slots it holds for the limit key
    /// `slots` (if any), to `visibility` from now.
    pub(super) async fn extend(
        &self,
        id: &str,
        visibility: Duration,
        slots: Option<&str>,
    ) -> Result<Option<i64>> {
        let visibility = Delay::span(visibility)?;
        match slots {
            Some(key) => limit_extend::run(&self.client, &self.queue, id, key, visibility).await,
            None => extend::run(&self.client, &self.queue, id, visibility).await,
        }
    }
}

/// The longest a slot's release is waited for (it frees at its lease's end anyway).
const RELEASE_TIMEOUT: Duration = Duration::from_secs(5);

/// How often a settle call is sent again after its connection dropped, and the first wait.
const RESENDS: u32 = 4;
const FIRST_RESEND_WAIT: Duration = Duration::from_millis(100);
const LAST_RESEND_WAIT: Duration = Duration::from_millis(800);

/// A settle call's future, boxed: a caller's own future then holds a pointer instead of the
/// whole chain of script calls and resends, which otherwise nests deeper than rustc's default
/// recursion limit once the caller's code awaits a consumer's take and a settle in one body.
fn settle_call<'a, T>(
    call: impl std::future::Future<Output = Result<T>> + Send + 'a,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<T>> + Send + 'a>> {
    Box::pin(call)
}

/// Runs a settle call, sending it again (after 100, 200, 400, 800 ms) while it fails because
/// the connection dropped: the call may or may not have run, and settling twice is safe (the
/// second run finds the first one in `delayq_settled:{NAME}` and reports its success), so the
/// caller gets the real outcome instead of an error that leaves it unknown.
async fn resend_on_drop<T, F, Fut>(what: &'static str, mut call: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T>>,
{
    let mut retrying = Retrying::new(Backoff::doubling(FIRST_RESEND_WAIT, LAST_RESEND_WAIT));
    loop {
        match call().await {
            Err(err) if err.is_connection_error() && retrying.failures() < RESENDS => {
                let wait = retrying.failed();
                tracing::debug!(call = what, error = %err, retry_in_ms = wait.as_millis() as u64, "connection dropped while settling; sending again");
                tokio::time::sleep(wait).await;
            }
            other => return other,
        }
    }
}
