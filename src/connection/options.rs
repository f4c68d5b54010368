//! Connection settings in one place ([`ConnectOptions`]): timeouts, the reconnect policy, TLS
//! ([`TlsOptions`]) and Sentinel's own credentials.

use super::tls::TlsOptions;
use crate::{Error, Result};
use fred::prelude::{Builder, Config, ReconnectPolicy, ServerConfig};
use std::fmt;
use std::time::Duration;

/// How delayq connects to Redis: the settings every connection it opens shares (the client from
/// [`connect`](Self::connect), and the extra connections that schedulers, consumers and the
/// Sentinel listener open from it).
///
/// The defaults are those of [`delayq::connect`](crate::connect): 10 s to connect, 30 s per
/// command, reconnecting forever (100 ms doubling to 5 s), TLS only when the URL says so, with
/// the system's CA certificates.
///
/// # URLs
///
/// fred's forms, with credentials in the URL (percent-encoded):
///
/// - `redis://[[user]:password@]host:port[/db]`, TLS: `rediss://...`
/// - `redis-cluster://[[user]:password@]host:port?node=host:port&node=...`, TLS: `rediss-cluster://`
/// - `redis-sentinel://[[user]:password@]host:port[/db]?node=host:port&sentinelServiceName=NAME
///   [&sentinelUsername=U][&sentinelPassword=P]`, TLS: `rediss-sentinel://` (sentinels and data
///   nodes alike). The user and password before `@` are the data nodes'; sentinels get only
///   `sentinelUsername`/`sentinelPassword` (or [`sentinel_credentials`](Self::sentinel_credentials)).
///
/// `valkey`/`valkeys` work in place of `redis`/`rediss`. A TLS URL in a build without the `tls`
/// feature is an error, never a plaintext connection.
///
/// # Examples
///
/// ```no_run
/// # async fn ex() -> Result<(), delayq::Error> {
/// use delayq::{ConnectOptions, TlsOptions};
/// use std::time::Duration;
///
/// let client = ConnectOptions::new()
///     .connect_timeout(Duration::from_secs(3))
///     .command_timeout(Duration::from_secs(5))
///     .tls(TlsOptions::new().ca_file("/etc/redis/ca.pem"))
///     .connect("rediss://delayq:secret@redis.internal:6380")
///     .await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct ConnectOptions {
    pub(super) connect_timeout: Duration,
    pub(super) command_timeout: Duration,
    reconnect: ReconnectPolicy,
    tls: TlsOptions,
    sentinel_credentials: Option<(Option<String>, String)>,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            connect_timeout: Duration::from_secs(10),
            command_timeout: Duration::from_secs(30),
            reconnect: ReconnectPolicy::new_exponential(0, 100, 5_000, 2),
            tls: TlsOptions::default(),
            sentinel_credentials: None,
        }
    }
}

impl fmt::Debug for ConnectOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The sentinel password is never printed.
        let sentinel = self
            .sentinel_credentials
            .as_ref()
            .map(|(user, _)| format!("user {user:?}, password set"));
        f.debug_struct("ConnectOptions")
            .field("connect_timeout", &self.connect_timeout)
            .field("command_timeout", &self.command_timeout)
            .field("reconnect", &self.reconnect)
            .field("tls", &self.tls)
            .field("sentinel_credentials", &sentinel)
            .finish()
    }
}

impl ConnectOptions {
    /// The defaults (see the type's docs).
    pub fn new() -> ConnectOptions {
        ConnectOptions::default()
    }

    /// How long a connection may take to be ready, in all: TCP connect, TLS handshake, `AUTH`,
    /// and Sentinel or Cluster discovery. [`connect`](Self::connect) fails after this long, with
    /// an error that says how long it waited; the same bound applies to the first connection of
    /// every extra connection (schedulers, consumers) and to each reconnect attempt and internal
    /// command (`AUTH`, `CLUSTER SLOTS`). Default 10 s; zero means no limit.
    pub fn connect_timeout(mut self, timeout: Duration) -> ConnectOptions {
        self.connect_timeout = timeout;
        self
    }

    /// How long a command may wait for its reply (or for a reconnect before it can be sent)
    /// before it fails with a timeout. Blocking waits of [`Consumer`](crate::Consumer) and
    /// [`ReliableConsumer`](crate::ReliableConsumer) set their own, longer limit. Default 30 s;
    /// zero means no limit (a command then waits for as long as Redis is unreachable).
    pub fn command_timeout(mut self, timeout: Duration) -> ConnectOptions {
        self.command_timeout = timeout;
        self
    }

    /// How lost connections are re-established. Default: forever, 100 ms doubling to 5 s
    /// (`ReconnectPolicy::new_exponential(0, 100, 5_000, 2)`), so schedulers and consumers
    /// survive restarts and failovers. With a bounded policy, a client that used up its
    /// attempts stays disconnected and its commands fail.
    pub fn reconnect(mut self, policy: ReconnectPolicy) -> ConnectOptions {
        self.reconnect = policy;
        self
    }

    /// TLS settings (CA file, client certificate, server name). They apply to TLS URLs only:
    /// given with a plaintext URL they are an error rather than ignored.
    pub fn tls(mut self, tls: TlsOptions) -> ConnectOptions {
        self.tls = tls;
        self
    }

    /// The credentials sentinels ask for (their own `requirepass` or ACL user), instead of the
    /// URL's `sentinelUsername`/`sentinelPassword`. Only for Sentinel URLs.
    pub fn sentinel_credentials(
        mut self,
        username: Option<&str>,
        password: &str,
    ) -> ConnectOptions {
        self.sentinel_credentials = Some((username.map(str::to_string), password.to_string()));
        self
    }

    /// Parses `url` into a fred [`Config`] with these options' TLS settings and Sentinel
    /// credentials.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidConfig`] for a TLS URL without the `tls` feature, TLS options with a
    /// plaintext URL, Sentinel credentials with a URL that is not Sentinel's, or TLS files that
    /// cannot be read; [`Error::Redis`] for a URL fred cannot parse.
    pub fn config(&self, url: &str) -> Result<Config> {
        let (tls, plain_url) = split_tls_scheme(url);
        if !tls && self.tls.is_set() {
            return Err(Error::InvalidConfig(format!(
                "TLS options were given but the URL's scheme ({}://) is plaintext; use rediss:// \
                 (rediss-cluster://, rediss-sentinel://)",
                scheme(url)
            )));
        }
        let mut config = Config::from_url(&plain_url)?;
        if let Some((username, password)) = &self.sentinel_credentials {
            let ServerConfig::Sentinel {
                username: sentinel_username,
                password: sentinel_password,
                ..
            } = &mut config.server
            else {
                return Err(Error::InvalidConfig(
                    "Sentinel credentials were given for a URL that is not redis-sentinel://"
                        .into(),
                ));
            };
            *sentinel_username = username.clone();
            *sentinel_password = Some(password.clone());
        }
        if tls {
            super::tls::enable(&mut config, &self.tls)?;
        }
        Ok(config)
    }

    /// A fred [`Builder`] for `url` with these options and delayq's safety settings (see
    /// [`client_builder`](crate::client_builder)), for [`connect_with`](crate::connect_with)
    /// after changes of your own.
    ///
    /// # Errors
    ///
    /// As for [`config`](Self::config).
    pub fn builder(&self, url: &str) -> Result<Builder> {
        Ok(self.builder_for(self.config(url)?))
    }

    /// A fred [`Builder`] for a `config` you made, with these options' timeouts and reconnect
    /// policy and delayq's safety settings. The config's own TLS and credentials are kept (these
    /// options' TLS and Sentinel settings apply only through [`config`](Self::config)).
    pub fn builder_for(&self, config: Config) -> Builder {
        super::safe_builder(config, self)
    }

    /// Connects a client to `url` with these options (see [`connect_with`](crate::connect_with)
    /// for what it does once connected).
    ///
    /// # Errors
    ///
    /// As for [`config`](Self::config); a timeout error that says how long it waited when no
    /// connection was ready within the connect timeout; fred's error when the server refused
    /// (connection refused, `WRONGPASS`, a failed TLS handshake).
    pub async fn connect(&self, url: &str) -> Result<fred::clients::Client> {
        super::connect_with(&self.builder(url)?).await
    }

    pub(super) fn reconnect_policy(&self) -> ReconnectPolicy {
        self.reconnect.clone()
    }
}

/// The URL's scheme (before `://`), lowercased.
fn scheme(url: &str) -> String {
    url.split_once("://")
        .map_or("", |(scheme, _)| scheme)
        .to_ascii_lowercase()
}

/// Whether `url` asks for TLS (`rediss`, `valkeys`, with or without `-cluster`/`-sentinel`),
/// and the URL with its plaintext scheme, which fred parses without building a TLS connector of
/// its own (delayq builds the connector from [`TlsOptions`]).
fn split_tls_scheme(url: &str) -> (bool, String) {
    let Some((scheme, rest)) = url.split_once("://") else {
        return (false, url.to_string());
    };
    let lower = scheme.to_ascii_lowercase();
    for (tls, plain) in [("rediss", "redis"), ("valkeys", "valkey")] {
        if let Some(suffix) = lower.strip_prefix(tls) {
            return (true, format!("{plain}{suffix}://{rest}"));
        }
    }
    (false, url.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_schemes_are_recognised_and_made_plain_for_fred() {
        let cases = [
            ("rediss://h:1", true, "redis://h:1"),
            ("REDISS://h:1", true, "redis://h:1"),
            (
                "rediss-cluster://h:1?node=h:2",
                true,
                "redis-cluster://h:1?node=h:2",
            ),
            (
                "rediss-sentinel://h:1?sentinelServiceName=m",
                true,
                "redis-sentinel://h:1?sentinelServiceName=m",
            ),
            ("valkeys://h:1", true, "valkey://h:1"),
            ("redis://h:1", false, "redis://h:1"),
            ("redis-cluster://h:1", false, "redis-cluster://h:1"),
            ("valkey://h:1", false, "valkey://h:1"),
        ];
        for (url, tls, plain) in cases {
            assert_eq!(split_tls_scheme(url), (tls, plain.to_string()), "{url}");
        }
    }

    #[test]
    fn tls_options_with_a_plaintext_url_are_refused() {
        let options = ConnectOptions::new().tls(TlsOptions::new().server_name("redis.internal"));
        let err = options.config("redis://127.0.0.1:1").unwrap_err();
        assert!(
            matches!(&err, Error::InvalidConfig(m) if m.contains("plaintext")),
            "{err}"
        );
    }

    #[test]
    fn sentinel_credentials_need_a_sentinel_url() {
        let options = ConnectOptions::new().sentinel_credentials(None, "pw");
        assert!(options.config("redis://127.0.0.1:1").is_err());
        let config = options
            .config("redis-sentinel://127.0.0.1:1?sentinelServiceName=m")
            .unwrap();
        match config.server {
            ServerConfig::Sentinel {
                username, password, ..
            } => {
                assert_eq!(username, None);
                assert_eq!(password.as_deref(), Some("pw"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn debug_output_hides_the_sentinel_password() {
        let options = ConnectOptions::new().sentinel_credentials(Some("watcher"), "s3cret-pw");
        let text = format!("{options:?}");
        assert!(!text.contains("s3cret-pw"), "{text}");
        assert!(text.contains("watcher"), "{text}");
    }

    /// Without the `tls` feature a TLS URL is refused before anything is sent: a loopback
    /// listener on the URL's port sees no connection.
    #[cfg(not(feature = "tls"))]
    #[tokio::test]
    async fn tls_url_without_the_feature_is_refused_not_sent_in_plaintext() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        for url in [
            format!("rediss://127.0.0.1:{port}"),
            format!("rediss-cluster://127.0.0.1:{port}"),
            format!("rediss-sentinel://127.0.0.1:{port}?sentinelServiceName=m"),
        ] {
            let err = crate::connect(&url).await.unwrap_err();
            assert!(
                matches!(&err, Error::InvalidConfig(m) if m.contains("`tls` feature")),
                "{url}: {err}"
            );
        }
        let accepted = tokio::time::timeout(Duration::from_millis(300), listener.accept()).await;
        assert!(accepted.is_err(), "something connected to the listener");
    }
}
