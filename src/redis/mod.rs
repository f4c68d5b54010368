//! Redis: what a client needs once built (its first connection bounded, Sentinel's master
//! switches, pub/sub clients), and the one API through which every Lua script is called
//! ([`script`], [`ops`]). Building clients is `connection/`'s.

pub(crate) mod ops;
pub(crate) mod reply;
pub(crate) mod script;
mod sentinel;
pub(crate) mod server;

use crate::error::{classify, ReplyKind};
use crate::retry::{Backoff, Retrying};
use crate::{Error, Result};
use fred::clients::Client;
use fred::error::ErrorKind;
use fred::interfaces::EventInterface;
use fred::prelude::ClientLike;
use fred::types::ConnectHandle;
use std::future::Future;
use std::time::{Duration, Instant};

/// Channel messages a pub/sub client keeps for a listener that has not read them yet (fred's
/// default is 32; at 1,000 offers/s a scheduler group fell behind that on a loaded machine, and
/// a group that falls behind must transfer every queue, not knowing which messages it missed).
const SUBSCRIBER_BACKLOG: usize = 16_384;

/// A new client like `client` (its config, connection settings and reconnect policy), for
/// pub/sub: its own connections, and room for a burst of messages. Initialise it with
/// [`init_client`].
pub(crate) fn subscriber_of(client: &Client) -> Client {
    let mut performance = client.perf_config();
    performance.broadcast_channel_capacity = performance
        .broadcast_channel_capacity
        .max(SUBSCRIBER_BACKLOG);
    // clone_new starts the reconnect policy's attempts from zero (a method fred keeps private).
    let policy = client.clone_new().client_reconnect_policy();
    Client::new(
        client.client_config(),
        Some(performance),
        Some(client.connection_config().clone()),
        policy,
    )
}

/// Initialises a client (one made by `clone_new` too), with the connect timeout as the bound on
/// the first connection.
pub(crate) async fn init_client(client: &Client) -> Result<()> {
    let connection_task = connect_bounded(client).await?;
    sentinel::follow_switches(client, connection_task);
    Ok(())
}

/// How often [`connect_bounded`] looks at the client's state besides waiting for fred's
/// notification (which a connection that completes before the wait starts does not send again).
const CONNECTED_CHECK: Duration = Duration::from_millis(50);

/// Starts `client`'s connection task and waits until it is connected, it failed, or the
/// client's connect timeout ran out. On failure or timeout the task is stopped (a timed-out
/// attempt is not left running in the background), so nothing keeps the client alive.
pub(crate) async fn connect_bounded<C: ClientLike + EventInterface>(
    client: &C,
) -> Result<ConnectHandle> {
    let limit = client.connection_config().connection_timeout;
    let started = Instant::now();
    let deadline = tokio::time::Instant::now() + limit;
    let mut task = client.connect();
    let outcome = loop {
        tokio::select! {
            ended = &mut task => {
                break Err(match ended {
                    Ok(Err(err)) => err,
                    Ok(Ok(())) => fred::error::Error::new(ErrorKind::Canceled, "client closed while connecting"),
                    Err(join) => fred::error::Error::new(ErrorKind::Unknown, join.to_string()),
                });
            }
            connected = client.wait_for_connect() => match connected {
                Ok(()) => break Ok(()),
                Err(err) => break Err(err),
            },
            _ = tokio::time::sleep_until(deadline), if !limit.is_zero() => {
                break Err(fred::error::Error::new(ErrorKind::Timeout, "connect timeout"));
            }
            _ = tokio::time::sleep(CONNECTED_CHECK) => {
                if client.is_connected() {
                    break Ok(());
                }
            }
        }
    };
    match outcome {
        Ok(()) => Ok(task),
        Err(err) => {
            task.abort();
            if *err.kind() == ErrorKind::Timeout {
                // fred's own timeouts (AUTH, CLUSTER SLOTS) end at about the same moment.
                Err(Error::Redis(timed_out(started.elapsed(), limit)))
            } else {
                // A server that answers but refuses (BUSY, LOADING, NOPERM on the handshake)
                // says so.
                Err(Error::from_connect(&server_label(client), err))
            }
        }
    }
}

/// The servers a client is configured for, as `host:port[,host:port...]`: never credentials.
fn server_label<C: ClientLike>(client: &C) -> String {
    let hosts = client.client_config().server.hosts();
    let labels: Vec<String> = hosts
        .iter()
        .map(|h| format!("{}:{}", h.host, h.port))
        .collect();
    labels.join(",")
}

/// The error for a first connection that was not ready in time, with the time really waited.
fn timed_out(waited: Duration, limit: Duration) -> fred::error::Error {
    fred::error::Error::new(
        ErrorKind::Timeout,
        format!(
            "no connection to Redis after {:.1} s (connect timeout {:.1} s): the server did not \
             answer the connection, TLS handshake or AUTH in time",
            waited.as_secs_f64(),
            limit.as_secs_f64()
        ),
    )
}

/// Waits before sending again a command refused during a slot migration: 10 ms doubling, at
/// most [`REFUSED_TRIES`] times (10, 20, ... 2,560 ms, about 5 s in all).
fn refused_backoff() -> Backoff {
    Backoff::doubling(Duration::from_millis(10), Duration::from_millis(2_560))
}
const REFUSED_TRIES: u32 = 9;

/// Runs `send` until Redis stops refusing it because a Cluster slot is moving, for up to ~5 s:
/// a refused command did not run, so sending it again is safe.
pub(crate) async fn resend_refused<T, F, Fut>(
    what: &str,
    mut send: F,
) -> std::result::Result<T, fred::error::Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = std::result::Result<T, fred::error::Error>>,
{
    let mut retrying = Retrying::new(refused_backoff());
    loop {
        match send().await {
            Err(err)
                if classify(&err) == ReplyKind::Migrating
                    && retrying.failures() < REFUSED_TRIES =>
            {
                let wait = retrying.failed();
                tracing::debug!(command = what, error = %err, retry_in_ms = wait.as_millis() as u64, "slot migrating; sending again");
                tokio::time::sleep(wait).await;
            }
            other => return other,
        }
    }
}
