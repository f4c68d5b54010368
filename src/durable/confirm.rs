//! The [`Confirmer`]: durable writes' own connection, and the task that confirms them.
//!
//! A writer whose write came back asks the task for a confirmation; the task takes every request
//! waiting at that moment and sends one `WAIT` (or `WAITAOF`) per durability and node for all of
//! them: `WAIT` covers every earlier write of its connection, so one wait confirms them all, and
//! while it runs the next writers' requests gather for the next one. Sixteen offers in flight
//! thus share a handful of waits instead of sending sixteen.
//!
//! `WAIT` counts from the connection's last write; a wait sent on a *new* connection (fred
//! reconnected between the write and the wait) would see no write and confirm at once. Each
//! request therefore carries the id (`CLIENT ID`) of the connection its write came back on, and
//! is confirmed only when the wait ran on that same connection from start to end.

use super::Durability;
use crate::{Error, Result};
use fred::clients::Client;
use fred::interfaces::{ClientInterface, ClientLike, ClusterInterface};
use fred::prelude::Value;
use fred::types::config::Options;
use fred::types::config::Server;
use fred::types::{ClusterHash, CustomCommand};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tracing::Instrument;

/// How much longer than the wait's own timeout the client lets the command take.
const REPLY_GRACE: Duration = Duration::from_secs(5);

/// A writer's request: confirm my write with `durability` on `server`'s connection `connection`.
#[derive(Debug)]
struct Request {
    durability: Durability,
    server: Option<Server>,
    connection: Option<i64>,
    /// The shared record of the master's replicas, in the written key's slot.
    record: Option<String>,
    reply: oneshot::Sender<Result<()>>,
}

/// What one wait confirmed.
#[derive(Debug, Clone, Copy, Default)]
struct Acks {
    replicas: u32,
    local_aof: bool,
}

impl Acks {
    /// Ok when these acknowledgements are what `durability` asks for, `wanted` replicas.
    fn verdict(self, durability: Durability, wanted: u32) -> Result<()> {
        let replicas_ok = self.replicas >= wanted;
        let aof_ok = self.local_aof || !durability.wants_local_aof();
        match replicas_ok && aof_ok {
            true => Ok(()),
            false => Err(Error::NotConfirmed {
                wanted_replicas: wanted,
                acked_replicas: self.replicas,
                wanted_local_aof: durability.wants_local_aof(),
                local_aof: self.local_aof,
                timeout: durability.wait_timeout(),
            }),
        }
    }
}

/// Durable writes' connection and the task confirming them. Dropping it (with the last handle
/// of its queue) ends the task, which then closes the connection.
#[derive(Debug)]
pub(crate) struct Confirmer {
    client: Client,
    requests: mpsc::UnboundedSender<Request>,
    /// Why `WAITAOF` cannot be used here (unknown command, refused by an ACL), if it cannot.
    no_waitaof: Option<String>,
}

impl Confirmer {
    /// Opens a connection like `like`'s (same servers, credentials, TLS; following Sentinel's
    /// master switches as the queue's own does) and starts the task.
    pub(crate) async fn connect(like: &Client) -> Result<Confirmer> {
        let client = like.clone_new();
        // Like every connection of a client made through Sentinel, it follows `+switch-master`:
        // left on the old master, durable writes would be refused (no replica to confirm them)
        // until Sentinel demotes it, or confirmed by a replica still following it and lost.
        crate::redis::init_client(&client).await?;
        // Waits for nothing, and returns at once: whether this user may wait at all (an ACL
        // without `+wait` fails here, before anything is written), and whether WAITAOF exists.
        if let Err(err) = client
            .custom::<Value, _>(wait_command("WAIT"), vec![0, 0])
            .await
        {
            let _ = client.quit().await;
            return Err(err.into());
        }
        let no_waitaof = client
            .custom::<Value, _>(wait_command("WAITAOF"), vec![0, 0, 0])
            .await
            .err()
            .map(|err| err.details().to_owned());
        let (requests, receiver) = mpsc::unbounded_channel();
        let span = tracing::debug_span!("durable.confirmer");
        tokio::spawn(serve(client.clone(), receiver).instrument(span));
        Ok(Confirmer {
            client,
            requests,
            no_waitaof,
        })
    }

    /// The connection durable writes go on.
    pub(crate) fn client(&self) -> &Client {
        &self.client
    }

    /// Refuses, before anything is written, a durability this server cannot give.
    pub(crate) fn check(&self, durability: Durability) -> Result<()> {
        durability.check_timeout()?;
        match &self.no_waitaof {
            Some(why) if durability.uses_aof() => Err(Error::InvalidConfig(format!(
                "waiting for the append-only file needs WAITAOF (Redis 7.2 or later, Valkey), \
                 which this server refused ({why}); nothing was written"
            ))),
            _ => Ok(()),
        }
    }

    /// Waits until the write just made on [`client`](Self::client) to `key` has what
    /// `durability` asks for; call it right after the write came back.
    pub(crate) async fn confirm(&self, durability: Durability, key: &str) -> Result<()> {
        let server = self
            .client
            .is_clustered()
            .then(|| node_of(&self.client, key));
        let server = server.flatten();
        let connection = connection_id(&self.client, server.as_ref());
        let record = crate::keys::replicas_record(key, self.client.is_clustered());
        let (reply, answer) = oneshot::channel();
        let request = Request {
            durability,
            server,
            connection,
            record,
            reply,
        };
        self.requests.send(request).map_err(|_| Error::Closed)?;
        answer.await.map_err(|_| Error::Closed)?
    }
}

/// The cluster node holding `key`'s slot, as the client's routing table has it.
fn node_of(client: &Client, key: &str) -> Option<Server> {
    let slot = fred::util::redis_keyslot(key.as_bytes());
    client.cached_cluster_state()?.get_server(slot).cloned()
}

/// The id of the client's connection to `server` (its only one when `None`).
fn connection_id(client: &Client, server: Option<&Server>) -> Option<i64> {
    let ids = client.connection_ids();
    match server {
        Some(server) => ids.get(server).copied(),
        None if ids.len() == 1 => ids.values().next().copied(),
        None => None,
    }
}

/// `WAIT` or `WAITAOF`: blocking (fred sends nothing after it on its connection until it
/// returns, as Redis runs nothing more of that client meanwhile).
fn wait_command(name: &'static str) -> CustomCommand {
    CustomCommand::new_static(name, ClusterHash::Random, true)
}

/// The task: takes every request waiting, confirms them one wait per durability and node.
async fn serve(client: Client, mut requests: mpsc::UnboundedReceiver<Request>) {
    // The most replicas this process saw connected to the master, for when the shared record
    // cannot be used (every-replica waits count them all).
    let mut seen_here = super::replicas::SeenHere::default();
    while let Some(first) = requests.recv().await {
        let mut batch = vec![first];
        while let Ok(more) = requests.try_recv() {
            batch.push(more);
        }
        while let Some(head) = batch.first() {
            let (durability, server) = (head.durability, head.server.clone());
            let (group, rest): (Vec<_>, Vec<_>) = batch
                .into_iter()
                .partition(|r| r.durability == durability && r.server == server);
            batch = rest;
            settle(&client, durability, server.as_ref(), group, &mut seen_here).await;
        }
    }
    let _ = client.quit().await;
}

/// One wait for `group`, and each request's answer.
async fn settle(
    client: &Client,
    durability: Durability,
    server: Option<&Server>,
    group: Vec<Request>,
    seen_here: &mut super::replicas::SeenHere,
) {
    let before = connection_id(client, server);
    let wanted = match durability.waits_for_every_replica() {
        true => {
            let on_node = client.with_options(&on_connection(server, Duration::ZERO));
            let record = group.first().and_then(|r| r.record.as_deref());
            let now_ms = crate::time::now_ms();
            super::replicas::every_replica(&on_node, record, now_ms, seen_here).await
        }
        false => durability.wanted_replicas(),
    };
    let span = tracing::debug_span!(
        "durable.wait",
        writers = group.len(),
        replicas = wanted,
        local_aof = durability.wants_local_aof(),
    );
    let acks = wait(client, durability, wanted, server)
        .instrument(span)
        .await;
    let after = connection_id(client, server);
    let acks = match acks {
        Ok(acks) => acks,
        Err(err) => {
            tracing::warn!(error = %err, "the wait for replicas failed; writes not confirmed");
            Acks::default()
        }
    };
    for request in group {
        let same_connection =
            request.connection.is_some() && request.connection == before && before == after;
        let acks = if same_connection {
            acks
        } else {
            Acks::default()
        };
        let _ = request.reply.send(acks.verdict(durability, wanted));
    }
}

/// The options of a call on `server`'s connection of the durable client, sent once.
fn on_connection(server: Option<&Server>, timeout: Duration) -> Options {
    Options {
        timeout: Some(timeout + REPLY_GRACE),
        // Resent on a new connection, the wait would confirm nothing the old one wrote.
        max_attempts: Some(1),
        cluster_node: server.cloned(),
        ..Options::default()
    }
}

/// `WAIT n timeout`, or `WAITAOF numlocal n timeout`, on `server`'s connection, `n` = `wanted`.
async fn wait(
    client: &Client,
    durability: Durability,
    wanted: u32,
    server: Option<&Server>,
) -> Result<Acks> {
    let client = client.with_options(&on_connection(server, durability.wait_timeout()));
    let replicas = u64::from(wanted);
    let timeout = durability.timeout_ms();
    if durability.uses_aof() {
        let reply: Vec<u64> = client
            .custom(wait_command("WAITAOF"), vec![1, replicas, timeout])
            .await?;
        let (local, replicas) = match reply.as_slice() {
            [local, replicas] => (*local, *replicas),
            _ => {
                return Err(Error::UnexpectedReply {
                    context: "WAITAOF",
                    detail: format!("{reply:?}"),
                })
            }
        };
        return Ok(Acks {
            replicas: u32::try_from(replicas).unwrap_or(u32::MAX),
            local_aof: local > 0,
        });
    }
    let replicas: u64 = client
        .custom(wait_command("WAIT"), vec![replicas, timeout])
        .await?;
    Ok(Acks {
        replicas: u32::try_from(replicas).unwrap_or(u32::MAX),
        local_aof: false,
    })
}
