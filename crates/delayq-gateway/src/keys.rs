//! The signing keys, kept in Redis (`delayq_gateway_keys:{QUEUE}`, a hash with `current` and
//! `next`) so that every gateway process of a queue signs with the same key, also after a
//! rotation: `GET /v2/keys` and `POST /v2/keys/rotate` (QStash's rule: the next key becomes the
//! current one, and a new next key is made). The keys a process starts with seed the hash only
//! when it has none; from then on the hash wins. Deliveries read the current key from it for
//! every attempt (falling back to the last key read while Redis cannot answer). The keys never
//! go into the log.

use crate::error::ApiError;
use crate::scripts::{KEYS_ROTATE, KEYS_SEED};
use crate::Shared;
use axum::extract::State;
use axum::Json;
use delayq::fred::clients::Client;
use delayq::fred::interfaces::HashesInterface;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

type RedisResult<T> = Result<T, delayq::fred::error::Error>;

/// The keys of one gateway queue, and the last pair read.
pub(crate) struct Keys {
    client: Client,
    key: String,
    last: Mutex<(String, String)>,
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keys")
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

impl Keys {
    /// The keys of `queue`, seeded with `current` and `next` when Redis has none.
    pub(crate) async fn seeded(
        client: Client,
        queue: &str,
        current: &str,
        next: &str,
    ) -> RedisResult<Keys> {
        let key = crate::store::tagged("delayq_gateway_keys", queue);
        let pair: Vec<String> = KEYS_SEED
            .run(
                &client,
                vec![key.as_str().into()],
                vec![current.into(), next.into()],
            )
            .await?;
        let keys = Keys {
            client,
            key,
            last: Mutex::new((current.to_owned(), next.to_owned())),
        };
        keys.remember(&pair);
        if pair.first().map(String::as_str) != Some(current) {
            tracing::info!(
                "gateway: signing with the keys in Redis (rotated since), not the key files"
            );
        }
        Ok(keys)
    }

    fn remember(&self, pair: &[String]) {
        if let [current, next] = pair {
            if let Ok(mut last) = self.last.lock() {
                *last = (current.clone(), next.clone());
            }
        }
    }

    fn last(&self) -> (String, String) {
        self.last
            .lock()
            .map(|last| last.clone())
            .unwrap_or_default()
    }

    /// The current and next keys as Redis has them (the last pair read when it cannot answer).
    pub(crate) async fn pair(&self) -> (String, String) {
        let read: RedisResult<Vec<Option<String>>> =
            self.client.hmget(&self.key, vec!["current", "next"]).await;
        match read {
            Ok(pair) => match pair.as_slice() {
                [Some(current), Some(next)] => {
                    let pair = [current.clone(), next.clone()];
                    self.remember(&pair);
                    (pair[0].clone(), pair[1].clone())
                }
                _ => self.last(),
            },
            Err(err) => {
                tracing::warn!(error = %err, "gateway: cannot read the signing keys; signing with the last read");
                self.last()
            }
        }
    }

    /// The key deliveries are signed with now.
    pub(crate) async fn current(&self) -> String {
        self.pair().await.0
    }

    async fn rotate(&self) -> RedisResult<(String, String)> {
        let fresh = crate::envelope::new_id("sig_");
        let pair: Vec<String> = KEYS_ROTATE
            .run(
                &self.client,
                vec![self.key.as_str().into()],
                vec![fresh.into()],
            )
            .await?;
        self.remember(&pair);
        Ok(self.last())
    }
}

/// `GET /v2/keys`: `{"current", "next"}`.
pub(crate) async fn get(State(shared): State<Arc<Shared>>) -> Json<Value> {
    let (current, next) = shared.keys.pair().await;
    Json(json!({ "current": current, "next": next }))
}

/// `POST /v2/keys/rotate`: the next key becomes the current one, a new next key is made;
/// `{"current", "next"}` after the rotation.
pub(crate) async fn rotate(State(shared): State<Arc<Shared>>) -> Result<Json<Value>, ApiError> {
    match shared.keys.rotate().await {
        Ok((current, next)) => {
            tracing::info!("gateway: signing keys rotated");
            Ok(Json(json!({ "current": current, "next": next })))
        }
        Err(err) => Err(ApiError::internal("rotating the signing keys", &err)),
    }
}
