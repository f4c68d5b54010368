//! [`DurableWrites`]: one queue's durable-write connection, opened by the first write that
//! needs it, and [`Writer`], the one way a write goes on the right connection and waits.

use super::{Confirmer, Durability};
use crate::Result;
use fred::clients::Client;
use std::sync::Arc;
use tokio::sync::OnceCell;

/// One queue's confirmer, shared by its handles and its reliable consumers (for dead letters).
#[derive(Debug, Clone)]
pub(crate) struct DurableWrites {
    /// The queue's client: plain writes go on it, and the confirmer's connection is made like it.
    client: Client,
    confirmer: Arc<OnceCell<Confirmer>>,
}

impl DurableWrites {
    /// Durable writes of a queue on `client`; no connection is opened yet.
    pub(crate) fn new(client: Client) -> DurableWrites {
        DurableWrites {
            client,
            confirmer: Arc::new(OnceCell::new()),
        }
    }

    /// The confirmer, opened on the first call.
    pub(crate) async fn confirmer(&self) -> Result<&Confirmer> {
        self.confirmer
            .get_or_try_init(|| Confirmer::connect(&self.client))
            .await
    }

    /// Where a write that waits for `durability` goes: the queue's client for plain writes;
    /// for durable ones the confirmer's connection (after checking the server can give the
    /// durability, so that nothing is written when it cannot), whose [`Writer::confirm`] then
    /// waits.
    pub(crate) async fn writer(&self, durability: Durability) -> Result<Writer<'_>> {
        if durability.is_none() {
            return Ok(Writer {
                client: &self.client,
                confirm: None,
            });
        }
        let confirmer = self.confirmer().await?;
        confirmer.check(durability)?;
        Ok(Writer {
            client: confirmer.client(),
            confirm: Some((confirmer, durability)),
        })
    }
}

/// Where a write goes, and what it waits for once done: see [`DurableWrites::writer`].
#[derive(Debug)]
pub(crate) struct Writer<'a> {
    client: &'a Client,
    confirm: Option<(&'a Confirmer, Durability)>,
}

impl Writer<'_> {
    /// The connection to send the write on.
    pub(crate) fn client(&self) -> &Client {
        self.client
    }

    /// Whether the write waits for confirmations.
    pub(crate) fn waits(&self) -> bool {
        self.confirm.is_some()
    }

    /// After the write to `key` came back: waits for its confirmations, if any are wanted.
    pub(crate) async fn confirm(&self, key: &str) -> Result<()> {
        match self.confirm {
            Some((confirmer, durability)) => confirmer.confirm(durability, key).await,
            None => Ok(()),
        }
    }
}
