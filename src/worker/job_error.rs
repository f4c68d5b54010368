//! Why a job failed: [`JobError`], and the handler error types that carry one.

use crate::BoxError;
use std::fmt;
use std::time::Duration;

/// Why a job failed: retried by the worker's [`RetryPolicy`](crate::RetryPolicy), unless permanent.
///
/// Any `std::error::Error` converts into a retryable `JobError`, so `?` works in a handler that
/// returns `Result<(), JobError>`. A handler may return `anyhow::Error` (feature `anyhow`, on by
/// default) or `Box<dyn Error + Send + Sync>` instead (see [`HandlerError`]); a `JobError`
/// converted into either (`JobError::permanent("..").into()`, or `?`) keeps its kind.
///
/// What a failed job's dead letter records ([`DeadLetter::error`](crate::reliable::DeadLetter))
/// is the message: for a converted error, its text and each of its causes' (`source()`), and
/// the contexts an `anyhow::Error` added around a `JobError`, outermost first, joined by `: `.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobError {
    message: String,
    pub(super) permanent: bool,
    pub(super) retry_after: Option<Duration>,
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
    /// Default: the retry policy's wait.
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
        JobError::new(message_chain(&err))
    }
}

/// A [`JobError`] inside another error type (a box, an `anyhow::Error`), found again by
/// downcasting. (`JobError` itself is no `std::error::Error`, so that any error converts into
/// it.)
#[derive(Debug)]
struct Boxed(JobError);

impl fmt::Display for Boxed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for Boxed {}

impl From<JobError> for BoxError {
    fn from(err: JobError) -> Self {
        Box::new(Boxed(err))
    }
}

#[cfg(feature = "anyhow")]
#[cfg_attr(docsrs, doc(cfg(feature = "anyhow")))]
impl From<JobError> for anyhow::Error {
    fn from(err: JobError) -> Self {
        anyhow::Error::new(Boxed(err))
    }
}

/// An error a worker's handler may return: [`JobError`], `Box<dyn Error + Send + Sync>`, or
/// `anyhow::Error` (feature `anyhow`). A `JobError` keeps its kind (permanent, its own retry
/// wait) through the other two; any other error is a retryable failure whose message is the
/// error and its causes.
pub trait HandlerError: Send + 'static {
    /// The failure as the worker settles it.
    fn into_job_error(self) -> JobError;
}

impl HandlerError for JobError {
    fn into_job_error(self) -> JobError {
        self
    }
}

impl HandlerError for BoxError {
    fn into_job_error(self) -> JobError {
        match self.downcast::<Boxed>() {
            Ok(boxed) => boxed.0,
            Err(other) => JobError::new(message_chain(&*other)),
        }
    }
}

/// A `JobError` with the context an `anyhow::Error` added around it (`.context("..")`) in
/// front of its message: its kind is the `JobError`'s, its message the whole chain.
#[cfg(feature = "anyhow")]
#[cfg_attr(docsrs, doc(cfg(feature = "anyhow")))]
impl HandlerError for anyhow::Error {
    fn into_job_error(self) -> JobError {
        let message = message_chain(self.as_ref());
        match self.downcast_ref::<Boxed>() {
            Some(boxed) => JobError {
                message,
                ..boxed.0.clone()
            },
            None => JobError::new(message),
        }
    }
}

/// An error's text and its causes', leaving out a cause its parent's text already includes.
fn message_chain(err: &(dyn std::error::Error + 'static)) -> String {
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
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A handler's error with a cause.
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

    #[test]
    fn handler_errors_keep_their_causes_and_job_errors_their_kind() {
        let outer = || Outer(std::io::Error::other("connection reset"));
        let err: JobError = outer().into();
        assert_eq!(err.message(), "payment call failed: connection reset");
        assert!(!err.is_permanent());
        let boxed: BoxError = Box::new(outer());
        assert_eq!(boxed.into_job_error(), err);

        let permanent: BoxError = JobError::permanent("no such order").into();
        let permanent = permanent.into_job_error();
        assert!(permanent.is_permanent());
        assert_eq!(permanent.to_string(), "no such order");
    }

    #[cfg(feature = "anyhow")]
    #[test]
    fn anyhow_errors_keep_job_errors_and_causes() {
        let outer = || Outer(std::io::Error::other("connection reset"));
        let later = JobError::new("later").with_retry_after(Duration::from_secs(3));
        let through_anyhow = anyhow::Error::from(later.clone()).context("calling the bank");
        let kept = through_anyhow.into_job_error();
        assert_eq!(kept.message(), "calling the bank: later");
        assert_eq!(
            kept,
            JobError::new("calling the bank: later").with_retry_after(Duration::from_secs(3))
        );
        let permanent = anyhow::Error::from(JobError::permanent("no such order"))
            .context("loading order 7")
            .context("cancelling order 7")
            .into_job_error();
        assert!(permanent.is_permanent());
        assert_eq!(
            permanent.message(),
            "cancelling order 7: loading order 7: no such order"
        );
        let bare = anyhow::Error::from(later.clone()).into_job_error();
        assert_eq!(bare, later);
        let plain = anyhow::Error::from(outer()).context("cancelling order 7");
        assert_eq!(
            plain.into_job_error().message(),
            "cancelling order 7: payment call failed: connection reset"
        );
    }
}
