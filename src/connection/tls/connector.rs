//! TLS through rustls (feature `tls`): the client configuration built from [`TlsOptions`].
//!
//! delayq builds the rustls `ClientConfig` itself, naming the ring provider, rather than letting
//! fred build a default one: that way a CA file, a client certificate and a server name can be
//! given, and an application that also links another rustls provider does not make
//! `ClientConfig::builder()` panic for want of a process-wide default.

use super::TlsOptions;
use crate::{Error, Result};
use fred::prelude::{Config, ServerConfig};
use fred::rustls::client::danger::{
    HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier,
};
use fred::rustls::client::WebPkiServerVerifier;
use fred::rustls::crypto::{ring, verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use fred::rustls::pki_types::pem::PemObject;
use fred::rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use fred::rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use fred::types::config::{HostMapping, TlsConfig, TlsConnector, TlsHostMapping};
use std::net::IpAddr;
use std::path::Path;
use std::sync::Arc;

/// Sets `config.tls` from `options`, and the server name on every configured host.
pub(in crate::connection) fn enable(config: &mut Config, options: &TlsOptions) -> Result<()> {
    let client_config = client_config(options)?;
    let hostnames = match options.server_name.as_deref() {
        // Cluster nodes found through CLUSTER SLOTS get the name too (as SNI and to verify).
        Some(name) => TlsHostMapping::Custom(Arc::new(FixedName(name.to_string()))),
        None => TlsHostMapping::None,
    };
    if let Some(name) = options.server_name.as_deref() {
        let name = fred::bytes_utils::Str::from(name);
        match &mut config.server {
            ServerConfig::Centralized { server } => server.tls_server_name = Some(name),
            ServerConfig::Clustered { hosts, .. } | ServerConfig::Sentinel { hosts, .. } => {
                for host in hosts {
                    host.tls_server_name = Some(name.clone());
                }
            }
            // A Unix socket (fred's `unix-sockets` feature, if an application turns it on).
            #[allow(unreachable_patterns)]
            _ => {}
        }
    }
    config.tls = Some(TlsConfig {
        connector: TlsConnector::from(client_config),
        hostnames,
    });
    Ok(())
}

/// The rustls client configuration: roots, verifier, client certificate.
fn client_config(options: &TlsOptions) -> Result<ClientConfig> {
    let provider = Arc::new(ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| tls_error("no TLS protocol version available", e))?;
    let builder = if options.is_insecure() {
        tracing::warn!(
            "TLS certificate verification is OFF (insecure mode): the connection is encrypted, \
             but any server can pose as Redis"
        );
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(Verifier {
                inner: None,
                server_name: None,
                provider,
            }))
    } else {
        let roots = Arc::new(roots(options.ca_file.as_deref())?);
        match options.server_name.as_deref() {
            None => builder.with_root_certificates(roots),
            Some(name) => {
                let server_name = ServerName::try_from(name.to_string()).map_err(|e| {
                    Error::InvalidConfig(format!("TLS server name {name:?} is not valid: {e}"))
                })?;
                let inner = WebPkiServerVerifier::builder_with_provider(roots, provider.clone())
                    .build()
                    .map_err(|e| tls_error("cannot build the certificate verifier", e))?;
                builder
                    .dangerous()
                    .with_custom_certificate_verifier(Arc::new(Verifier {
                        inner: Some(inner),
                        server_name: Some(server_name),
                        provider,
                    }))
            }
        }
    };
    match options
        .client_cert
        .as_ref()
        .map(|(cert, key)| (cert.as_path(), key.as_path()))
    {
        None => Ok(builder.with_no_client_auth()),
        Some((cert_file, key_file)) => {
            let chain = certificates(cert_file, "client certificate")?;
            if x509_version(&chain[0]) == Some(1) {
                return Err(Error::InvalidConfig(format!(
                    "the client certificate {} is an X.509 v1 certificate, which rustls does \
                     not accept: make a v3 one (OpenSSL makes v3 when given extensions, such as \
                     `openssl x509 -req ... -extfile FILE` with the line \
                     `extendedKeyUsage=clientAuth`)",
                    cert_file.display()
                )));
            }
            let key = PrivateKeyDer::from_pem_file(key_file).map_err(|e| {
                Error::InvalidConfig(format!(
                    "cannot read a private key from {}: {e}",
                    key_file.display()
                ))
            })?;
            builder.with_client_auth_cert(chain, key).map_err(|e| {
                let (cert, key) = (cert_file.display(), key_file.display());
                Error::InvalidConfig(match e {
                    fred::rustls::Error::InconsistentKeys(_) => {
                        format!(
                            "the private key {key} is not the key of the client certificate {cert}"
                        )
                    }
                    e => {
                        format!("cannot use the client certificate {cert} with the key {key}: {e}")
                    }
                })
            })
        }
    }
}

fn tls_error(what: &str, err: impl std::fmt::Display) -> Error {
    Error::InvalidConfig(format!("{what}: {err}"))
}

/// The certificates of a PEM file; at least one.
fn certificates(path: &Path, what: &str) -> Result<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| {
            Error::InvalidConfig(format!("cannot read the {what} {}: {e}", path.display()))
        })?;
    if certs.is_empty() {
        return Err(Error::InvalidConfig(format!(
            "the {what} file {} holds no PEM certificate",
            path.display()
        )));
    }
    Ok(certs)
}

/// The X.509 version (1, 2 or 3) of a DER certificate, if its start parses: v1 certificates
/// leave out the `[0]` version field that v2 and v3 ones begin their to-be-signed part with.
fn x509_version(der: &[u8]) -> Option<u8> {
    // Certificate ::= SEQUENCE { tbsCertificate SEQUENCE { [0] EXPLICIT INTEGER OPTIONAL, ...
    let tbs = der_contents(der, 0x30)?;
    let fields = der_contents(tbs, 0x30)?;
    if fields.first() != Some(&0xA0) {
        return Some(1);
    }
    let version = der_contents(der_contents(fields, 0xA0)?, 0x02)?;
    version.last().map(|v| v.saturating_add(1))
}

/// The contents of the DER element with tag `tag` at the start of `bytes` (cut short if
/// `bytes` is).
fn der_contents(bytes: &[u8], tag: u8) -> Option<&[u8]> {
    let (&first, rest) = bytes.split_first()?;
    let (&len_byte, rest) = rest.split_first()?;
    if first != tag {
        return None;
    }
    let (len, rest) = if len_byte < 0x80 {
        (usize::from(len_byte), rest)
    } else {
        let n = usize::from(len_byte & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |len, &b| len << 8 | usize::from(b));
        (len, &rest[n..])
    };
    rest.get(..len.min(rest.len()))
}

/// The trusted roots: the CA file's certificates, or the system's.
fn roots(ca_file: Option<&Path>) -> Result<RootCertStore> {
    let mut store = RootCertStore::empty();
    match ca_file {
        Some(path) => {
            for cert in certificates(path, "CA file")? {
                store.add(cert).map_err(|e| {
                    Error::InvalidConfig(format!("a CA in {} is not usable: {e}", path.display()))
                })?;
            }
        }
        None => {
            let found = fred::rustls_native_certs::load_native_certs();
            for err in &found.errors {
                tracing::debug!(%err, "a system CA certificate could not be loaded");
            }
            let (added, _ignored) = store.add_parsable_certificates(found.certs);
            if added == 0 {
                return Err(Error::InvalidConfig(
                    "no CA certificates found on this system; give a CA file".into(),
                ));
            }
        }
    }
    Ok(store)
}

/// Verifies against a fixed server name (whatever host fred dialled), or not at all (insecure
/// mode: `inner` is `None`). Handshake signatures are always checked.
#[derive(Debug)]
struct Verifier {
    inner: Option<Arc<WebPkiServerVerifier>>,
    server_name: Option<ServerName<'static>>,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, fred::rustls::Error> {
        match &self.inner {
            None => Ok(ServerCertVerified::assertion()),
            Some(inner) => inner.verify_server_cert(
                end_entity,
                intermediates,
                self.server_name.as_ref().unwrap_or(server_name),
                ocsp_response,
                now,
            ),
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, fred::rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, fred::rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// Gives every Cluster node found through `CLUSTER SLOTS` the configured server name.
#[derive(Debug)]
struct FixedName(String);

impl HostMapping for FixedName {
    fn map(&self, _ip: &IpAddr, _default_host: &str) -> Option<String> {
        Some(self.0.clone())
    }
}
