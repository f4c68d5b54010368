//! What harness servers get beyond the defaults ([`Setup`]: a password, TLS), and which server
//! program runs (`DELAYQ_TEST_SERVER`: Redis or Valkey).

use std::ffi::OsString;
use std::sync::Arc;

use super::certs::TestCerts;

/// The data-node program: `$DELAYQ_TEST_SERVER` (a path to `valkey-server`, say) or
/// `redis-server`. Sentinels run the same program with `--sentinel` (Redis: `redis-sentinel`).
pub fn server_program() -> String {
    match std::env::var("DELAYQ_TEST_SERVER") {
        Ok(program) if !program.trim().is_empty() => program.trim().to_string(),
        _ => "redis-server".to_string(),
    }
}

/// The sentinel program and the arguments it takes after its config file.
pub fn sentinel_program() -> (String, Vec<OsString>) {
    let server = server_program();
    if server == "redis-server" {
        ("redis-sentinel".to_string(), Vec::new())
    } else {
        (server, vec![OsString::from("--sentinel")])
    }
}

/// Whether the servers are Valkey's (`DELAYQ_TEST_SERVER` names `valkey-server`).
pub fn is_valkey() -> bool {
    server_program().contains("valkey")
}

/// Extra set-up for the harness's servers. The default is none: plaintext, no password.
///
/// With TLS, a server listens on a TLS port *and* its plaintext port: the harness keeps using
/// the plaintext one for its own checks, and the URLs it hands out name the TLS ports.
#[derive(Clone, Debug, Default)]
pub struct Setup {
    /// `requirepass` of the data nodes (and their `masterauth`, for replication).
    pub password: Option<String>,
    /// The sentinels' own `requirepass` ([`TestSentinel`](super::TestSentinel) only).
    pub sentinel_password: Option<String>,
    /// TLS with these certificates (the server presents `server.crt`).
    pub tls: Option<Arc<TestCerts>>,
    /// Present `named.crt` (for [`TestCerts::NAMED_HOST`] only) instead of `server.crt`.
    pub named_cert: bool,
    /// Require client certificates signed by the CA (`tls-auth-clients yes`).
    pub client_certs: bool,
}

impl Setup {
    /// TLS with `certs`, no password.
    pub fn tls(certs: &Arc<TestCerts>) -> Setup {
        Setup {
            tls: Some(certs.clone()),
            ..Setup::default()
        }
    }

    /// `requirepass password`, plaintext.
    pub fn password(password: &str) -> Setup {
        Setup {
            password: Some(password.to_string()),
            ..Setup::default()
        }
    }

    /// The URL scheme for this set-up: `redis` or `rediss`, with `suffix` (`-cluster`, ...).
    pub fn scheme(&self, suffix: &str) -> String {
        let base = if self.tls.is_some() {
            "rediss"
        } else {
            "redis"
        };
        format!("{base}{suffix}")
    }

    /// `:PASSWORD@` for URLs, or nothing.
    pub fn userinfo(&self) -> String {
        self.password
            .as_ref()
            .map_or(String::new(), |p| format!(":{p}@"))
    }

    /// The TLS arguments of a server listening for TLS on `tls_port` (none without TLS). The
    /// same certificate serves as the client certificate towards other servers (replication,
    /// the cluster bus) and Sentinel.
    pub fn tls_args(&self, tls_port: u16) -> Vec<String> {
        let Some(certs) = &self.tls else {
            return Vec::new();
        };
        let cert = if self.named_cert { "named" } else { "server" };
        let path = |f: &str| certs.path(f).to_string_lossy().into_owned();
        vec![
            "--tls-port".into(),
            tls_port.to_string(),
            "--tls-cert-file".into(),
            path(&format!("{cert}.crt")),
            "--tls-key-file".into(),
            path(&format!("{cert}.key")),
            "--tls-ca-cert-file".into(),
            path("ca.crt"),
            "--tls-auth-clients".into(),
            (if self.client_certs { "yes" } else { "no" }).into(),
        ]
    }

    /// `--requirepass` and `--masterauth` when there is a password.
    pub fn auth_args(&self) -> Vec<String> {
        match &self.password {
            Some(password) => vec![
                "--requirepass".into(),
                password.clone(),
                "--masterauth".into(),
                password.clone(),
            ],
            None => Vec::new(),
        }
    }
}
