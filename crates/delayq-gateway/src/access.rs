//! Who may call what. Every request needs `Authorization: Bearer TOKEN` (or, as QStash
//! accepts, `?qstash_token=TOKEN`, taken out of the query before the route sees it) with a
//! token of one of the [`Role`]s (401 otherwise); [`needs`] says which roles each route admits, and a token of
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
use axum::http::{header, HeaderMap, Method, StatusCode, Uri};
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

/// The role of the token in `headers` (`Authorization: Bearer TOKEN`), and its fingerprint;
/// none without a known token.
pub(crate) fn role_of(shared: &Shared, headers: &HeaderMap) -> Option<Caller> {
    caller_of_token(shared, bearer(headers).unwrap_or(""))
}

/// The token of `Authorization: Bearer TOKEN`, if the header is there.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
}

/// The name of the query parameter QStash accepts the token in, where a client cannot set
/// the header.
const QUERY_TOKEN: &str = "qstash_token";

/// `query` without its `qstash_token` parameters (the others kept byte for byte, in order),
/// and the values of those (percent-decoded; a value that does not decode as given).
fn split_query_token(query: &str) -> (String, Vec<String>) {
    let mut kept: Vec<&str> = Vec::new();
    let mut tokens = Vec::new();
    for pair in query.split('&') {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        if form_decode(name).as_deref() == Some(QUERY_TOKEN) {
            // A value that does not decode is kept as given: it then matches no token.
            tokens.push(form_decode(value).unwrap_or_else(|| value.to_owned()));
        } else {
            kept.push(pair);
        }
    }
    (kept.join("&"), tokens)
}

/// `text` decoded as a form's query component (`%XX`, `+` for a space); none when it is not
/// UTF-8 or has a bad escape.
fn form_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).ok()
}

/// `uri` with `query` as its query (none when empty).
fn with_query(uri: &Uri, query: &str) -> Option<Uri> {
    let path = uri.path();
    let path_and_query = match query.is_empty() {
        true => path.to_owned(),
        false => format!("{path}?{query}"),
    };
    let mut parts = uri.clone().into_parts();
    parts.path_and_query = Some(path_and_query.parse().ok()?);
    Uri::from_parts(parts).ok()
}

/// The caller whose token is `given`, compared with every token of every role.
fn caller_of_token(shared: &Shared, given: &str) -> Option<Caller> {
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
    // QStash's `?qstash_token=TOKEN`, for clients that cannot set the header: taken out of
    // the query before any route reads it (a publish's destination keeps its query, which
    // must not carry the token on), and never logged.
    let mut query_tokens = Vec::new();
    if let Some(query) = request.uri().query() {
        let (kept, tokens) = split_query_token(query);
        if !tokens.is_empty() {
            let Some(uri) = with_query(request.uri(), &kept) else {
                return ApiError::bad_request("a malformed query").into_response();
            };
            *request.uri_mut() = uri;
            query_tokens = tokens;
        }
    }
    if query_tokens.len() > 1 {
        return ApiError::bad_request("qstash_token given more than once").into_response();
    }
    // The header wins when both are given.
    let given = match bearer(request.headers()) {
        Some(token) => token.to_owned(),
        None => query_tokens.pop().unwrap_or_default(),
    };
    let Some(caller) = caller_of_token(&shared, &given) else {
        return ApiError::new(
            StatusCode::UNAUTHORIZED,
            "a valid token is needed (Authorization: Bearer TOKEN, or ?qstash_token=TOKEN)",
        )
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
    fn the_query_token_is_taken_out_and_the_rest_kept_as_given() {
        let (kept, tokens) = split_query_token("a=1&qstash_token=t%2Bk+n&b=%2F&qstash%5Ftoken=u");
        assert_eq!(kept, "a=1&b=%2F");
        assert_eq!(tokens, ["t+k n", "u"]);
        let (kept, tokens) = split_query_token("qstash_tokens=x&x=qstash_token");
        assert_eq!(
            (kept.as_str(), tokens.len()),
            ("qstash_tokens=x&x=qstash_token", 0)
        );
        assert_eq!(form_decode("%zz"), None);
        assert_eq!(form_decode("%f"), None);
        let uri: Uri = "/v2/publish/http://h/x?y=1&qstash_token=t".parse().unwrap();
        assert_eq!(
            with_query(&uri, "y=1").unwrap(),
            "/v2/publish/http://h/x?y=1"
        );
        assert_eq!(with_query(&uri, "").unwrap(), "/v2/publish/http://h/x");
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
