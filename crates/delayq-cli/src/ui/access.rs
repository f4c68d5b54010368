//! Who may read and change queues. Roles: read-only (no token: reads only), reader (the
//! `--read-token-file` token: reads only, and with it every read needs a token), operator (the actions
//! that keep every value: replay, retry, run now, give back, pause, resume, trigger a schedule)
//! and admin (also the actions that lose values: purges, deleting a dead letter, cancelling a
//! pending entry, removing a schedule, changing or clearing a queue's limits). Each
//! writing role has its own token, sent as `Authorization: Bearer TOKEN` and compared in
//! constant time; [`NEEDS`] says which role each action needs, and `GET /api/whoami` tells the
//! page its role and that table, so that it disables what the role may not use.
//!
//! A browser sends the token of a proxy's login (deploy/nginx) with any request any page makes,
//! so a write must also show that this dashboard's own page sent it ([`forgery`]): the header
//! `X-Delayq-Write: 1` (a form cannot send one, and another site's script may not without a
//! CORS answer, which this server never gives), no `Sec-Fetch-Site` of another site, and an
//! `Origin`, when there is one, of this dashboard itself.

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
    Reader,
    Operator,
    Admin,
}

impl Role {
    fn name(self) -> &'static str {
        match self {
            Role::ReadOnly => "read-only",
            Role::Reader => "reader",
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

/// The tokens of the roles; no writing role's: the dashboard is read-only. With the reader's,
/// every read needs a role's token too.
pub(crate) struct Tokens {
    reader: Option<String>,
    operator: Option<String>,
    admin: Option<String>,
}

/// A request's token that is no role's.
struct UnknownToken;

impl Tokens {
    /// The tokens of the reader, the operator and the admin; one token cannot be two roles'.
    pub(crate) fn new(
        reader: Option<String>,
        operator: Option<String>,
        admin: Option<String>,
    ) -> anyhow::Result<Tokens> {
        let roles = [
            ("reader", &reader),
            ("operator", &operator),
            ("admin", &admin),
        ];
        for (i, (one, token)) in roles.iter().enumerate() {
            for (other, same) in &roles[i + 1..] {
                if token.is_some() && token == same {
                    anyhow::bail!(
                        "the {one}'s and the {other}'s tokens are the same: give each its own"
                    );
                }
            }
        }
        Ok(Tokens {
            reader,
            operator,
            admin,
        })
    }

    /// Whether every read needs a role's token (`--read-token-file`).
    pub(crate) fn reads_need_token(&self) -> bool {
        self.reader.is_some()
    }

    /// Whether `headers` carry the token of a role that may read: always, unless reads need a
    /// token.
    pub(crate) fn may_read(&self, headers: &HeaderMap) -> bool {
        !self.reads_need_token() || matches!(self.role(headers), Ok(role) if role >= Role::Reader)
    }

    /// Whether any role may write.
    pub(crate) fn writes(&self) -> bool {
        self.operator.is_some() || self.admin.is_some()
    }

    /// The writing roles that have a token, for the start-up line.
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
        // All compared every time: how long the answer takes says nothing of which matched.
        let admin = same(given, self.admin.as_deref());
        let operator = same(given, self.operator.as_deref());
        let reader = same(given, self.reader.as_deref());
        match (admin, operator, reader) {
            (true, _, _) => Ok(Role::Admin),
            (false, true, _) => Ok(Role::Operator),
            (false, false, true) => Ok(Role::Reader),
            (false, false, false) => Err(UnknownToken),
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
/// valid token (401), the token's role is below the one the action needs (403, naming it), or
/// the request may have been forged by another page (403, see [`forgery`]). From the headers
/// only: a refused request's body is never read.
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
        Ok(role) if role >= needed => match forgery(ui, headers) {
            None => return None,
            Some(why) => (StatusCode::FORBIDDEN, why),
        },
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

/// The header every write of the page carries; a form cannot send it.
pub(crate) const WRITE_HEADER: &str = "x-delayq-write";

/// Why a write with `headers` may come from a page other than this dashboard's: no
/// [`WRITE_HEADER`], a `Sec-Fetch-Site` naming another site, or an `Origin` that is neither the
/// request's own (its Host) nor an `--allow-host` name.
fn forgery(ui: &Ui, headers: &HeaderMap) -> Option<String> {
    let value = |name| headers.get(name).map(|v| v.to_str().unwrap_or("?"));
    if value(WRITE_HEADER) != Some("1") {
        return Some(format!(
            "a write needs the header {WRITE_HEADER}: 1 (the dashboard's page sends it; a form \
             of another site cannot)"
        ));
    }
    if let Some(site @ ("cross-site" | "same-site")) = value("sec-fetch-site") {
        return Some(format!(
            "refused: the browser says this write comes from a page of another site \
             (Sec-Fetch-Site: {site})"
        ));
    }
    let origin = value(header::ORIGIN.as_str())?;
    let own = value(header::HOST.as_str()).map(|host| host.to_ascii_lowercase());
    let given = origin
        .split_once("://")
        .map(|(_, authority)| authority.trim_end_matches('/').to_ascii_lowercase());
    let allowed = given.is_some_and(|authority| Some(authority) == own)
        || ui.origins.iter().any(|name| name.allows_origin(origin));
    match allowed {
        true => None,
        false => Some(
            "refused: this write comes from a page of another origin (Origin); start delayq \
             ui with --allow-host NAME for the name people use"
                .to_owned(),
        ),
    }
}

/// Every request under `/api`: refused (401) without a role's token when reads need one
/// (`--read-token-file`).
pub(super) async fn reads(
    State(ui): State<Shared>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    if ui.access.may_read(request.headers()) {
        return next.run(request).await;
    }
    tracing::info!("dashboard read refused: no role's token");
    failure(
        StatusCode::UNAUTHORIZED,
        "a valid token is needed: this dashboard needs a role's token for reads too",
    )
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
