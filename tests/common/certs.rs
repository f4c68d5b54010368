//! Certificates made by `openssl` at test time: a CA, server and client certificates it signs,
//! and a second, unrelated CA (to see a server refused). EC P-256 keys, so making them is quick.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use tempfile::TempDir;

use super::temp_dir;

/// A fresh set of PEM files in a temp dir of their own (removed on drop).
///
/// - `ca.crt`: the CA that signs everything below.
/// - `server.crt`/`server.key`: for `127.0.0.1` and `localhost` (IP and DNS subject names),
///   usable as a client certificate too (Redis presents it to its peers for replication and the
///   cluster bus).
/// - `named.crt`/`named.key`: for [`TestCerts::NAMED_HOST`] only, to test the server-name option.
/// - `client.crt`/`client.key`: a client certificate for mutual TLS.
/// - `other-ca.crt`: a CA that signed none of them.
/// - `client-v1.crt`: see [`TestCerts::v1_client`].
#[derive(Debug)]
pub struct TestCerts {
    dir: TempDir,
}

impl TestCerts {
    /// The only name in `named.crt`.
    pub const NAMED_HOST: &'static str = "redis.delayq.test";

    /// Makes the CA and the certificates with `openssl`.
    pub fn generate() -> TestCerts {
        let dir = temp_dir("delayq-certs-");
        let certs = TestCerts { dir };
        certs.make_ca("ca", "delayq test CA");
        certs.make_ca("other-ca", "unrelated test CA");
        certs.leaf(
            "server",
            "delayq test server",
            "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n",
        );
        certs.leaf(
            "named",
            "delayq named server",
            &format!(
                "subjectAltName=DNS:{}\nextendedKeyUsage=serverAuth,clientAuth\n",
                TestCerts::NAMED_HOST
            ),
        );
        certs.leaf(
            "client",
            "delayq test client",
            "extendedKeyUsage=clientAuth\n",
        );
        certs
    }

    /// The path of one of the files (`ca.crt`, `server.key`, ...).
    pub fn path(&self, file: &str) -> PathBuf {
        self.dir.path().join(file)
    }

    /// `client-v1.crt`: the client certificate's key and subject, signed by `ca.crt` without
    /// extensions, which makes it X.509 v1 (which rustls does not accept); made on first call.
    pub fn v1_client(&self) -> PathBuf {
        let out = self.path("client-v1.crt");
        if !out.exists() {
            openssl(
                &[
                    "x509",
                    "-req",
                    "-in",
                    &self.file("client.csr"),
                    "-CA",
                    &self.file("ca.crt"),
                    "-CAkey",
                    &self.file("ca.key"),
                    "-CAcreateserial",
                    "-days",
                    "2",
                    "-out",
                    &out.to_string_lossy(),
                ],
                self.dir.path(),
            );
        }
        out
    }

    /// The trusted CA's certificate.
    pub fn ca(&self) -> PathBuf {
        self.path("ca.crt")
    }

    fn file(&self, name: &str) -> String {
        self.path(name).to_string_lossy().into_owned()
    }

    /// A self-signed CA certificate `NAME.crt` with its key `NAME.key`.
    fn make_ca(&self, name: &str, subject: &str) {
        let key = self.file(&format!("{name}.key"));
        openssl(
            &[
                "genpkey",
                "-algorithm",
                "EC",
                "-pkeyopt",
                "ec_paramgen_curve:P-256",
                "-out",
                &key,
            ],
            self.dir.path(),
        );
        openssl(
            &[
                "req",
                "-x509",
                "-new",
                "-key",
                &key,
                "-days",
                "2",
                "-subj",
                &format!("/CN={subject}"),
                "-addext",
                "basicConstraints=critical,CA:TRUE",
                "-addext",
                "keyUsage=critical,keyCertSign,cRLSign",
                "-out",
                &self.file(&format!("{name}.crt")),
            ],
            self.dir.path(),
        );
    }

    /// A certificate `NAME.crt` (key `NAME.key`) signed by `ca.crt`, with `extensions`.
    fn leaf(&self, name: &str, subject: &str, extensions: &str) {
        let key = self.file(&format!("{name}.key"));
        let csr = self.file(&format!("{name}.csr"));
        let ext = self.path(&format!("{name}.ext"));
        std::fs::write(&ext, extensions)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", ext.display()));
        openssl(
            &[
                "genpkey",
                "-algorithm",
                "EC",
                "-pkeyopt",
                "ec_paramgen_curve:P-256",
                "-out",
                &key,
            ],
            self.dir.path(),
        );
        openssl(
            &[
                "req",
                "-new",
                "-key",
                &key,
                "-subj",
                &format!("/CN={subject}"),
                "-out",
                &csr,
            ],
            self.dir.path(),
        );
        openssl(
            &[
                "x509",
                "-req",
                "-in",
                &csr,
                "-CA",
                &self.file("ca.crt"),
                "-CAkey",
                &self.file("ca.key"),
                "-CAcreateserial",
                "-days",
                "2",
                "-extfile",
                &ext.to_string_lossy(),
                "-out",
                &self.file(&format!("{name}.crt")),
            ],
            self.dir.path(),
        );
    }
}

/// Runs `openssl args...` in `dir`; panics with its output when it fails.
fn openssl(args: &[&str], dir: &Path) {
    let output = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run openssl (is it installed?): {e}"));
    if !output.status.success() {
        panic!(
            "openssl {} failed ({}): {}{}",
            args.join(" "),
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
}
