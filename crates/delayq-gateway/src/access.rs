//! Who may call what. Every request needs `Authorization: Bearer TOKEN` with a token of one of
//! the [`Role`]s (401 otherwise); [`needs`] says which roles each route admits, and a token of
//! another role is answered 403 before the route runs (nothing is read or stored). Tokens are
//! compared in constant time, every token of every role on every request, so how long the
//! answer takes says nothing of which one matched.
//!
//! - `publish`: publish, batch, enqueue, and `GET /v2/messages/{id}` of the messages published
//!   with the same token (another's is answered 404, as if it did not exist).
//! - `native`: the native queues (`/v1/queues/...`).
//! - `admin`: everything (messages of every publisher, cancel, the DLQ, the native queues).
//!
//! A route no rule names needs `admin`: a new route is closed until it is put in [`needs`].

use crate::error::ApiError;
use crate::Shared;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use std::sync::Arc;

/// What a token may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// Publish (publish, batch, enqueue) and read its own messages.
    Publish,
    /// Offer into, cancel in and read the native queues.
    Native,
    /// Everything.
    Admin,
}

impl Role {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Role::Publish => "publish",
            Role::Native => "native",
            Role::Admin => "admin",
        }
    }
}

/// Who called: the role of the token, and a fingerprint of the token that names the messages it
/// published (never the token itself). Put into the request's extensions for the handlers.
#[derive(Debug, Clone)]
pub(crate) struct Caller {
    pub(crate) role: Role,
    pub(crate) owner: String,
}

impl Caller {
    /// The owner to record in a message this caller publishes: none for an admin's.
    pub(crate) fn owner_tag(&self) -> Option<String> {
        (self.role != Role::Admin).then(|| self.owner.clone())
    }

    /// Whether this caller may see a message published by `owner`.
    pub(crate) fn may_see(&self, owner: Option<&str>) -> bool {
        self.role == Role::Admin || owner == Some(self.owner.as_str())
    }
}

/// The caller of `request`, if the access layer let it through (a router without the layer,
/// as in a program's own tests, is an admin's).
pub(crate) fn caller_of(extensions: &axum::http::Extensions) -> Caller {
    extensions.get::<Caller>().cloned().unwrap_or(Caller {
        role: Role::Admin,
        owner: String::new(),
    })
}

/// The roles `method path` admits (the path as the router sees it, after any prefix it is
/// nested under); admin always.
pub(crate) fn needs(method: &Method, path: &str) -> &'static [Role] {
    const PUBLISH: &[Role] = &[Role::Publish, Role::Admin];
    const NATIVE: &[Role] = &[Role::Native, Role::Admin];
    const ADMIN: &[Role] = &[Role::Admin];
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match (method, segments.as_slice()) {
        (&Method::POST, ["v2", "publish", _, ..]) => PUBLISH,
        (&Method::POST, ["v2", "enqueue", _, _, ..]) => PUBLISH,
        (&Method::POST, ["v2", "batch"]) => PUBLISH,
        (&Method::GET, ["v2", "messages", id]) if !id.is_empty() => PUBLISH,
        (_, ["v1", "queues", _, ..]) => NATIVE,
        _ => ADMIN,
    }
}

/// The role of the token in `headers`, and its fingerprint; none without a known token.
pub(crate) fn role_of(shared: &Shared, headers: &HeaderMap) -> Option<Caller> {
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    let config = &shared.config;
    // Every token of every role compared, each in time that depends only on the lengths.
    let mut found = None;
    for (role, tokens) in [
        (Role::Admin, &config.tokens),
        (Role::Publish, &config.publish_tokens),
        (Role::Native, &config.native_tokens),
    ] {
        let matched = tokens
            .iter()
            .fold(false, |found, token| found | same(given, token));
        if matched && found.is_none() {
            found = Some(role);
        }
    }
    let role = found.filter(|_| !given.is_empty())?;
    Some(Caller {
        role,
        owner: fingerprint(given),
    })
}

/// A name for the messages a token published: 16 hex digits of a SHA-256 of it.
fn fingerprint(token: &str) -> String {
    let digest = Sha256::digest(format!("delayq-gateway-owner:{token}"));
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether `given` is `token`, in time that depends on their lengths only.
pub(crate) fn same(given: &str, token: &str) -> bool {
    given.len() == token.len()
        && given
            .bytes()
            .zip(token.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

/// The layer before every route: 401 without a known token, 403 for a token whose role the
/// route does not admit; else the route, with the [`Caller`] in the request's extensions.
pub(crate) async fn authorize(
    State(shared): State<Arc<Shared>>,
    mut request: Request,
    next: Next,
) -> Response {
    let Some(caller) = role_of(&shared, request.headers()) else {
        return ApiError::new(StatusCode::UNAUTHORIZED, "a valid bearer token is needed")
            .into_response();
    };
    let admitted = needs(request.method(), request.uri().path());
    if !admitted.contains(&caller.role) {
        let names: Vec<&str> = admitted.iter().map(|r| r.name()).collect();
        let message = format!(
            "{} {} needs the {} role; this token's role is {}",
            request.method(),
            request.uri().path(),
            names.join(" or "),
            caller.role.name()
        );
        return ApiError::new(StatusCode::FORBIDDEN, message).into_response();
    }
    request.extensions_mut().insert(caller);
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_and_their_roles() {
        let publish = [
            (Method::POST, "/v2/publish/http://h/x"),
            (Method::POST, "/v2/enqueue/q/http://h/x"),
            (Method::POST, "/v2/batch"),
            (Method::GET, "/v2/messages/msg_1"),
        ];
        for (method, path) in publish {
            assert!(needs(&method, path).contains(&Role::Publish), "{path}");
        }
        let admin_only = [
            (Method::DELETE, "/v2/messages/msg_1"),
            (Method::DELETE, "/v2/messages"),
            (Method::GET, "/v2/messages"),
            (Method::GET, "/v2/dlq"),
            (Method::POST, "/v2/dlq/retry/x"),
            (Method::GET, "/v2/keys"),
            (Method::POST, "/v2/keys/rotate"),
            (Method::GET, "/v2/publish/http://h/x"),
            (Method::POST, "/v2/batch/x"),
            (Method::POST, "/v2/enqueue/q"),
            (Method::GET, "/metrics"),
        ];
        for (method, path) in admin_only {
            assert_eq!(needs(&method, path), &[Role::Admin], "{method} {path}");
        }
        assert_eq!(
            needs(&Method::POST, "/v1/queues/orders/offer"),
            &[Role::Native, Role::Admin]
        );
    }

    #[test]
    fn fingerprints_differ_and_hide_the_token() {
        let a = fingerprint("token-aaaaaaaaaaaaaaaa");
        assert_eq!(a.len(), 16);
        assert_ne!(a, fingerprint("token-aaaaaaaaaaaaaaab"));
        assert!(!a.contains("token"));
        assert!(same("abc", "abc") && !same("abc", "abd") && !same("ab", "abc"));
    }
}
