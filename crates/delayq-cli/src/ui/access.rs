//! Who may change queues. Three roles: read-only (no token: reads only), operator (the actions
//! that keep every value: replay, retry, run now, give back, pause, resume, trigger a schedule)
//! and admin (also the actions that lose values: purges, deleting a dead letter, cancelling a
//! pending entry, removing a schedule, changing or clearing a queue's limits). Each
//! writing role has its own token, sent as `Authorization: Bearer TOKEN` and compared in
//! constant time; [`NEEDS`] says which role each action needs, and `GET /api/whoami` tells the
//! page its role and that table, so that it disables what the role may not use.

use super::{failure, Shared, Ui};
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

/// What a request may do, from the token it carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Role {
    ReadOnly,
    Operator,
    Admin,
}

impl Role {
    fn name(self) -> &'static str {
        match self {
            Role::ReadOnly => "read-only",
            Role::Operator => "operator",
            Role::Admin => "admin",
        }
    }
}

/// The role each write needs, by its action's name (the last segment of its URL).
const NEEDS: &[(&str, Role)] = &[
    ("replay", Role::Operator),
    ("retry", Role::Operator),
    ("run-now", Role::Operator),
    ("give-back", Role::Operator),
    ("pause", Role::Operator),
    ("resume", Role::Operator),
    ("trigger", Role::Operator),
    ("purge-dead", Role::Admin),
    ("purge-quarantine", Role::Admin),
    ("delete", Role::Admin),
    ("cancel", Role::Admin),
    ("remove", Role::Admin),
    ("set-limits", Role::Admin),
    ("clear-limits", Role::Admin),
];

/// The role `action` needs; an action not in [`NEEDS`] needs admin (its handler then answers
/// that there is no such action).
fn needs(action: &str) -> Role {
    NEEDS
        .iter()
        .find(|(name, _)| *name == action)
        .map_or(Role::Admin, |(_, role)| *role)
}

/// The tokens of the writing roles; none: the dashboard is read-only.
pub(crate) struct Tokens {
    operator: Option<String>,
    admin: Option<String>,
}

/// A request's token that is no role's.
struct UnknownToken;

impl Tokens {
    /// The tokens of the operator and the admin; one token cannot be both.
    pub(crate) fn new(operator: Option<String>, admin: Option<String>) -> anyhow::Result<Tokens> {
        if operator.is_some() && operator == admin {
            anyhow::bail!("the operator's and the admin's tokens are the same: give each its own");
        }
        Ok(Tokens { operator, admin })
    }

    /// Whether any role may write.
    pub(crate) fn writes(&self) -> bool {
        self.operator.is_some() || self.admin.is_some()
    }

    /// The roles that have a token, for the start-up line.
    pub(crate) fn roles(&self) -> Vec<&'static str> {
        let operator = self.operator.as_ref().map(|_| Role::Operator.name());
        let admin = self.admin.as_ref().map(|_| Role::Admin.name());
        operator.into_iter().chain(admin).collect()
    }

    /// The role of the Bearer token in `headers`: read-only without one (an empty one, or
    /// another scheme, is none).
    fn role(&self, headers: &HeaderMap) -> Result<Role, UnknownToken> {
        let given = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or("");
        if given.is_empty() {
            return Ok(Role::ReadOnly);
        }
        // Both compared every time: how long the answer takes says nothing of which matched.
        let admin = same(given, self.admin.as_deref());
        let operator = same(given, self.operator.as_deref());
        match (admin, operator) {
            (true, _) => Ok(Role::Admin),
            (false, true) => Ok(Role::Operator),
            (false, false) => Err(UnknownToken),
        }
    }
}

/// Whether `given` is `token`, compared in time that depends on their lengths only.
fn same(given: &str, token: Option<&str>) -> bool {
    let Some(token) = token else {
        return false;
    };
    given.len() == token.len()
        && given
            .bytes()
            .zip(token.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

/// Why `action` is refused to the request with `headers`: the dashboard is read-only (403), no
/// valid token (401), or the token's role is below the one the action needs (403, naming it).
pub(super) fn refusal(ui: &Ui, headers: &HeaderMap, action: &str) -> Option<Response> {
    if !ui.access.writes() {
        return Some(failure(
            StatusCode::FORBIDDEN,
            "read-only: start delayq ui with --operator-token-file, --admin-token-file or \
             --allow-writes to change queues",
        ));
    }
    let needed = needs(action);
    let (status, message) = match ui.access.role(headers) {
        Ok(role) if role >= needed => return None,
        Err(UnknownToken) | Ok(Role::ReadOnly) => (
            StatusCode::UNAUTHORIZED,
            format!(
                "a valid token is needed: {action} needs the {} role",
                needed.name()
            ),
        ),
        Ok(role) => (
            StatusCode::FORBIDDEN,
            format!(
                "{action} needs the {} role; this token's role is {}",
                needed.name(),
                role.name()
            ),
        ),
    };
    tracing::info!(action, status = status.as_u16(), "dashboard write refused");
    Some(failure(status, message))
}

/// `GET /api/whoami`: the role of the request's token, and the role each action needs.
pub(super) async fn whoami(State(ui): State<Shared>, headers: HeaderMap) -> Response {
    let needs: serde_json::Map<String, serde_json::Value> = NEEDS
        .iter()
        .map(|(action, role)| ((*action).to_owned(), role.name().into()))
        .collect();
    match ui.access.role(&headers) {
        Ok(role) => Json(json!({
            "role": role.name(),
            "writes": ui.access.writes(),
            "needs": needs,
        }))
        .into_response(),
        Err(UnknownToken) => failure(StatusCode::UNAUTHORIZED, "this token is no role's"),
    }
}
