//! Who may change queues: a write needs `--allow-writes` and the token, compared in constant
//! time.

use super::{failure, Ui};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;

/// Why a write is refused: read-only, or `headers` lack the token (compared in constant time).
pub(super) fn refusal(ui: &Ui, headers: &HeaderMap) -> Option<Response> {
    let Some(token) = &ui.token else {
        return Some(failure(
            StatusCode::FORBIDDEN,
            "read-only: start delayq ui with --allow-writes to change queues",
        ));
    };
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    let same = given.len() == token.len()
        && given
            .bytes()
            .zip(token.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0;
    match same {
        true => None,
        false => Some(failure(StatusCode::UNAUTHORIZED, "a valid token is needed")),
    }
}
