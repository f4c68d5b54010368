//! The query parameters of the dashboard's pages.

use super::failure;
use axum::http::StatusCode;
use axum::response::Response;
use std::collections::HashMap;

/// The whole numbers `params[key]` for each `(key, default)` of `wanted` (the default when
/// absent); a 400 naming the first that is not a number from 0 to `i64::MAX` (Redis's ranges
/// are signed: a larger one would wrap into a position counted from the end).
pub(super) fn numbers<const N: usize>(
    params: &HashMap<String, String>,
    wanted: [(&str, usize); N],
) -> Result<[usize; N], Box<Response>> {
    let mut out = [0; N];
    for (slot, (key, default)) in out.iter_mut().zip(wanted) {
        *slot = match params.get(key) {
            None => default,
            Some(text) => text
                .parse::<usize>()
                .ok()
                .filter(|n| i64::try_from(*n).is_ok())
                .ok_or_else(|| {
                    Box::new(failure(
                        StatusCode::BAD_REQUEST,
                        format!("{key}={text:?}: not a whole number from 0 to {}", i64::MAX),
                    ))
                })?,
        };
    }
    Ok(out)
}
