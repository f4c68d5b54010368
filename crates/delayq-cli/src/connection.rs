//! The connection options every command takes (timeouts, reconnects, TLS, the sentinels'
//! credentials).

use crate::duration::parse_duration;
use clap::Args;
use delayq::fred::prelude::ReconnectPolicy;
use delayq::{ConnectOptions, TlsFailure, TlsOptions};
use std::path::PathBuf;
use std::time::Duration;

/// Connection settings (flags, or the environment variables named in `--help`).
#[derive(Debug, Args)]
pub(crate) struct ConnectionArgs {
    /// How long connecting may take in all (TCP, TLS handshake, AUTH, Sentinel or Cluster
    /// discovery); 0: no limit.
    #[arg(long, global = true, env = "DELAYQ_CONNECT_TIMEOUT", value_parser = parse_duration, default_value = "10s")]
    connect_timeout: Duration,

    /// How long a command may wait for its reply; 0: no limit.
    #[arg(long, global = true, env = "DELAYQ_COMMAND_TIMEOUT", value_parser = parse_duration, default_value = "30s")]
    command_timeout: Duration,

    /// Reconnect attempts in a row before a lost connection is given up (0: never give up).
    #[arg(
        long,
        global = true,
        env = "DELAYQ_RECONNECT_ATTEMPTS",
        default_value_t = 0
    )]
    reconnect_attempts: u32,

    /// Longest wait between reconnect attempts (they start at 100ms and double).
    #[arg(long, global = true, env = "DELAYQ_RECONNECT_MAX_DELAY", value_parser = parse_duration, default_value = "5s")]
    reconnect_max_delay: Duration,

    /// TLS (rediss:// URLs): PEM file of the CA certificates to trust instead of the system's.
    #[arg(long, global = true, env = "DELAYQ_TLS_CA_FILE")]
    tls_ca_file: Option<PathBuf>,

    /// TLS: PEM client certificate (chain) for servers that require one; with --tls-key-file.
    #[arg(
        long,
        global = true,
        env = "DELAYQ_TLS_CERT_FILE",
        requires = "tls_key_file"
    )]
    tls_cert_file: Option<PathBuf>,

    /// TLS: PEM private key of --tls-cert-file.
    #[arg(
        long,
        global = true,
        env = "DELAYQ_TLS_KEY_FILE",
        requires = "tls_cert_file"
    )]
    tls_key_file: Option<PathBuf>,

    /// TLS: the name the server's certificate must carry, instead of the URL's host.
    #[arg(long, global = true, env = "DELAYQ_TLS_SERVER_NAME")]
    tls_server_name: Option<String>,

    /// TLS: do not verify the server's certificate (encrypted, but not authenticated: anyone in
    /// the path can pose as the server). For tests only; a warning is printed.
    #[arg(long, global = true, env = "DELAYQ_TLS_INSECURE")]
    tls_insecure: bool,

    /// Sentinel: the sentinels' ACL user (instead of sentinelUsername in the URL).
    #[arg(
        long,
        global = true,
        env = "DELAYQ_SENTINEL_USERNAME",
        requires = "sentinel_password",
        hide_env_values = true
    )]
    sentinel_username: Option<String>,

    /// Sentinel: the sentinels' password (instead of sentinelPassword in the URL); prefer the
    /// environment variable, which other users cannot read in the process list.
    #[arg(
        long,
        global = true,
        env = "DELAYQ_SENTINEL_PASSWORD",
        hide_env_values = true
    )]
    sentinel_password: Option<String>,
}

impl ConnectionArgs {
    /// The library's options from the flags.
    pub(crate) fn options(&self) -> ConnectOptions {
        let mut tls = TlsOptions::new().insecure(self.tls_insecure);
        if let Some(path) = &self.tls_ca_file {
            tls = tls.ca_file(path);
        }
        if let (Some(cert), Some(key)) = (&self.tls_cert_file, &self.tls_key_file) {
            tls = tls.client_cert(cert, key);
        }
        if let Some(name) = &self.tls_server_name {
            tls = tls.server_name(name);
        }
        let max_delay = u32::try_from(self.reconnect_max_delay.as_millis())
            .unwrap_or(u32::MAX)
            .max(100);
        let mut options = ConnectOptions::new()
            .connect_timeout(self.connect_timeout)
            .command_timeout(self.command_timeout)
            .reconnect(ReconnectPolicy::new_exponential(
                self.reconnect_attempts,
                100,
                max_delay,
                2,
            ))
            .tls(tls);
        if let Some(password) = &self.sentinel_password {
            options = options.sentinel_credentials(self.sentinel_username.as_deref(), password);
        }
        options
    }
}

/// What to do about a TLS failure, in the command line's flags.
pub(crate) fn tls_hint(failure: TlsFailure) -> &'static str {
    match failure {
        TlsFailure::UnknownIssuer => {
            "trust the CA that signed the server's certificate with --tls-ca-file"
        }
        TlsFailure::WrongName => {
            "give a name the server's certificate carries with --tls-server-name"
        }
        TlsFailure::Expired => "renew the server's certificate, or check this host's clock",
        TlsFailure::ClientCertificateRequired => {
            "give a client certificate with --tls-cert-file and --tls-key-file"
        }
        TlsFailure::ClientCertificateRefused => {
            "give a client certificate signed by a CA the server trusts (--tls-cert-file, \
             --tls-key-file)"
        }
        _ => "check the server's certificate (--tls-insecure skips verification, for tests only)",
    }
}

/// The URL forms fred reads; anything else is a usage error (not a DNS failure later).
pub(crate) fn parse_url(text: &str) -> Result<String, String> {
    const SCHEMES: [&str; 13] = [
        "redis",
        "rediss",
        "redis-cluster",
        "rediss-cluster",
        "redis-sentinel",
        "rediss-sentinel",
        "valkey",
        "valkeys",
        "valkey-cluster",
        "valkeys-cluster",
        "valkey-sentinel",
        "valkeys-sentinel",
        "unix",
    ];
    match text.split_once("://") {
        Some((scheme, rest)) if SCHEMES.contains(&scheme) && !rest.is_empty() => {
            Ok(text.to_owned())
        }
        Some((scheme, _)) => Err(format!(
            "unknown URL scheme {scheme:?}: use {}",
            SCHEMES.map(|s| format!("{s}://")).join(", ")
        )),
        None => Err("a Redis URL looks like redis://host:port".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_checked_as_usage() {
        assert!(parse_url("redis://127.0.0.1:6380").is_ok());
        assert!(parse_url("rediss-cluster://h:1?node=h:2").is_ok());
        assert!(parse_url("http://127.0.0.1")
            .unwrap_err()
            .contains("unknown URL scheme"));
        assert!(parse_url("127.0.0.1:6379").is_err());
    }
}
