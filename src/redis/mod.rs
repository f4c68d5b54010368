//! Redis: building clients that suit a delayed queue, Sentinel's master switches, and the one
//! API through which every Lua script is called ([`script`], [`ops`]).

pub(crate) mod ops;
mod options;
pub(crate) mod reply;
pub(crate) mod script;
mod sentinel;
pub(crate) mod server;
mod tls;

pub use options::ConnectOptions;
pub use tls::TlsOptions;

use crate::error::{classify, ReplyKind};
use crate::retry::{Backoff, Retrying};
use crate::{Error, Result};
use fred::clients::Client;
use fred::error::ErrorKind;
use fred::interfaces::EventInterface;
use fred::prelude::{Builder, ClientLike, Config};
use fred::types::ConnectHandle;
use std::future::Future;
use std::time::{Duration, Instant};

/// Connects a fred [`Client`](fred::clients::Client) from a URL, with delayq's settings (see
/// [`client_builder`]) and the default [`ConnectOptions`] (10 s to connect, 30 s per command).
///
/// Accepts fred's URL forms (see [`ConnectOptions`]): `redis://[user:password@]host:port/db`,
/// `redis-cluster://host:port?node=host:port`,
/// `redis-sentinel://host:port?node=host:port&sentinelServiceName=mymaster`, and their TLS forms
/// `rediss://`, `rediss-cluster://`, `rediss-sentinel://` (feature `tls`).
///
/// # Errors
///
/// A bad URL, a TLS URL without the `tls` feature, a refused connection or authentication, or
/// no connection within 10 seconds.
///
/// # Examples
///
/// ```no_run
/// # async fn ex() -> Result<(), delayq::Error> {
/// let client = delayq::connect("redis://127.0.0.1:6379").await?;
/// # Ok(()) }
/// ```
pub async fn connect(url: &str) -> Result<Client> {
    ConnectOptions::default().connect(url).await
}

/// A fred [`Builder`] for `config` with the settings delayq relies on and the default
/// [`ConnectOptions`] timeouts; change what you need (pool and buffer sizes, your own
/// timeouts) and pass it to [`connect_with`]. [`ConnectOptions::builder_for`] does the same
/// with options of your own.
///
/// - A reconnect policy that retries forever (100 ms doubling to 5 s), so schedulers and
///   consumers survive restarts, failovers and killed connections, and a 30 s command timeout,
///   so a command that cannot be sent (Redis down for longer, or the client closed) fails with a
///   clear error instead of waiting forever. Blocking waits of [`Consumer`](crate::Consumer) set
///   their own, longer limit.
/// - A 10 s connect timeout (fred's `connection_timeout` and `internal_command_timeout`), which
///   [`connect_with`] also uses as the bound on the whole first connection.
/// - A command is written at most once (`max_command_attempts = 1`): when the connection drops
///   after a command was sent and before its reply came, the call fails (the command may or may
///   not have run) rather than being sent again, which for an offer could deliver the value
///   twice. Retrying such an offer is the caller's choice (at least once); acks, nacks and dead
///   letters are safe to send twice, and delayq sends them again itself.
/// - With a Cluster, the client does not follow `MOVED`/`ASK` redirections itself
///   (`max_redirections = 0`; fred 10.1's `ASK` handling could wedge a busy client during a slot
///   migration); it refreshes its slot map on `MOVED`, and delayq's own calls are sent again after
///   a redirection or a `TRYAGAIN` for up to ~5 s. Commands you send through the client yourself
///   get the redirection as an error to retry.
///
/// Changing the last two gives up the guarantees they give: keep them unless you know why.
///
/// A `Config` from fred's `Config::from_url("rediss://...")` gets fred's own TLS connector
/// (system CAs only); use [`ConnectOptions::config`] for delayq's TLS settings.
///
/// # Examples
///
/// ```no_run
/// # async fn ex() -> Result<(), delayq::Error> {
/// use delayq::fred::prelude::Config;
///
/// let config = Config::from_url("redis://127.0.0.1:6379/2")?;
/// let mut builder = delayq::client_builder(config);
/// builder.with_performance_config(|p| p.default_command_timeout = std::time::Duration::from_secs(5));
/// let client = delayq::connect_with(&builder).await?;
/// # Ok(()) }
/// ```
pub fn client_builder(config: Config) -> Builder {
    safe_builder(config, &ConnectOptions::default())
}

/// The builder behind [`client_builder`] and [`ConnectOptions::builder_for`].
fn safe_builder(config: Config, options: &ConnectOptions) -> Builder {
    let mut builder = Builder::from_config(config);
    let connect_timeout = options.connect_timeout;
    builder
        .with_connection_config(|c| {
            c.connection_timeout = connect_timeout;
            c.internal_command_timeout = connect_timeout;
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
            // and delayq's scripts send a refused call again (resend_refused).
            c.max_redirections = 0;
        })
        .with_performance_config(|p| p.default_command_timeout = options.command_timeout)
        .set_policy(options.reconnect_policy());
    builder
}

/// Builds and connects a client from `builder` (normally from [`client_builder`] or
/// [`ConnectOptions::builder`]).
///
/// The whole first connection (TCP, TLS, `AUTH`, Sentinel or Cluster discovery) is bounded by
/// the builder's `connection_timeout` (the connect timeout; zero: no bound); when it runs out
/// the connection attempt is stopped and the error says how long it waited.
///
/// With a Sentinel configuration, the client also listens to every sentinel's
/// `+switch-master` channel (with the client's TLS settings and the sentinels' credentials) and
/// reconnects to the new master as soon as one announces it. Without that, fred keeps writing
/// to the old master until Sentinel demotes it (up to ~10 s after a forced failover), and those
/// writes are lost when it resyncs from the new master. The connections that schedulers and
/// consumers open from this client do the same.
///
/// # Errors
///
/// An invalid configuration, a refused connection or authentication, or no connection within
/// the connect timeout.
pub async fn connect_with(builder: &Builder) -> Result<Client> {
    let client = builder.build()?;
    init_client(&client).await?;
    Ok(client)
}

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

/// `url` with its password replaced by `***` (and nothing else changed), for messages and logs.
///
/// # Examples
///
/// ```
/// assert_eq!(
///     delayq::redact_url("redis://app:S3cret@10.0.0.5:6380/2"),
///     "redis://app:***@10.0.0.5:6380/2"
/// );
/// assert_eq!(delayq::redact_url("rediss://:pw@host"), "rediss://:***@host");
/// assert_eq!(delayq::redact_url("redis://host:6379"), "redis://host:6379");
/// ```
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    // The authority ends at the first '/', '?' or '#'; userinfo ends at its last '@'.
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let redacted_query = redact_query(tail);
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => {
            let user = userinfo.split_once(':').map_or(userinfo, |(user, _)| user);
            let hidden = if userinfo.contains(':') {
                format!("{user}:***")
            } else {
                // `redis://secret@host`: a lone userinfo is the password for fred.
                "***".to_owned()
            };
            format!("{scheme}://{hidden}@{host}{redacted_query}")
        }
        None => format!("{scheme}://{authority}{redacted_query}"),
    }
}

/// Query parameters that carry secrets (a Sentinel password) hidden too.
fn redact_query(tail: &str) -> String {
    let Some((path, query)) = tail.split_once('?') else {
        return tail.to_owned();
    };
    let params: Vec<String> = query
        .split('&')
        .map(|param| match param.split_once('=') {
            Some((name, _)) if name.to_ascii_lowercase().contains("password") => {
                format!("{name}=***")
            }
            _ => param.to_owned(),
        })
        .collect();
    format!("{path}?{}", params.join("&"))
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

#[cfg(test)]
mod tests {
    use super::redact_url;

    #[test]
    fn secrets_are_redacted() {
        let cases = [
            ("redis://127.0.0.1:6380", "redis://127.0.0.1:6380"),
            ("redis://:pw@h:1/2", "redis://:***@h:1/2"),
            ("rediss://app:p@ss:w@h:1", "rediss://app:***@h:1"),
            ("redis://secret@h:1", "redis://***@h:1"),
            (
                "redis-sentinel://u:p@h:1?node=h:2&sentinelServiceName=m&sentinelPassword=sp",
                "redis-sentinel://u:***@h:1?node=h:2&sentinelServiceName=m&sentinelPassword=***",
            ),
            ("not a url", "not a url"),
        ];
        for (url, shown) in cases {
            assert_eq!(redact_url(url), shown, "{url}");
        }
    }
}
