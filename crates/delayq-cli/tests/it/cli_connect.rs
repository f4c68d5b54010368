//! The CLI's connection flags: TLS files, timeouts, and secrets kept out of its output.

use crate::common::{unique_name, Setup, TestCerts, TestRedis};
use std::net::{Ipv4Addr, TcpListener};
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn delayq(url: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_delayq"))
        .env("REDIS_URL", url)
        .env_remove("RUST_LOG")
        .args(args)
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A password in the URL (and a sentinel password) is never printed: not in the connect error
/// (it was: "cannot connect to redis://:PASSWORD@..."), not in `--help` (clap shows the
/// environment's values unless told not to).
#[test]
fn passwords_are_not_printed() {
    let port = {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        listener.local_addr().unwrap().port()
    };
    let url = format!(
        "redis-sentinel://:data-pw-123@127.0.0.1:{port}?sentinelServiceName=m&sentinelPassword=sentinel-pw-456"
    );
    let plain = format!("redis://app:data-pw-123@127.0.0.1:{port}");
    for url in [&url, &plain] {
        let out = delayq(url, &["stats", "q"]);
        assert!(!out.status.success());
        let err = text(&out.stderr);
        assert!(err.contains("cannot connect to"), "{err}");
        assert!(err.contains("***"), "{err}");
        assert!(
            !err.contains("data-pw-123") && !err.contains("sentinel-pw-456"),
            "{err}"
        );
    }
    let help = Command::new(env!("CARGO_BIN_EXE_delayq"))
        .env("REDIS_URL", &url)
        .env("DELAYQ_SENTINEL_PASSWORD", "sentinel-pw-456")
        .arg("--help")
        .output()
        .unwrap();
    let help = text(&help.stdout);
    assert!(help.contains("--tls-ca-file"), "{help}");
    assert!(
        !help.contains("data-pw-123") && !help.contains("sentinel-pw-456"),
        "{help}"
    );
}

#[test]
fn connect_timeout_flag_bounds_a_silent_server() {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let port = listener.local_addr().unwrap().port();
    let started = Instant::now();
    let out = delayq(
        &format!("redis://127.0.0.1:{port}"),
        &["--connect-timeout", "1500ms", "stats", "q"],
    );
    let took = started.elapsed();
    assert!(!out.status.success());
    let err = text(&out.stderr);
    // Well before the default connect timeout (10 s), which would mean the flag was lost.
    assert!(
        took >= Duration::from_millis(1_500) && took < Duration::from_secs(10),
        "took {took:?}: {err}"
    );
    assert!(err.contains("connect timeout 1.5 s"), "{err}");
}

#[test]
fn tls_flags() {
    let certs = Arc::new(TestCerts::generate());
    let setup = Setup {
        client_certs: true,
        named_cert: true,
        ..Setup::tls(&certs)
    };
    let redis = TestRedis::start_setup(&setup, &[]);
    let name = unique_name("cli-tls");
    let ca = certs.ca().display().to_string();
    let cert = certs.path("client.crt").display().to_string();
    let key = certs.path("client.key").display().to_string();
    let tls = [
        "--tls-ca-file",
        ca.as_str(),
        "--tls-cert-file",
        cert.as_str(),
        "--tls-key-file",
        key.as_str(),
        "--tls-server-name",
        TestCerts::NAMED_HOST,
    ];
    let with = |extra: &[&str]| {
        let mut args: Vec<&str> = tls.to_vec();
        args.extend(extra);
        delayq(&redis.url(), &args)
    };
    let offered = with(&["offer", &name, "hello"]);
    assert!(offered.status.success(), "{}", text(&offered.stderr));
    let moved = with(&["transfer", &name, "--once"]);
    assert!(moved.status.success(), "{}", text(&moved.stderr));
    let taken = with(&["take", &name, "--timeout", "5s"]);
    assert!(taken.status.success(), "{}", text(&taken.stderr));
    assert_eq!(text(&taken.stdout).trim(), "hello");

    // Without the client certificate the server refuses; without the server name the
    // certificate does not match 127.0.0.1.
    let no_cert = delayq(
        &redis.url(),
        &[
            "--tls-ca-file",
            &ca,
            "--tls-server-name",
            TestCerts::NAMED_HOST,
            "stats",
            &name,
        ],
    );
    assert!(!no_cert.status.success());
    let no_name = delayq(
        &redis.url(),
        &[
            "--tls-ca-file",
            &ca,
            "--tls-cert-file",
            &cert,
            "--tls-key-file",
            &key,
            "stats",
            &name,
        ],
    );
    assert!(!no_name.status.success());
    assert!(
        text(&no_name.stderr).contains("--tls-server-name"),
        "{}",
        text(&no_name.stderr)
    );

    // Insecure mode connects (the client certificate is still needed) and warns.
    let insecure = delayq(
        &redis.url(),
        &[
            "--tls-insecure",
            "--tls-cert-file",
            &cert,
            "--tls-key-file",
            &key,
            "stats",
            &name,
        ],
    );
    assert!(insecure.status.success(), "{}", text(&insecure.stderr));
    assert!(
        text(&insecure.stderr).contains("verification is OFF"),
        "{}",
        text(&insecure.stderr)
    );

    // TLS flags with a plaintext URL are refused rather than ignored.
    let plain = format!("redis://127.0.0.1:{}", redis.port);
    let refused = delayq(&plain, &["--tls-ca-file", &ca, "stats", &name]);
    assert!(!refused.status.success());
    assert!(
        text(&refused.stderr).contains("plaintext"),
        "{}",
        text(&refused.stderr)
    );
}

/// TLS failures are said in sentences that name the flag to use, not in rustls's Debug form,
/// and a bad client certificate is not blamed on the key or on the URL.
#[test]
fn tls_failures_name_the_flag_to_use() {
    let certs = Arc::new(TestCerts::generate());
    let setup = Setup {
        client_certs: true,
        named_cert: true,
        ..Setup::tls(&certs)
    };
    let redis = TestRedis::start_setup(&setup, &[]);
    let ca = certs.ca().display().to_string();
    let other_ca = certs.path("other-ca.crt").display().to_string();
    let cert = certs.path("client.crt").display().to_string();
    let key = certs.path("client.key").display().to_string();
    let v1 = certs.v1_client().display().to_string();
    let named = TestCerts::NAMED_HOST;
    let mut wrong = Vec::new();
    let mut fails = |args: &[&str], wanted: &[&str]| {
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["stats", "q"]);
        let out = delayq(&redis.url(), &all);
        let stderr = text(&out.stderr);
        let debug_forms = [
            "InvalidCertificate",
            "UnknownIssuer",
            "NotValidForName",
            "Custom {",
        ];
        if out.status.success()
            || debug_forms.iter().any(|d| stderr.contains(d))
            || stderr.contains("bad Redis URL")
            || !wanted.iter().all(|w| stderr.contains(w))
        {
            wrong.push(format!("{args:?} should say {wanted:?}: {stderr}"));
        }
    };
    let client = ["--tls-cert-file", &cert, "--tls-key-file", &key];
    // An issuer this host does not trust: with the system's CAs, and with another CA file.
    fails(
        &client,
        &["not signed by a CA this client trusts", "--tls-ca-file"],
    );
    let mut with_other_ca = vec![
        "--tls-ca-file",
        other_ca.as_str(),
        "--tls-server-name",
        named,
    ];
    with_other_ca.extend(client);
    fails(
        &with_other_ca,
        &["not signed by a CA this client trusts", "--tls-ca-file"],
    );
    // A certificate for another name than the URL's host.
    let mut no_name = vec!["--tls-ca-file", ca.as_str()];
    no_name.extend(client);
    fails(&no_name, &["127.0.0.1", "--tls-server-name"]);
    // No client certificate for a server that requires one.
    fails(
        &["--tls-ca-file", &ca, "--tls-server-name", named],
        &["client certificate", "--tls-cert-file"],
    );
    // A v1 client certificate: the certificate is the trouble, not the key.
    fails(
        &[
            "--tls-ca-file",
            &ca,
            "--tls-server-name",
            named,
            "--tls-cert-file",
            &v1,
            "--tls-key-file",
            &key,
        ],
        &["X.509 v1", &v1],
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
