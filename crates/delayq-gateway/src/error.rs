//! The gateway's errors: [`Error`] for a program that builds one, [`ApiError`] for an HTTP
//! client (`{"error": "..."}` with a 4xx or 5xx status, as QStash answers).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;

/// Why a gateway could not be built or started.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The queue behind the gateway: a Redis error, or a configuration the queue refuses.
    #[error(transparent)]
    Queue(#[from] delayq::Error),
    /// A setting that cannot work (no token, an empty allow-list, a bad destination prefix).
    #[error("invalid gateway configuration: {0}")]
    InvalidConfig(String),
    /// The HTTP client of the deliveries could not be built.
    #[error("cannot build the delivery HTTP client")]
    Client(#[source] reqwest::Error),
}

/// `Result` with the gateway's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An answer that is an error: its status and its message, sent as `{"error": message}`.
#[derive(Debug)]
pub(crate) struct ApiError {
    status: StatusCode,
    message: String,
}

impl ApiError {
    pub(crate) fn new(status: StatusCode, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            message: message.into(),
        }
    }

    pub(crate) fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, message)
    }

    pub(crate) fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, message)
    }

    pub(crate) fn is_not_found(&self) -> bool {
        self.status == StatusCode::NOT_FOUND
    }

    /// The same error, its message prefixed by where it happened.
    pub(crate) fn within(self, place: &str) -> ApiError {
        ApiError {
            status: self.status,
            message: format!("{place}: {}", self.message),
        }
    }

    /// A failure of Redis or of the queue: logged with its cause, answered without it (it may
    /// name keys or servers).
    pub(crate) fn internal(what: &str, err: &dyn std::fmt::Display) -> ApiError {
        tracing::warn!(error = %err, "gateway: {what} failed");
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("{what} failed; nothing was stored (see the gateway's log)"),
        )
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = Json(serde_json::json!({ "error": self.message }));
        (self.status, body).into_response()
    }
}
