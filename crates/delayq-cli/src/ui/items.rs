//! Actions on one item of a queue; each needs a role's token, as every write (access.rs).
//!
//! `POST /api/queues/{name}/pending/{handle}/{action}`: one pending entry, by its offer handle
//! (the detail's `handle`): `cancel` removes it, `run-now` makes it due now (it keeps its bytes
//! and its place in offer order).
//! `POST /api/queues/{name}/dead/{at}/{id}/{action}`: the dead letter `id` (the detail's `id`),
//! at position `at` when the page was read or nearer the head (looked for among the 1,000
//! records up to `at`): `retry` puts it back onto the
//! target list with a fresh attempt count, `delete` deletes it.
//! `POST /api/queues/{name}/in_flight/{id}/give-back`: the value of the delivery `id` goes back
//! onto the head of the target list, unprocessed (its consumer's ack then finds it gone).

use super::{bounded, failure, refusal, Shared};
use crate::lists::dead;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use delayq::OfferHandle;
use serde_json::json;

pub(super) async fn pending(
    State(ui): State<Shared>,
    Path((name, handle, action)): Path<(String, String, String)>,
    headers: HeaderMap,
) -> Response {
    if let Some(refused) = refusal(&ui, &headers, &action).or_else(|| ui.outside(&name)) {
        return refused;
    }
    let Ok(parsed) = handle.parse::<OfferHandle>() else {
        let message = format!("{handle:?} is no offer handle (18 hex digits)");
        return failure(StatusCode::BAD_REQUEST, message);
    };
    let done = bounded(async {
        let queue = ui.queue(&name).await?;
        Ok(match action.as_str() {
            "cancel" => Some(queue.cancel(&parsed).await?),
            "run-now" => Some(
                queue
                    .reschedule_by_id(&parsed, std::time::Duration::ZERO)
                    .await?,
            ),
            _ => None,
        })
    });
    answer(done.await, &name, &handle, &action, "pending entry")
}

pub(super) async fn in_flight(
    State(ui): State<Shared>,
    Path((name, id, action)): Path<(String, String, String)>,
    headers: HeaderMap,
) -> Response {
    if let Some(refused) = refusal(&ui, &headers, &action).or_else(|| ui.outside(&name)) {
        return refused;
    }
    let done = bounded(async {
        let queue = ui.queue(&name).await?;
        Ok(match action.as_str() {
            "give-back" => Some(queue.admin().give_back_in_flight(&id).await?),
            _ => None,
        })
    });
    answer(done.await, &name, &id, &action, "delivery")
}

/// The answer to an action on the item `item` (a `what`): done, gone, or no such action.
fn answer(
    done: anyhow::Result<Option<bool>>,
    name: &str,
    item: &str,
    action: &str,
    what: &str,
) -> Response {
    match done {
        Ok(Some(true)) => {
            tracing::info!(queue = %name, item, action, "dashboard write");
            Json(json!({ "done": true })).into_response()
        }
        Ok(Some(false)) => failure(
            StatusCode::NOT_FOUND,
            format!("no {what} {item} in {name:?} (taken, moved or removed already)"),
        ),
        Ok(None) => failure(StatusCode::NOT_FOUND, format!("no action {action:?}")),
        Err(err) => failure(StatusCode::BAD_GATEWAY, format!("{err:#}")),
    }
}

pub(super) async fn dead(
    State(ui): State<Shared>,
    Path((name, at, id, action)): Path<(String, usize, String, String)>,
    headers: HeaderMap,
) -> Response {
    if let Some(refused) = refusal(&ui, &headers, &action).or_else(|| ui.outside(&name)) {
        return refused;
    }
    let done = bounded(async {
        let queue = ui.queue(&name).await?;
        let client = &ui.ctx.client;
        Ok(match action.as_str() {
            "retry" => Some(dead::retry(client, &queue, Some(at), &id).await?),
            "delete" => Some(dead::delete(client, &queue, Some(at), &id).await?),
            _ => None,
        })
    });
    answer(done.await, &name, &id, &action, "dead letter")
}
