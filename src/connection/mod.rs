//! Connecting: [`connect`], [`client_builder`] and [`connect_with`], with [`ConnectOptions`]
//! (`options.rs`) and [`TlsOptions`] (`tls/`, with the rustls connector), and [`redact_url`]
//! for showing a URL without its secrets. What a client does once built (the first connection
//! bounded, Sentinel's master switches) is `redis/`'s.

mod options;
mod tls;

pub use options::ConnectOptions;
pub use tls::TlsOptions;

use crate::redis::init_client;
use crate::Result;
use fred::clients::Client;
use fred::prelude::{Builder, Config};

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

/// `url` with its password replaced by `***` (and nothing else changed), for messages and logs.
///
/// # Examples
///
/// ```
/// assert_eq!(
///     delayq::names::redact_url("redis://app:S3cret@10.0.0.5:6380/2"),
///     "redis://app:***@10.0.0.5:6380/2"
/// );
/// assert_eq!(delayq::names::redact_url("rediss://:pw@host"), "rediss://:***@host");
/// assert_eq!(delayq::names::redact_url("redis://host:6379"), "redis://host:6379");
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
