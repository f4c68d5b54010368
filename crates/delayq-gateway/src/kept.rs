//! Delivered messages kept readable: with [`keep_delivered`](crate::GatewayConfig::with_keep_delivered)
//! above zero, a delivered message's record moves from the index to
//! `delayq_gateway_delivered:{QUEUE}:ID`, a string that expires after that time, and
//! `GET /v2/messages/{id}` reads it there (a cancel of it is a 404: it is no longer to be
//! delivered).

use crate::scripts::KEPT_MOVE;
use crate::store::{Record, Store};
use bytes::Bytes;
use delayq::fred::interfaces::KeysInterface;
use delayq::fred::prelude::Value;
use std::time::Duration;

type RedisResult<T> = Result<T, delayq::fred::error::Error>;

fn key(store: &Store, id: &str) -> String {
    // In the index's hash slot: the index key is `delayq_gateway_messages:{QUEUE}` (or
    // `...:QUEUE` when the name has its own tag).
    let tag = store
        .index_key()
        .strip_prefix("delayq_gateway_messages:")
        .unwrap_or("");
    // `%` and `:` of the id escaped (a message id, `msg_…`, keeps its name): a read of `x:ID`
    // is not of the message `ID` of a gateway whose queue is `{QUEUE}:x`.
    delayq::names::item_key(&format!("delayq_gateway_delivered:{tag}"), id)
}

/// Message `id` was delivered: its record leaves the index, kept for `keep` when above zero.
pub(crate) async fn delivered(store: &Store, id: &str, keep: Duration) -> RedisResult<()> {
    if keep.is_zero() {
        return store.remove(id).await.map(drop);
    }
    let ms = u64::try_from(keep.as_millis()).unwrap_or(u64::MAX).max(1);
    let keys = vec![store.index_key().into(), key(store, id).into()];
    let args = vec![Value::from(id), Value::from(ms.to_string())];
    KEPT_MOVE
        .run::<i64>(store.client(), keys, args)
        .await
        .map(drop)
}

/// The record of message `id`, delivered less than the configured time ago.
pub(crate) async fn get(store: &Store, id: &str) -> RedisResult<Option<Record>> {
    let raw: Option<Bytes> = store.client().get(key(store, id)).await?;
    Ok(raw.and_then(|raw| rmp_serde::from_slice(&raw).ok()))
}
