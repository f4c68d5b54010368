//! `POST /api/queues/{name}/pending/{handle}/{action}`: one pending entry, by its offer handle
//! (the detail's `handle`): `cancel` removes it, `run-now` makes it due now (it keeps its bytes
//! and its place in offer order). Writes: `--allow-writes` and the token, as every write.

use super::{bounded, failure, refusal, Shared};
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
    if let Some(refused) = refusal(&ui, &headers).or_else(|| ui.outside(&name)) {
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
    match done.await {
        Ok(Some(true)) => {
            tracing::info!(queue = %name, handle, action, "dashboard write");
            Json(json!({ "done": true })).into_response()
        }
        Ok(Some(false)) => failure(
            StatusCode::NOT_FOUND,
            format!("no pending entry {handle} in {name:?} (taken, moved or cancelled already)"),
        ),
        Ok(None) => failure(StatusCode::NOT_FOUND, format!("no action {action:?}")),
        Err(err) => failure(StatusCode::BAD_GATEWAY, format!("{err:#}")),
    }
}
