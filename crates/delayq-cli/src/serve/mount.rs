//! `--base-path`: every route of a listener (the dashboard's page, assets and API, `/metrics`,
//! `/healthz`) under one path, so that a reverse proxy can forward `/delayq/` to it as is. The
//! path itself redirects to the path with a slash (the page asks for its assets by relative
//! URLs, which resolve against it); anything outside answers 404.

use axum::extract::Request;
use axum::http::uri::PathAndQuery;
use axum::http::{header, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use std::sync::Arc;
use tower::ServiceExt;

/// A base path as given to `--base-path`: starts with `/`, segments of letters, digits and
/// `-._~` (no `.` or `..` segment, no query, no `%`); kept without its trailing slash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BasePath(Arc<str>);

/// Parses `--base-path` (clap's value parser).
pub(crate) fn parse_base_path(text: &str) -> Result<BasePath, String> {
    let Some(rest) = text.strip_prefix('/') else {
        return Err(format!("{text:?} must start with /, e.g. /delayq"));
    };
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    if rest.is_empty() {
        return Err(
            "/ is where the dashboard is without --base-path; give a path like /delayq".to_owned(),
        );
    }
    for segment in rest.split('/') {
        let allowed = |c: char| c.is_ascii_alphanumeric() || "-._~".contains(c);
        if segment.is_empty() || segment == "." || segment == ".." {
            return Err(format!("{text:?} has an empty, . or .. segment"));
        }
        if !segment.chars().all(allowed) {
            return Err(format!(
                "{text:?}: a segment may hold letters, digits and -._~ only (no query, no %)"
            ));
        }
    }
    Ok(BasePath(format!("/{rest}").into()))
}

impl BasePath {
    /// The path, without a trailing slash, e.g. `/delayq`.
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }

    /// `router` served under this path.
    pub(crate) fn mount(&self, router: Router) -> Router {
        let base = self.clone();
        Router::new().fallback(move |request: Request| {
            let (base, router) = (base.clone(), router.clone());
            async move { base.route(router, request).await }
        })
    }

    async fn route(&self, router: Router, request: Request) -> Response {
        let base = self.as_str();
        let path = request.uri().path();
        if path == base {
            let query = request.uri().query().map(|q| format!("?{q}"));
            let location = format!("{base}/{}", query.unwrap_or_default());
            return (
                StatusCode::PERMANENT_REDIRECT,
                [(header::LOCATION, location)],
            )
                .into_response();
        }
        let Some(rest) = path.strip_prefix(base).filter(|rest| rest.starts_with('/')) else {
            let message = format!("not found: everything here is under {base}/");
            let body = axum::Json(serde_json::json!({ "error": message }));
            return (StatusCode::NOT_FOUND, body).into_response();
        };
        let inner = match request.uri().query() {
            Some(query) => format!("{rest}?{query}"),
            None => rest.to_owned(),
        };
        let Ok(inner) = inner.parse::<PathAndQuery>() else {
            return StatusCode::BAD_REQUEST.into_response();
        };
        let (mut parts, body) = request.into_parts();
        let mut uri = parts.uri.into_parts();
        uri.path_and_query = Some(inner);
        parts.uri = match Uri::from_parts(uri) {
            Ok(uri) => uri,
            Err(_) => return StatusCode::BAD_REQUEST.into_response(),
        };
        match router.oneshot(Request::from_parts(parts, body)).await {
            Ok(response) => response,
            Err(never) => match never {},
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_base_path_is_a_plain_absolute_path() {
        let parsed = |text: &str| parse_base_path(text).map(|b| b.as_str().to_owned());
        assert_eq!(parsed("/delayq").unwrap(), "/delayq");
        assert_eq!(parsed("/ops/delayq/").unwrap(), "/ops/delayq");
        assert_eq!(parsed("/a-b_c.d~e").unwrap(), "/a-b_c.d~e");
        for bad in [
            "", "delayq", "/", "//", "/a//b", "/..", "/a/../b", "/./a", "/a?b=1", "/a#x", "/a%2e",
            "/a b", "/ä",
        ] {
            assert!(parsed(bad).is_err(), "{bad:?} was taken");
        }
    }
}
