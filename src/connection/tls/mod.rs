//! TLS: [`TlsOptions`], and (feature `tls`) the rustls client configuration built from them
//! (`connector.rs`).

#[cfg(feature = "tls")]
mod connector;

#[cfg(not(feature = "tls"))]
use crate::{Error, Result};
#[cfg(not(feature = "tls"))]
use fred::prelude::Config;
use std::fmt;
use std::path::PathBuf;

/// TLS settings for [`ConnectOptions::tls`](super::ConnectOptions::tls). Without any, a TLS URL
/// verifies the server against the system's CA certificates and the host name in the URL, and
/// sends no client certificate.
///
/// Files are PEM. They are read when the client is built, so a missing or malformed file fails
/// [`ConnectOptions::connect`](super::ConnectOptions::connect) at once with its path in the
/// message.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct TlsOptions {
    ca_file: Option<PathBuf>,
    client_cert: Option<(PathBuf, PathBuf)>,
    server_name: Option<String>,
    insecure: bool,
}

impl fmt::Debug for TlsOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsOptions")
            .field("ca_file", &self.ca_file)
            .field("client_cert", &self.client_cert)
            .field("server_name", &self.server_name)
            .field("insecure", &self.insecure)
            .finish()
    }
}

impl TlsOptions {
    /// No settings: system CAs, the URL's host name, no client certificate.
    pub fn new() -> TlsOptions {
        TlsOptions::default()
    }

    /// Trust the CA certificates in this PEM file (one or more), instead of the system's.
    pub fn ca_file(mut self, path: impl Into<PathBuf>) -> TlsOptions {
        self.ca_file = Some(path.into());
        self
    }

    /// Present this client certificate (PEM chain, leaf first) with its private key (PEM:
    /// PKCS#8, PKCS#1 or SEC1), for servers that require one (`tls-auth-clients yes`).
    pub fn client_cert(
        mut self,
        cert_file: impl Into<PathBuf>,
        key_file: impl Into<PathBuf>,
    ) -> TlsOptions {
        self.client_cert = Some((cert_file.into(), key_file.into()));
        self
    }

    /// The name the server's certificate must carry (and the SNI sent where fred allows),
    /// instead of the host in the URL or the addresses that Cluster and Sentinel hand out: for
    /// servers reached by IP address or through a tunnel.
    pub fn server_name(mut self, name: impl Into<String>) -> TlsOptions {
        self.server_name = Some(name.into());
        self
    }

    /// Do not verify the server's certificate at all: the connection is encrypted but anyone
    /// in the path can pose as the server. For tests only; delayq logs a warning each time it
    /// builds a client with it.
    pub fn insecure(mut self, insecure: bool) -> TlsOptions {
        self.insecure = insecure;
        self
    }

    /// Whether any setting differs from the defaults.
    pub fn is_set(&self) -> bool {
        *self != TlsOptions::default()
    }

    /// Whether certificate verification is off.
    pub fn is_insecure(&self) -> bool {
        self.insecure
    }
}

#[cfg(feature = "tls")]
pub(super) use connector::enable;

/// Without the `tls` feature: refuses, rather than connect in plaintext.
#[cfg(not(feature = "tls"))]
pub(super) fn enable(_config: &mut Config, _tls: &TlsOptions) -> Result<()> {
    Err(Error::InvalidConfig(
        "the URL asks for TLS, and this build of delayq has no TLS support (enable its `tls` \
         feature); refusing to connect in plaintext"
            .into(),
    ))
}
