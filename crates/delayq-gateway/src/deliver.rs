//! Delivery: the worker's handler sends a due message to its destination, signed afresh for
//! every attempt. A 2xx answer delivers it; any other answer, a timeout or a refused connection
//! is a failed attempt, retried by delayq's worker after the backoff (or the destination's
//! `Retry-After`) until the message's retries are used up, when it becomes a dead letter. A
//! `489` with `Upstash-NonRetryable-Error: true` makes it a dead letter at once. Redirects are
//! not followed: a 3xx is a failed attempt.

use crate::envelope::{Answer, Envelope};
use crate::events::{event, record};
use crate::meter;
use crate::signature::sign;
use crate::Shared;
use delayq::{Job, JobError};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// The longest wait a destination's `Retry-After` may ask for.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(24 * 3600);
/// How much of a failed answer's body is kept: in the error a dead letter keeps, in the last
/// response and in the failure callback.
const ERROR_BODY_BYTES: usize = 4096;

/// What one attempt came to.
enum Outcome {
    /// The answer (its body read only for a callback).
    Delivered(Answer),
    Failed {
        /// The answer's status; 0 when there was no answer.
        status: u16,
        why: String,
        retry_after: Option<Duration>,
        final_: bool,
        /// The answer, when there was one.
        answer: Option<Answer>,
    },
}

/// What came of an attempt, for the worker.
enum Settled {
    /// Delivered, or given up (a dead letter).
    Done(Result<(), JobError>),
    /// To be tried again: after the wait asked for (none: the gateway's backoff).
    Retry {
        error: String,
        wait: Option<Duration>,
    },
}

/// The worker's handler: one attempt at the message in `job`. A QStash queue's message keeps
/// its place in the queue while it is retried: its retries run here, in the handler, holding
/// the queue's slot (QStash's FIFO through retries).
pub(crate) async fn deliver(shared: Arc<Shared>, job: Job<Vec<u8>>) -> Result<(), JobError> {
    let envelope = Envelope::decode(job.value()).map_err(|err| {
        meter::delivery(meter::Outcome::DeadLettered);
        JobError::permanent(format!("status 0: not a gateway message: {err}"))
    })?;
    if envelope.id.is_empty() {
        // A schedule's occurrence: it becomes a message of its own.
        return crate::schedules::occurrence(&shared, envelope).await;
    }
    if cancelled(&shared, &envelope.id).await? {
        return Ok(());
    }
    let mut retried = job.attempt().saturating_sub(1);
    loop {
        let started_ms = crate::now_ms();
        let started = std::time::Instant::now();
        let outcome = attempt(&shared, &envelope, retried).await;
        meter::attempt_took(started.elapsed());
        let settled = settle(&shared, &envelope, retried, outcome, started_ms).await;
        let (error, wait) = match settled {
            Settled::Done(result) => return result,
            Settled::Retry { error, wait } => (error, wait),
        };
        if envelope.queue_name.is_none() {
            let error = JobError::new(error);
            return Err(match wait {
                Some(wait) => error.with_retry_after(wait),
                None => error,
            });
        }
        let wait = wait.unwrap_or_else(|| backoff(&shared, retried));
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            // The worker stops: the message is taken again later (its count of retries
            // restarts from the worker's count of attempts).
            () = job.abort_token().cancelled() => return Err(JobError::new(error)),
        }
        if cancelled(&shared, &envelope.id).await? {
            return Ok(());
        }
        retried += 1;
    }
}

/// Whether message `id` was cancelled (its cancellation then cleared: it is dropped unsent).
async fn cancelled(shared: &Shared, id: &str) -> Result<bool, JobError> {
    match shared.store.is_cancelled(id).await {
        Ok(false) => Ok(false),
        Ok(true) => {
            tracing::debug!(message = %id, "cancelled; dropped unsent");
            meter::delivery(meter::Outcome::Cancelled);
            if let Err(err) = shared.store.clear_cancelled(id).await {
                tracing::warn!(error = %err, message = %id, "gateway: cannot clear a cancellation");
            }
            Ok(true)
        }
        Err(err) => Err(
            JobError::new(format!("status 0: cannot read the cancellations: {err}"))
                .with_retry_after(Duration::from_secs(1)),
        ),
    }
}

/// The gateway's backoff before retry `retried + 1`, as its retry policy paces it (without the
/// jitter).
fn backoff(shared: &Shared, retried: u32) -> Duration {
    let config = &shared.config;
    let factor = (2.5 * f64::from(retried)).exp();
    let secs = config.backoff_first.as_secs_f64() * factor;
    let max = config.backoff_max.max(config.backoff_first);
    Duration::try_from_secs_f64(secs).map_or(max, |wait| wait.min(max))
}

/// Callbacks, the index, the dead letter, the metrics and the events after attempt `retried`,
/// begun at `started_ms`, came to `outcome`.
async fn settle(
    shared: &Shared,
    envelope: &Envelope,
    retried: u32,
    outcome: Outcome,
    started_ms: i64,
) -> Settled {
    let mut active = event(envelope, "ACTIVE", started_ms);
    active["retried"] = retried.into();
    match outcome {
        Outcome::Delivered(answer) => {
            meter::delivery(meter::Outcome::Delivered);
            meter::delivered_late(envelope.not_before_ms);
            if let Some(callback) = &envelope.callback {
                let answer = Some(&answer);
                crate::callback::publish(shared, envelope, callback, answer, retried, None).await;
            }
            let keep = shared.config.keep_delivered;
            if let Err(err) = crate::kept::delivered(&shared.store, &envelope.id, keep).await {
                tracing::warn!(error = %err, message = %envelope.id, "gateway: cannot move a delivered message out of the index");
            }
            let mut delivered = event(envelope, "DELIVERED", crate::now_ms());
            delivered["responseStatus"] = answer.status.into();
            record(shared, &[active, delivered]).await;
            tracing::debug!(message = %envelope.id, retried, "delivered");
            Settled::Done(Ok(()))
        }
        Outcome::Failed {
            status,
            why,
            retry_after,
            final_,
            answer,
        } => {
            let error = format!("status {status}: {why}");
            tracing::info!(message = %envelope.id, retried, status, "delivery failed");
            let now_ms = crate::now_ms();
            let mut failed = event(envelope, "ERROR", now_ms);
            failed["error"] = error.clone().into();
            failed["responseStatus"] = status.into();
            failed["responseBody"] = why.into();
            if final_ || retried >= envelope.retries {
                meter::delivery(meter::Outcome::DeadLettered);
                given_up(shared, envelope, answer.as_ref(), retried).await;
                let gone = event(envelope, "FAILED", now_ms);
                record(shared, &[active, failed, gone]).await;
                return Settled::Done(Err(JobError::permanent(error)));
            }
            // The destination's Retry-After, else the message's own expression, else the
            // gateway's backoff.
            let wait = retry_after.or_else(|| {
                let expr = envelope.retry_delay.as_deref()?;
                let ms = crate::retry_delay::wait_ms(expr, retried);
                Some(Duration::from_millis(ms).min(MAX_RETRY_AFTER))
            });
            meter::delivery(meter::Outcome::Retried);
            let mut again = event(envelope, "RETRY", now_ms);
            if let Some(wait) = wait {
                let wait_ms = i64::try_from(wait.as_millis()).unwrap_or(i64::MAX);
                again["nextDeliveryTime"] = now_ms.saturating_add(wait_ms).into();
            }
            record(shared, &[active, failed, again]).await;
            Settled::Retry { error, wait }
        }
    }
}

/// A message about to become a dead letter: its last answer kept for the DLQ, its failure
/// callback published (`dlqId` is the message id), its record removed.
async fn given_up(shared: &Shared, envelope: &Envelope, answer: Option<&Answer>, retried: u32) {
    if let Some(answer) = answer {
        if let Err(err) = shared.store.put_response(&envelope.id, answer).await {
            tracing::warn!(error = %err, message = %envelope.id, "gateway: cannot keep the last response");
        }
    }
    if let Some(callback) = &envelope.failure_callback {
        let dlq_id = Some(envelope.id.as_str());
        crate::callback::publish(shared, envelope, callback, answer, retried, dlq_id).await;
    }
    forget(shared, &envelope.id).await;
}

/// Removes the message from the index: it is delivered or given up.
async fn forget(shared: &Shared, id: &str) {
    if let Err(err) = shared.store.remove(id).await {
        tracing::warn!(error = %err, message = %id, "gateway: cannot remove a finished message from the index");
    }
}

/// The attempt's request: the message's method, forwarded headers and body, and the headers the
/// gateway adds (its ids, `Upstash-Signature` made now, the Standard Webhooks signature when
/// asked for).
async fn signed_request(
    shared: &Shared,
    envelope: &Envelope,
    retried: u32,
    method: reqwest::Method,
    timeout: Duration,
) -> reqwest::RequestBuilder {
    let mut request = shared.http.request(method, &envelope.url).timeout(timeout);
    for (name, value) in &envelope.headers {
        // The gateway's own Standard Webhooks headers replace any a publisher forwarded.
        let ours = ["webhook-id", "webhook-timestamp", "webhook-signature"];
        if shared.webhooks.is_some() && ours.iter().any(|h| name.eq_ignore_ascii_case(h)) {
            continue;
        }
        request = request.header(name, value);
    }
    if let Some(schedule) = &envelope.schedule_id {
        request = request.header("Upstash-Schedule-Id", schedule);
    }
    let signature = sign(
        &shared.keys.current().await,
        &envelope.url,
        &envelope.body,
        now_secs(),
    );
    if let Some(webhooks) = &shared.webhooks {
        for (name, value) in webhooks.headers(&envelope.id, now_secs(), &envelope.body) {
            request = request.header(name, value);
        }
    }
    request
        .header("User-Agent", "Upstash-QStash")
        .header("Upstash-Message-Id", &envelope.id)
        .header("Upstash-Retried", retried.to_string())
        .header("Upstash-Signature", signature)
        .body(envelope.body.clone())
}

async fn attempt(shared: &Shared, envelope: &Envelope, retried: u32) -> Outcome {
    let failed = |status, why: String| Outcome::Failed {
        status,
        why,
        retry_after: None,
        final_: false,
        answer: None,
    };
    let Ok(method) = reqwest::Method::from_bytes(envelope.method.as_bytes()) else {
        return Outcome::Failed {
            status: 0,
            why: format!("bad method {:?}", envelope.method),
            retry_after: None,
            final_: true,
            answer: None,
        };
    };
    let config = &shared.config;
    let timeout = envelope
        .timeout_ms
        .map(Duration::from_millis)
        .map_or(config.request_timeout, |t| t.min(config.request_timeout));
    let request = signed_request(shared, envelope, retried, method, timeout).await;
    let response = match request.send().await {
        Ok(response) => response,
        Err(err) if err.is_timeout() => return failed(0, format!("timed out after {timeout:?}")),
        Err(err) => return failed(0, format!("no answer: {}", chain(&err))),
    };
    let status = response.status();
    let headers = text_headers(response.headers());
    if status.is_success() {
        // The body is read for the callback only (up to the gateway's body limit).
        let limit = envelope.callback.as_ref().map_or(0, |_| config.body_limit);
        return Outcome::Delivered(Answer {
            status: status.as_u16(),
            headers,
            body: read_bounded(response, limit).await,
        });
    }
    let header = |name: &str| {
        let value = response.headers().get(name)?.to_str().ok()?;
        Some(value.trim().to_owned())
    };
    let non_retryable = status.as_u16() == 489
        && header("upstash-nonretryable-error").is_some_and(|v| v.eq_ignore_ascii_case("true"));
    let retry_after = RETRY_AFTER
        .iter()
        .find_map(|name| header(name).and_then(|v| retry_after(&v, SystemTime::now())))
        .map(|wait| wait.min(MAX_RETRY_AFTER));
    let body = read_bounded(response, ERROR_BODY_BYTES).await;
    Outcome::Failed {
        status: status.as_u16(),
        why: String::from_utf8_lossy(&body).into_owned(),
        retry_after,
        final_: non_retryable,
        answer: Some(Answer {
            status: status.as_u16(),
            headers,
            body,
        }),
    }
}

/// The headers whose values are text.
fn text_headers(headers: &reqwest::header::HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .filter_map(|(k, v)| Some((k.as_str().to_owned(), v.to_str().ok()?.to_owned())))
        .collect()
}

/// The first `limit` bytes of the answer's body (what could be read of them).
async fn read_bounded(mut response: reqwest::Response, limit: usize) -> Vec<u8> {
    let mut body = Vec::new();
    while body.len() < limit {
        match response.chunk().await {
            Ok(Some(chunk)) => body.extend_from_slice(&chunk),
            _ => break,
        }
    }
    body.truncate(limit);
    body
}

/// The headers a destination may name its next attempt's time with, in the order they are read.
const RETRY_AFTER: &[&str] = &[
    "retry-after",
    "x-ratelimit-reset",
    "x-ratelimit-reset-requests",
    "x-ratelimit-reset-tokens",
];

/// A wait a destination asked for: seconds (`120`), an HTTP date, or a Go duration (`6m5s`,
/// `1.5s`, `300ms`).
fn retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    if let Ok(at) = httpdate::parse_http_date(value) {
        return Some(at.duration_since(now).unwrap_or(Duration::ZERO));
    }
    go_duration(value)
}

/// A Go `time.Duration` string: numbers (decimals allowed) each with a unit of `ns`, `us`,
/// `µs`, `ms`, `s`, `m` or `h`.
fn go_duration(text: &str) -> Option<Duration> {
    let mut rest = text;
    let mut total = 0f64;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let (unit, seconds) = [
            ("ns", 1e-9),
            ("us", 1e-6),
            ("µs", 1e-6),
            ("ms", 1e-3),
            ("s", 1.0),
            ("m", 60.0),
            ("h", 3600.0),
        ]
        .into_iter()
        .find(|(unit, _)| rest.starts_with(unit))?;
        rest = &rest[unit.len()..];
        total += number * seconds;
    }
    match text.is_empty() || !total.is_finite() {
        true => None,
        false => Duration::try_from_secs_f64(total).ok(),
    }
}

/// An error and its causes, for the log and the dead letter.
fn chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The HTTP status a dead letter's error starts with (`status 500: BODY`), 0 when none, and
/// what follows it (the answer's body, or why there was no answer).
pub(crate) fn status_of(error: &str) -> (u16, &str) {
    let parsed = error
        .strip_prefix("status ")
        .and_then(|rest| rest.split_once(": "))
        .and_then(|(code, rest)| Some((code.parse().ok()?, rest)));
    parsed.unwrap_or((0, error))
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_forms() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let at = |text| retry_after(text, now);
        assert_eq!(at("120"), Some(Duration::from_secs(120)));
        assert_eq!(at("6m5s"), Some(Duration::from_secs(365)));
        assert_eq!(at("1.5s"), Some(Duration::from_millis(1500)));
        assert_eq!(at("300ms"), Some(Duration::from_millis(300)));
        assert_eq!(at("1h"), Some(Duration::from_secs(3600)));
        let date = httpdate::fmt_http_date(now + Duration::from_secs(90));
        assert_eq!(at(&date), Some(Duration::from_secs(90)));
        let past = httpdate::fmt_http_date(now - Duration::from_secs(90));
        assert_eq!(at(&past), Some(Duration::ZERO));
        for bad in ["", "soon", "5x", "m", "-1s"] {
            assert_eq!(at(bad), None, "{bad}");
        }
    }

    #[test]
    fn status_of_error() {
        assert_eq!(status_of("status 500: boom"), (500, "boom"));
        assert_eq!(status_of("status 0: timed out"), (0, "timed out"));
        assert_eq!(status_of("panicked"), (0, "panicked"));
    }
}
