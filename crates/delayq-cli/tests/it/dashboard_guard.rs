//! The dashboard's guards against a real redis-server: writes another page could forge through a
//! proxy that adds the token (no `X-Delayq-Write`, another site's `Sec-Fetch-Site` or `Origin`,
//! a body that is not JSON) are refused and change nothing; a refused write is answered before
//! its body, and a body that trickles is cut off; half-sent requests that fill the connection
//! cap leave `/healthz` and `/metrics` answering; `--read-token-file` makes every read need a
//! role's token; token files are checked (owner-only, usage errors) on every path.

use crate::access::{bearer, dashboard, snapshot, ADMIN, OPERATOR};
use crate::common::{unique_name, wait_until, TestRedis, PATIENCE};
use crate::observe::{delayq, free_port, get, request, Daemon, BIN};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};

/// `POST path` with `headers` and `body` (sent whole, as given): the whole answer.
fn post(port: u16, path: &str, headers: &str, body: &str) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: {}\r\n{headers}\
         Connection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut text = String::new();
    let _ = stream.read_to_string(&mut text);
    text
}

fn status_of(answer: &str) -> u16 {
    answer.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0)
}

/// A request that nginx forwards for a form another site's page makes the admin's browser
/// submit: the admin's token added by the proxy, the browser's own headers as they are.
#[test]
fn a_write_another_page_could_forge_is_refused() {
    let redis = TestRedis::start_with(&[]);
    let name = unique_name("forged");
    delayq(&redis.url(), &["offer", &name, "x", "--delay", "1h"]);
    crate::dashboard::dead_letters(&redis, &name, &["d"]);
    let dir = tempfile::tempdir().unwrap();
    let extra = ["--allow-host", "delayq.example.com,dash.internal:8443"];
    let (_ui, port) = dashboard(&redis, dir.path(), &extra, &[], "/healthz");
    let token = format!("Authorization: Bearer {ADMIN}\r\n");
    let purge = format!("/api/queues/{name}/purge-dead");
    let limits = format!("/api/queues/{name}/limits/set-limits");
    let json = "Content-Type: application/json\r\n";
    let body = r#"{"rate":"1/1h","concurrency":"1","key_regex":"="}"#;
    let before = snapshot(&redis, &name);
    let write = "X-Delayq-Write: 1\r\n";
    for (path, headers, body, want) in [
        // A form (no custom header), with what each browser adds.
        (&purge, token.clone(), "", 403),
        (
            &purge,
            format!("{token}Sec-Fetch-Site: cross-site\r\n"),
            "",
            403,
        ),
        (
            &purge,
            format!("{token}Origin: https://evil.example\r\n"),
            "",
            403,
        ),
        (
            &limits,
            format!("{token}Content-Type: text/plain\r\nOrigin: https://evil.example\r\n"),
            body,
            403,
        ),
        // The header, yet the browser says another site sent it.
        (
            &purge,
            format!("{token}{write}Sec-Fetch-Site: cross-site\r\n"),
            "",
            403,
        ),
        (
            &purge,
            format!("{token}{write}Sec-Fetch-Site: same-site\r\n"),
            "",
            403,
        ),
        (
            &purge,
            format!("{token}{write}Origin: https://evil.example\r\n"),
            "",
            403,
        ),
        (
            &purge,
            format!("{token}{write}Origin: http://localhost:1\r\n"),
            "",
            403,
        ),
        (&purge, format!("{token}{write}Origin: null\r\n"), "", 403),
        // An allowed name, but another port or scheme: another service's page on that host.
        (
            &purge,
            format!("{token}{write}Origin: https://delayq.example.com:8443\r\n"),
            "",
            403,
        ),
        (
            &purge,
            format!("{token}{write}Origin: ftp://delayq.example.com\r\n"),
            "",
            403,
        ),
        (
            &purge,
            format!("{token}{write}Origin: https://dash.internal\r\n"),
            "",
            403,
        ),
        // Limits as a form's text/plain body: not JSON by its type.
        (
            &limits,
            format!("{token}{write}Content-Type: text/plain\r\n"),
            body,
            415,
        ),
        (&limits, format!("{token}{write}"), body, 415),
    ] {
        let answer = post(port, path, &headers, body);
        assert_eq!(
            status_of(&answer),
            want,
            "{path} with {headers:?}: {answer}"
        );
        assert!(!answer.contains(ADMIN), "{answer}");
    }
    assert_eq!(
        snapshot(&redis, &name),
        before,
        "a forged write changed Redis"
    );

    // The page's own requests: the header, its own origin (or an --allow-host name), same-origin.
    for headers in [
        format!("{token}{write}Origin: http://localhost\r\nSec-Fetch-Site: same-origin\r\n{json}"),
        format!("{token}{write}Origin: https://delayq.example.com\r\n{json}"),
        format!("{token}{write}Origin: http://delayq.example.com\r\n{json}"),
        format!("{token}{write}Origin: https://dash.internal:8443\r\n{json}"),
        format!("{token}{write}{json}"),
    ] {
        let answer = post(port, &limits, &headers, body);
        assert_eq!(status_of(&answer), 200, "{headers:?}: {answer}");
    }
    let answer = post(port, &purge, &format!("{token}{write}"), "");
    assert_eq!(status_of(&answer), 200, "{answer}");
    assert_eq!(
        redis.cli(&["LLEN", &format!("delayq_dead:{{{name}}}")]),
        "0"
    );
}

/// A write's role is checked from its headers: a refused one is answered at once, its body
/// never waited for; an allowed one's body must come within the header timeout and fit in
/// 4 KiB.
#[test]
fn a_refused_write_is_answered_before_its_body_and_a_slow_body_is_cut_off() {
    let redis = TestRedis::start_with(&[]);
    let name = unique_name("trickle");
    let dir = tempfile::tempdir().unwrap();
    let extra = ["--http-header-timeout", "2s"];
    let (_ui, port) = dashboard(&redis, dir.path(), &extra, &[], "/healthz");
    let limits = format!("/api/queues/{name}/limits/set-limits");
    let before = snapshot(&redis, &name);

    // Headers and one byte of a 1 MB body; no more is sent: the answer comes anyway.
    let started = |headers: &str| {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream.set_read_timeout(Some(PATIENCE)).unwrap();
        write!(
            stream,
            "POST {limits} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
             Content-Length: 1000000\r\n{headers}\r\n{{"
        )
        .unwrap();
        stream
    };
    let answer = |mut stream: TcpStream| {
        let mut text = vec![0; 4096];
        let n = stream.read(&mut text).unwrap_or(0);
        String::from_utf8_lossy(&text[..n]).into_owned()
    };
    for (headers, want) in [("", 401), (bearer(OPERATOR).as_str(), 403)] {
        let text = answer(started(headers));
        assert_eq!(status_of(&text), want, "{headers:?}: {text}");
    }
    // The admin's, trickled: cut off (408) after the header timeout, nothing stored.
    let text = answer(started(&bearer(ADMIN)));
    assert_eq!(status_of(&text), 408, "{text}");
    // Too long for limits: 413.
    let long = format!("{{\"key_regex\":\"{}\"}}", "a".repeat(5000));
    let headers = format!("{}Content-Type: application/json\r\n", bearer(ADMIN));
    let text = post(port, &limits, &headers, &long);
    assert_eq!(status_of(&text), 413, "{text}");
    assert_eq!(
        snapshot(&redis, &name),
        before,
        "a cut-off write changed Redis"
    );
}

/// Half-sent requests that hold every connection under the cap: the page answers 503, but
/// /healthz and /metrics still answer 200 on the connections kept for them.
#[test]
fn health_and_metrics_answer_while_half_sent_requests_fill_the_cap() {
    let redis = TestRedis::start_with(&[]);
    let port = free_port();
    let _ui = Daemon(
        Command::new(BIN)
            .args(["--url", &redis.url(), "ui"])
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .args([
                "--http-max-connections",
                "4",
                "--http-header-timeout",
                "120s",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    crate::observe::health_is(port, 200);
    let held: Vec<TcpStream> = (0..4)
        .map(|_| {
            let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
            stream
                .write_all(b"GET /api/queues HTTP/1.1\r\nHost: localhost\r\n")
                .unwrap();
            stream
        })
        .collect();
    // Once the four are held, a fifth connection is past the cap: the page is refused (503,
    // or the connection closed under a request not read)...
    wait_until("the cap full", PATIENCE, || {
        match get(port, "/api/queues") {
            Ok((503, body)) => Ok(body),
            Err(reset) if reset.contains("reset") => Ok(reset),
            other => Err(format!("{other:?}")),
        }
    });
    // ...but the probes are answered.
    for path in ["/healthz", "/metrics"] {
        let (status, body) = get(port, path).unwrap();
        assert_eq!(status, 200, "{path}: {body}");
    }
    drop(held);
    wait_until("the page again", PATIENCE, || {
        match get(port, "/api/queues") {
            Ok((200, _)) => Ok(()),
            other => Err(format!("{other:?}")),
        }
    });
}

/// `--read-token-file`: every read (the API, /metrics) needs a role's token; the page itself
/// and /healthz stay open; the reader's token writes nothing.
#[test]
fn with_a_read_token_every_read_needs_a_role() {
    let redis = TestRedis::start_with(&[]);
    let name = unique_name("readers");
    delayq(&redis.url(), &["offer", &name, "x", "--delay", "1h"]);
    let dir = tempfile::tempdir().unwrap();
    let reader = "reader-token-0123456789ab";
    let file = private_file(dir.path(), "reader", reader);
    let extra = ["--read-token-file", file.to_str().unwrap()];
    let (_ui, port) = dashboard(&redis, dir.path(), &extra, &[], "/healthz");
    let reads = [
        "/api/queues".to_owned(),
        format!("/api/queues/{name}"),
        format!("/api/queues/{name}/limits"),
        "/api/whoami".to_owned(),
        "/metrics".to_owned(),
    ];
    for path in &reads {
        for headers in [String::new(), bearer("not-a-token-of-anyone")] {
            let (status, body) = request(port, "GET", path, &headers).unwrap();
            assert_eq!(status, 401, "{path} with {headers:?}: {body}");
            assert!(!body.contains(&name), "{path}: {body}");
        }
        for token in [reader, OPERATOR, ADMIN] {
            let (status, body) = request(port, "GET", path, &bearer(token)).unwrap();
            assert_eq!(status, 200, "{path} as {token}: {body}");
        }
    }
    for path in ["/", "/app.js", "/healthz"] {
        assert_eq!(get(port, path).unwrap().0, 200, "{path}");
    }
    let (_, who) = request(port, "GET", "/api/whoami", &bearer(reader)).unwrap();
    assert!(who.contains("\"role\":\"reader\""), "{who}");
    let pause = format!("/api/queues/{name}/pause");
    let (status, body) = request(port, "POST", &pause, &bearer(reader)).unwrap();
    assert_eq!(status, 403, "{body}");
    assert_eq!(
        redis.cli(&["EXISTS", &format!("delayq_paused:{{{name}}}")]),
        "0"
    );
}

fn private_file(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("{text}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    path
}

/// Every token-file problem is a usage error (exit 2) that names the file and never the token;
/// `--allow-writes --token-file` asks of its file what the role files must be (owner-only).
#[test]
fn token_file_problems_are_usage_errors_on_every_path() {
    use std::os::unix::fs::PermissionsExt;
    let redis = TestRedis::start_with(&[]);
    let dir = tempfile::tempdir().unwrap();
    let token = "0123456789abcdef0123";
    let open = private_file(dir.path(), "open", token);
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o644)).unwrap();
    let short = private_file(dir.path(), "short", "abc");
    let good = private_file(dir.path(), "good", token);
    let missing = dir.path().join("missing");
    // A dashboard that starts when it should not is stopped once it says it serves.
    let run = |args: &[&std::ffi::OsStr]| {
        let mut child = Command::new(BIN)
            .args(["--url", &redis.url(), "ui", "--listen"])
            .arg(format!("127.0.0.1:{}", free_port()))
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut said = Vec::new();
        let mut stderr = child.stderr.take().unwrap();
        let mut byte = [0u8; 1];
        while stderr.read(&mut byte).unwrap_or(0) == 1 {
            said.push(byte[0]);
            if said.ends_with(b"Ctrl-C to stop)") {
                let _ = child.kill();
            }
        }
        let said = String::from_utf8_lossy(&said).into_owned();
        (child.wait().unwrap().code(), said)
    };
    let flag = |name: &str| std::ffi::OsString::from(name);
    for (args, said) in [
        (
            vec![
                flag("--allow-writes"),
                flag("--token-file"),
                open.clone().into(),
            ],
            "chmod 600",
        ),
        (vec![flag("--admin-token-file"), open.into()], "chmod 600"),
        (
            vec![flag("--admin-token-file"), missing.clone().into()],
            "cannot read",
        ),
        (
            vec![flag("--operator-token-file"), short.clone().into()],
            "shorter than 16",
        ),
        (
            vec![flag("--read-token-file"), missing.into()],
            "cannot read",
        ),
        (
            vec![
                flag("--operator-token-file"),
                good.clone().into(),
                flag("--admin-token-file"),
                good.into(),
            ],
            "the same",
        ),
    ] {
        let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
        let (code, text) = run(&args);
        assert_eq!(code, Some(2), "{args:?}: {text}");
        assert!(text.contains(said), "{args:?}: {text}");
        assert!(!text.contains(token), "{args:?}: {text}");
    }
}
