//! Building a fred client that suits a delayed queue.

use crate::{Error, Result};
use fred::clients::{Client, SubscriberClient};
use fred::interfaces::{EventInterface, PubsubInterface};
use fred::prelude::{Builder, ClientLike, Config, ReconnectPolicy, ServerConfig};
use fred::types::ConnectHandle;
use std::future::Future;
use std::time::Duration;
use tokio::sync::mpsc;

/// How long a command may wait (for a reconnect, say) before it fails with a timeout.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

/// Reconnect forever, 100 ms doubling to 5 s: for queue clients and sentinel listeners alike.
fn reconnect_policy() -> ReconnectPolicy {
    ReconnectPolicy::new_exponential(0, 100, 5_000, 2)
}

/// How long [`connect`] waits for the first connection.
const FIRST_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Connects a fred [`Client`](fred::clients::Client) from a URL, with a reconnect policy that
/// retries forever (100 ms doubling to 5 s), so schedulers and consumers survive restarts,
/// failovers and killed connections, and a 30 s command timeout, so a command that cannot be
/// sent (Redis down for longer, or the client closed) fails with a clear error instead of
/// waiting forever. Blocking waits of [`Consumer`](crate::Consumer) set their own, longer limit.
///
/// A command is written at most once: when the connection drops after a command was sent and
/// before its reply came, the call fails (the command may or may not have run) rather than being
/// sent again, which for an offer could deliver the value twice. Retrying such an offer is the
/// caller's choice (at least once); acks, nacks and dead letters may be retried safely.
///
/// With a Cluster URL, the client does not follow `MOVED`/`ASK` redirections itself (fred
/// 10.1's `ASK` handling could wedge a busy client during a slot migration); it refreshes its
/// slot map on `MOVED`, and delayq's own calls are sent again after a redirection or a
/// `TRYAGAIN` for up to ~5 s. Commands you send through the client yourself get the redirection
/// as an error to retry.
///
/// With a Sentinel URL, the client also listens to every sentinel's `+switch-master` channel
/// and reconnects to the new master as soon as one announces it. Without that, fred keeps
/// writing to the old master until Sentinel demotes it (up to ~10 s after a forced failover),
/// and those writes are lost when it resyncs from the new master. The connections that
/// schedulers and consumers open from this client do the same.
///
/// Accepts fred's URL forms: `redis://host:port/db`, `redis-cluster://host:port?node=host:port`,
/// `redis-sentinel://host:port?node=host:port&sentinelServiceName=mymaster`.
///
/// # Errors
///
/// A bad URL, or no connection within 10 seconds.
///
/// # Examples
///
/// ```no_run
/// # async fn ex() -> Result<(), delayq::Error> {
/// let client = delayq::connect("redis://127.0.0.1:6379").await?;
/// # Ok(()) }
/// ```
pub async fn connect(url: &str) -> Result<fred::clients::Client> {
    let config = Config::from_url(url)?;
    let client = Builder::from_config(config)
        .with_connection_config(|c| {
            c.connection_timeout = Duration::from_secs(5);
            // A command whose connection drops after it was written is not written again: it
            // may have run (Redis executed it, its reply was lost), and an offer sent twice is
            // delivered twice once the first copy has moved (found by tests/faults after Redis
            // restarts). The caller gets an error meaning "outcome unknown" instead; commands
            // not yet written wait for the reconnection as before.
            c.max_command_attempts = 1;
            // fred 10.1 follows an ASK redirection by reading ASKING's reply inline on a
            // pipelined connection; under load during a Cluster slot migration that wedged the
            // client for good (every later command timed out; found by tests/faults). Not
            // following redirections avoids that path: a MOVED still refreshes fred's slot map,
            // and delayq's scripts send a refused call again (src/scripts.rs).
            c.max_redirections = 0;
        })
        .with_performance_config(|p| p.default_command_timeout = COMMAND_TIMEOUT)
        .set_policy(reconnect_policy())
        .build()?;
    init_client(&client).await?;
    Ok(client)
}

/// Initialises a client made by `clone_new`, with a bound on the first connection.
pub(crate) async fn init_client(client: &Client) -> Result<()> {
    match tokio::time::timeout(FIRST_CONNECT_TIMEOUT, client.init()).await {
        Ok(Ok(connection_task)) => {
            follow_sentinel_switches(client, connection_task);
            Ok(())
        }
        Ok(Err(err)) => Err(err.into()),
        Err(_) => {
            // Stop the reconnect loop that is still trying in the background.
            let _ = client.quit().await;
            Err(Error::Redis(fred::error::Error::new(
                fred::error::ErrorKind::Timeout,
                format!(
                    "no connection to Redis within {}s",
                    FIRST_CONNECT_TIMEOUT.as_secs()
                ),
            )))
        }
    }
}

/// For a client configured through Sentinel: subscribes to `+switch-master` on every sentinel
/// and forces `client` to reconnect (fred then asks the sentinels for the master again) when
/// one of them announces a new master for the client's service. Ends, closing its sentinel
/// connections, when the client's connection task ends (after `quit`).
fn follow_sentinel_switches(client: &Client, mut connection_task: ConnectHandle) {
    let ServerConfig::Sentinel {
        hosts,
        service_name,
        ..
    } = client.client_config().server
    else {
        return;
    };
    let client = client.clone();
    tokio::spawn(async move {
        let (announcements_tx, mut announcements) = mpsc::unbounded_channel::<String>();
        let mut listeners = Vec::new();
        for sentinel in hosts {
            let config = Config {
                server: ServerConfig::new_centralized(sentinel.host.to_string(), sentinel.port),
                ..Config::default()
            };
            let listener = match Builder::from_config(config)
                .set_policy(reconnect_policy())
                .build_subscriber_client()
            {
                Ok(listener) => listener,
                Err(err) => {
                    tracing::warn!(%err, "cannot build a client for a sentinel");
                    continue;
                }
            };
            let forward = announcements_tx.clone();
            let task = tokio::spawn(listen_to_sentinel(listener.clone(), forward));
            listeners.push((listener, task));
        }
        drop(announcements_tx);

        let mut last_announcement = None;
        loop {
            tokio::select! {
                _ = &mut connection_task => break,
                announcement = announcements.recv() => {
                    let Some(announcement) = announcement else { break };
                    // "<service> <old ip> <old port> <new ip> <new port>", once per sentinel.
                    let mut words = announcement.split_whitespace();
                    if words.next() != Some(service_name.as_str())
                        || last_announcement.as_ref() == Some(&announcement)
                    {
                        continue;
                    }
                    tracing::info!(%announcement, "sentinel switched master; reconnecting");
                    if let Err(err) = client.force_reconnection().await {
                        tracing::warn!(%err, "reconnect after a master switch failed");
                    }
                    last_announcement = Some(announcement);
                }
            }
        }
        for (listener, task) in listeners {
            task.abort();
            let _ = listener.quit().await;
        }
    });
}

/// Connects to one sentinel, keeps a `+switch-master` subscription across reconnects, and
/// forwards every message's text.
async fn listen_to_sentinel(listener: SubscriberClient, forward: mpsc::UnboundedSender<String>) {
    let mut messages = listener.message_rx();
    let _connection_task = listener.connect();
    let _resubscribe_task = listener.manage_subscriptions();
    // Until the first subscription succeeds (the sentinel may be down for now).
    while let Err(err) = listener.subscribe("+switch-master").await {
        tracing::debug!(%err, "cannot subscribe to a sentinel yet");
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    loop {
        match messages.recv().await {
            Ok(message) => {
                if let Some(text) = message.value.as_str() {
                    if forward.send(text.to_string()).is_err() {
                        break;
                    }
                }
            }
            Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
            Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
        }
    }
}

/// First and last wait before sending again a command refused during a slot migration
/// (doubling: 10, 20, ... 2,560 ms, about 5 s in all).
const REFUSED_FIRST_WAIT: Duration = Duration::from_millis(10);
const REFUSED_LAST_WAIT: Duration = Duration::from_millis(2_560);

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
    let mut wait = REFUSED_FIRST_WAIT;
    loop {
        match send().await {
            Err(err) if is_refused_during_migration(&err) && wait <= REFUSED_LAST_WAIT => {
                tracing::debug!(command = what, error = %err, retry_in_ms = wait.as_millis() as u64, "slot migrating; sending again");
                tokio::time::sleep(wait).await;
                wait *= 2;
            }
            other => return other,
        }
    }
}

/// A reply by which Redis says it did not run the command because the slot is moving: fred's
/// "Too many redirections" (a `MOVED`/`ASK` it did not follow, see [`connect`]) or `TRYAGAIN`.
fn is_refused_during_migration(err: &fred::error::Error) -> bool {
    let details = err.details();
    (*err.kind() == fred::error::ErrorKind::Routing && details.starts_with("Too many redirections"))
        || details.starts_with("TRYAGAIN")
}
