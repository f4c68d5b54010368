//! `delayq gateway` against a real redis-server: it refuses to start without an allow-list of
//! destinations, with a token or key file others may read, or on a non-loopback address without
//! `--allow-remote`; once started it serves the API and `/metrics` behind its token, `/healthz`
//! open, and never prints a secret.

use crate::common::{TestRedis, PATIENCE};
use crate::observe::{free_port, Daemon, BIN};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const TOKEN: &str = "tok_gateway_cli_test_0123456789";
const KEY: &str = "sig_gateway_cli_test_key_abcdef";

/// A file holding `text`, with `mode`.
fn secret(dir: &Path, name: &str, text: &str, mode: u32) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, format!("{text}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    path
}

/// `delayq --url URL gateway args...` run to its end: (exit code, stderr).
fn refused(url: &str, args: &[&str]) -> (i32, String) {
    let out = Command::new(BIN)
        .args(["--url", url, "gateway"])
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code().unwrap_or(-1), stderr)
}

#[test]
fn refuses_to_start_unsafely() {
    let redis = TestRedis::start();
    let url = redis.url();
    let dir = tempfile::tempdir().unwrap();
    let token = secret(dir.path(), "token", TOKEN, 0o600);
    let key = secret(dir.path(), "key", KEY, 0o600);
    let open_token = secret(dir.path(), "open-token", TOKEN, 0o644);
    let (token, key, open_token) = (
        token.to_str().unwrap(),
        key.to_str().unwrap(),
        open_token.to_str().unwrap(),
    );
    let listen = format!("127.0.0.1:{}", free_port());
    let allow = ["--allow-destination", "http://127.0.0.1:9/"];

    let (code, err) = refused(
        &url,
        &[
            "--listen",
            &listen,
            "--token-file",
            token,
            "--signing-key-file",
            key,
        ],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--allow-destination"), "{err}");

    let mut args = vec![
        "--listen",
        &listen,
        "--token-file",
        open_token,
        "--signing-key-file",
        key,
    ];
    args.extend(allow);
    let (code, err) = refused(&url, &args);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("chmod 600"), "{err}");
    assert!(!err.contains(TOKEN), "the token was printed: {err}");

    let remote = format!("0.0.0.0:{}", free_port());
    let mut args = vec![
        "--listen",
        &remote,
        "--token-file",
        token,
        "--signing-key-file",
        key,
    ];
    args.extend(allow);
    let (code, err) = refused(&url, &args);
    assert_ne!(code, 0, "{err}");
    assert!(err.contains("not a loopback address"), "{err}");

    let mut args = vec![
        "--listen",
        &listen,
        "--token-file",
        token,
        "--signing-key-file",
        key,
    ];
    args.extend(["--allow-destination", "ftp://127.0.0.1/"]);
    let (code, err) = refused(&url, &args);
    assert_eq!(code, 2, "{err}");

    // The Standard Webhooks secrets' files are checked as the others: an open next secret is
    // refused, and not printed.
    let whsec = "whsec_KioqKioqKioqKioqKioqKioqKioqKioqKioqKioqKio=";
    let secret_file = secret(dir.path(), "whsec", whsec, 0o600);
    let open_next = secret(dir.path(), "whsec-next", whsec, 0o640);
    let mut args = vec![
        "--listen",
        &listen,
        "--token-file",
        token,
        "--signing-key-file",
        key,
        "--standard-webhooks-secret-file",
        secret_file.to_str().unwrap(),
        "--standard-webhooks-next-secret-file",
        open_next.to_str().unwrap(),
    ];
    args.extend(allow);
    let (code, err) = refused(&url, &args);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("chmod 600") && err.contains("whsec-next"),
        "{err}"
    );
    assert!(!err.contains(whsec), "the secret was printed: {err}");
}

#[test]
fn serves_behind_its_token_and_prints_no_secret() {
    let redis = TestRedis::start();
    let dir = tempfile::tempdir().unwrap();
    let token = secret(dir.path(), "token", TOKEN, 0o600);
    let key = secret(dir.path(), "key", KEY, 0o600);
    let port = free_port();
    let mut daemon = Daemon(
        Command::new(BIN)
            .args(["--url", &redis.url(), "gateway", "--listen"])
            .arg(format!("127.0.0.1:{port}"))
            .arg("--token-file")
            .arg(&token)
            .arg("--signing-key-file")
            .arg(&key)
            .args(["--allow-destination", "http://127.0.0.1:9/"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut stderr = BufReader::new(daemon.0.stderr.take().unwrap());
    let mut said = String::new();
    while !said.contains("QStash-compatible gateway") {
        let mut line = String::new();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "ended: {said}");
        said.push_str(&line);
    }
    assert!(!said.contains(TOKEN) && !said.contains(KEY), "{said}");
    let get = |path: &str, auth: &str| {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream.set_read_timeout(Some(PATIENCE)).unwrap();
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{auth}Connection: close\r\n\r\n"
        )
        .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        answer
    };
    let auth = format!("Authorization: Bearer {TOKEN}\r\n");
    let answer = get("/v2/dlq", "");
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
    assert!(answer.contains(r#"{"error":"#), "{answer}");
    let answer = get("/v2/dlq", &auth);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains(r#"{"messages":[]}"#), "{answer}");
    // /healthz is open, /metrics needs the token.
    let answer = get("/healthz", "");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(get("/metrics", "").starts_with("HTTP/1.1 401"));
    let answer = get("/metrics", &auth);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("delayq_"), "{answer}");
}
