//! The HTTP listeners of `delayq transfer --listen`, `delayq work --listen` and `delayq ui`
//! against real processes, spoken to over raw TCP: loopback unless `--allow-remote`, only the
//! listen address's host names (421 otherwise), hardening headers on every answer, half-sent
//! requests cut off and connections capped, `--match` enforced on every dashboard endpoint,
//! the write token kept out of the log, and `/healthz` 503 while Redis answers only BUSY.

use crate::common::{unique_name, wait_until, TestRedis, PATIENCE};
use crate::observe::{delayq, free_port, health_is, request, Daemon, BIN};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

/// Starts `delayq --url URL args...` with its output thrown away.
fn daemon(url: &str, args: &[&str]) -> Daemon {
    Daemon(
        Command::new(BIN)
            .args(["--url", url])
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    )
}

/// Sends `text` as it is on a new connection to 127.0.0.1:`port`; the whole answer.
fn exchange(port: u16, text: &str) -> Result<String, String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    stream
        .write_all(text.as_bytes())
        .map_err(|e| e.to_string())?;
    let mut answer = Vec::new();
    stream
        .read_to_end(&mut answer)
        .map_err(|e| format!("no end of the answer: {e}"))?;
    Ok(String::from_utf8_lossy(&answer).into_owned())
}

/// `GET path` with the Host header `host` (none: no header), closing after the answer.
fn get_as(port: u16, path: &str, host: Option<&str>) -> String {
    let host = host.map_or(String::new(), |h| format!("Host: {h}\r\n"));
    exchange(
        port,
        &format!("GET {path} HTTP/1.1\r\n{host}Connection: close\r\n\r\n"),
    )
    .unwrap()
}

fn status(answer: &str) -> u16 {
    answer.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0)
}

/// The answer's header `name` (lower case, as hyper writes them).
fn header<'a>(answer: &'a str, name: &str) -> Option<&'a str> {
    let head = answer.split("\r\n\r\n").next()?;
    head.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(": "))
}

/// Waits until `child` exits; its status and standard error.
fn exit_of(mut child: Daemon) -> (std::process::ExitStatus, String) {
    let status = wait_until("the command exits", PATIENCE, || {
        child
            .0
            .try_wait()
            .unwrap()
            .ok_or("still running".to_owned())
    });
    let mut err = String::new();
    child
        .0
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    (status, err)
}

#[test]
fn every_listener_binds_loopback_unless_allowed() {
    let redis = TestRedis::start_with(&[]);
    let url = redis.url();
    let queue = unique_name("remote");
    for args in [
        vec!["transfer", queue.as_str(), "--listen", "0.0.0.0:0"],
        vec![
            "work",
            queue.as_str(),
            "--listen",
            "0.0.0.0:0",
            "--",
            "true",
        ],
        vec!["ui", "--listen", "0.0.0.0:0"],
    ] {
        let child = Command::new(BIN)
            .args(["--url", &url])
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (status, err) = exit_of(Daemon(child));
        assert!(!status.success(), "{args:?}");
        assert!(err.contains("--allow-remote"), "{args:?}: {err}");
    }
}

#[test]
fn listeners_answer_only_their_host_names() {
    let redis = TestRedis::start_with(&[]);
    let url = redis.url();
    let queue = unique_name("host");
    delayq(&url, &["offer", &queue, "secret value", "--delay", "1h"]);
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let _ui = daemon(&url, &["ui", "--listen", &listen]);
    health_is(port, 200);
    let detail = format!("/api/queues/{queue}");
    let own = format!("127.0.0.1:{port}");
    for host in [own.as_str(), "localhost", "LOCALHOST:1"] {
        let answer = get_as(port, &detail, Some(host));
        assert_eq!(status(&answer), 200, "{host}: {answer}");
        assert!(answer.contains("secret value"), "{answer}");
    }
    // A rebinding name, no Host at all (HTTP/1.1), or two: 421, nothing of the queue.
    for path in [detail.as_str(), "/api/queues", "/metrics", "/healthz", "/"] {
        let answer = get_as(port, path, Some(&format!("rebind.example:{port}")));
        assert_eq!(status(&answer), 421, "{path}: {answer}");
        assert!(
            !answer.contains(&queue) && !answer.contains("secret"),
            "{answer}"
        );
        let answer = get_as(port, path, None);
        assert_eq!(status(&answer), 421, "{path} without Host: {answer}");
    }
    let twice = exchange(
        port,
        &format!("GET {detail} HTTP/1.1\r\nHost: localhost\r\nHost: evil.example\r\n\r\n"),
    )
    .unwrap();
    assert_eq!(status(&twice), 421, "{twice}");
    // Every answer says: no sniffing, never in a frame; the page keeps its own policy.
    for path in ["/", "/app.js", "/api/queues", "/metrics", "/healthz"] {
        let answer = get_as(port, path, Some("localhost"));
        assert_eq!(header(&answer, "x-content-type-options"), Some("nosniff"));
        let policy = header(&answer, "content-security-policy").unwrap_or("");
        assert!(
            policy.contains("frame-ancestors 'none'"),
            "{path}: {answer}"
        );
    }
    let page = get_as(port, "/", Some("localhost"));
    let policy = header(&page, "content-security-policy").unwrap();
    assert!(policy.starts_with("default-src 'self'"), "{policy}");

    // Names given with --allow-host are answered too (any case), on transfer's listener alike.
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let _transfer = daemon(
        &url,
        &[
            "transfer",
            &queue,
            "--listen",
            &listen,
            "--allow-host",
            "Dash.Example",
        ],
    );
    health_is(port, 200);
    let answer = get_as(port, "/metrics", Some(&format!("dash.example:{port}")));
    assert_eq!(status(&answer), 200, "{answer}");
    let answer = get_as(port, "/metrics", Some("other.example"));
    assert_eq!(status(&answer), 421, "{answer}");
}

#[test]
fn the_dashboard_serves_only_queues_its_match_names() {
    let redis = TestRedis::start_with(&[]);
    let url = redis.url();
    let shown = unique_name("shown");
    let hidden = unique_name("hidden");
    for queue in [&shown, &hidden] {
        delayq(&url, &["offer", queue, "v", "--delay", "1h"]);
    }
    // Every command Redis runs, to show that no call names the hidden queue.
    let mut monitor = Daemon(
        Command::new("redis-cli")
            .args(["-p", &redis.port.to_string(), "monitor"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let seen = Arc::new(Mutex::new(String::new()));
    let lines = BufReader::new(monitor.0.stdout.take().unwrap());
    let sink = seen.clone();
    std::thread::spawn(move || {
        for line in lines.lines().map_while(Result::ok) {
            sink.lock().unwrap().push_str(&(line + "\n"));
        }
    });
    let saw = |what: &str| {
        let what = what.to_owned();
        let seen = seen.clone();
        wait_until(
            &format!("MONITOR shows {what}"),
            PATIENCE,
            move || match seen.lock().unwrap().contains(&what) {
                true => Ok(()),
                false => Err("not yet".to_owned()),
            },
        )
    };
    saw("OK");

    let port = free_port();
    let pattern = shown.replace("shown", "shown*");
    let _ui = Daemon(
        Command::new(BIN)
            .args(["--url", &url, "ui", "--allow-writes", "--match", &pattern])
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .env("DELAYQ_UI_TOKEN", "a-token-of-24-characters")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    health_is(port, 200);
    let bearer = "Authorization: Bearer a-token-of-24-characters\r\nX-Delayq-Write: 1\r\n";
    let (code, body) = request(port, "GET", &format!("/api/queues/{shown}"), "").unwrap();
    assert_eq!(code, 200, "{body}");
    let (code, body) = request(port, "GET", &format!("/api/queues/{hidden}"), "").unwrap();
    assert_eq!(code, 404, "{body}");
    for action in ["pause", "purge-dead", "replay"] {
        let path = format!("/api/queues/{hidden}/{action}");
        let (code, body) = request(port, "POST", &path, bearer).unwrap();
        assert_eq!(code, 404, "{action}: {body}");
    }
    let (_, overview) = request(port, "GET", "/api/queues", "").unwrap();
    assert!(
        overview.contains(&shown) && !overview.contains(&hidden),
        "{overview}"
    );
    let marker = unique_name("marker");
    redis.cli(&["ECHO", &marker]);
    saw(&marker);
    let seen = seen.lock().unwrap();
    assert!(seen.contains(&shown), "the shown queue was read");
    assert!(
        !seen.contains(&hidden),
        "a call named the hidden queue:\n{seen}"
    );
    let paused = delayq::QueueKeys::new(hidden.as_str()).paused().to_owned();
    assert_eq!(redis.cli(&["EXISTS", &paused]), "0");
}

#[test]
fn a_made_up_token_goes_to_a_private_file_not_the_log() {
    let redis = TestRedis::start_with(&[]);
    let url = redis.url();
    let queue = unique_name("token");
    let runtime = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut ui = Daemon(
        Command::new(BIN)
            .args(["--url", &url, "ui", "--allow-writes"])
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .env_remove("DELAYQ_UI_TOKEN")
            .env("XDG_RUNTIME_DIR", runtime.path())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let log = Arc::new(Mutex::new(String::new()));
    let lines = BufReader::new(ui.0.stderr.take().unwrap());
    let sink = log.clone();
    std::thread::spawn(move || {
        for line in lines.lines().map_while(Result::ok) {
            sink.lock().unwrap().push_str(&(line + "\n"));
        }
    });
    wait_until("the dashboard started", PATIENCE, || {
        let text = log.lock().unwrap().clone();
        match text.contains("dashboard of") {
            true => Ok(()),
            false => Err(text),
        }
    });
    let files: Vec<_> = std::fs::read_dir(runtime.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let file = &files[0];
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", file.display());
    }
    let token = std::fs::read_to_string(file).unwrap().trim().to_owned();
    assert_eq!(token.len(), 32, "{token}");
    let log_text = log.lock().unwrap().clone();
    assert!(
        !log_text.contains(&token),
        "the token is in the log:\n{log_text}"
    );
    assert!(log_text.contains(&file.display().to_string()), "{log_text}");
    let bearer = format!("Authorization: Bearer {token}\r\nX-Delayq-Write: 1\r\n");
    let pause = format!("/api/queues/{queue}/pause");
    let (code, body) = request(port, "POST", &pause, &bearer).unwrap();
    assert_eq!(code, 200, "{body}");
    // The file lives as long as the process.
    terminate(ui.0.id());
    ui.0.wait().unwrap();
    assert!(!file.exists(), "{} outlived the dashboard", file.display());
}

/// SIGTERM to `pid` through kill(1), the way a service manager stops the dashboard.
fn terminate(pid: u32) {
    let status = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn half_sent_requests_are_cut_off_and_connections_capped() {
    let redis = TestRedis::start_with(&[]);
    let url = redis.url();
    let queue = unique_name("slow");
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    // 64 descriptors: without a cap, 100 connections that never finish their headers would
    // leave none for the next request.
    let _daemon = Daemon(
        Command::new("sh")
            .args([
                "-c",
                "ulimit -n 64 && exec \"$0\" \"$@\"",
                BIN,
                "--url",
                &url,
            ])
            .args(["transfer", &queue, "--listen", &listen])
            .args(["--http-max-connections", "8", "--http-header-timeout", "1s"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    health_is(port, 200);
    let half = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n";
    let held: Vec<TcpStream> = (0..100)
        .map(|_| {
            let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
            stream.write_all(half.as_bytes()).unwrap();
            stream
        })
        .collect();
    health_is(port, 200);
    // A connection that never finishes its headers is closed, without an answer, once its
    // time is up (one over the cap would get 503 at once: try again).
    wait_until("a half-sent request closed", PATIENCE, || {
        match exchange(port, half)? {
            answer if answer.is_empty() => Ok(()),
            answer => Err(format!("answered {answer:?}")),
        }
    });
    drop(held);
}

/// Clients past the cap that send half a request head, a byte at a time, and connect again
/// when closed (G15): with the connections held by them, `/healthz` and `/metrics` still answer
/// 200 (the slowest half-sent connection past the cap is dropped for a new one, and the
/// connections kept for probes go only to complete `/healthz` and `/metrics` requests).
#[test]
fn health_answers_while_slow_clients_flood_the_listener() {
    let redis = TestRedis::start_with(&[]);
    let url = redis.url();
    let queue = unique_name("flood");
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let _daemon = daemon(
        &url,
        &[
            "transfer",
            &queue,
            "--listen",
            &listen,
            "--http-max-connections",
            "8",
        ],
    );
    health_is(port, 200);
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let connects = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let flood: Vec<_> = (0..120)
        .map(|_| {
            let (stop, connects) = (stop.clone(), connects.clone());
            std::thread::spawn(move || {
                let half = format!("GET /api/queues HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-A: ");
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
                        continue;
                    };
                    connects.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if stream.write_all(half.as_bytes()).is_err() {
                        continue;
                    }
                    while !stop.load(std::sync::atomic::Ordering::Relaxed)
                        && stream.write_all(b"a").is_ok()
                    {
                        std::thread::sleep(std::time::Duration::from_millis(200));
                    }
                }
            })
        })
        .collect();
    // The flood is on: more clients connected than the cap and the kept connections hold.
    wait_until("the flood to connect", PATIENCE, || {
        match connects.load(std::sync::atomic::Ordering::Relaxed) {
            n if n > 200 => Ok(()),
            n => Err(format!("{n} connects")),
        }
    });
    let mut answers = Vec::new();
    for path in ["/healthz", "/metrics"].iter().cycle().take(20) {
        let request =
            format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
        answers.push((path, exchange(port, &request).map(|answer| status(&answer))));
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for thread in flood {
        thread.join().unwrap();
    }
    assert!(
        answers.iter().all(|(_, status)| *status == Ok(200)),
        "{answers:?}"
    );
}

#[test]
fn health_turns_503_while_redis_answers_only_busy() {
    let redis = TestRedis::start_with(&["--busy-reply-threshold", "100"]);
    let url = redis.url();
    let queue = unique_name("busy");
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let _daemon = daemon(
        &url,
        &[
            "transfer",
            &queue,
            "--listen",
            &listen,
            "--unhealthy-after",
            "2s",
        ],
    );
    health_is(port, 200);
    let _script = Daemon(
        Command::new("redis-cli")
            .args(["-p", &redis.port.to_string()])
            .args(["EVAL", "while true do end", "0"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let body = health_is(port, 503);
    let report: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert!(
        report["redis_ok_age_ms"].as_i64().unwrap() > 2_000,
        "{body}"
    );
    assert_eq!(report["connected"], true, "{body}");
    wait_until("SCRIPT KILL", PATIENCE, || {
        match redis.cli(&["SCRIPT", "KILL"]).as_str() {
            "OK" => Ok(()),
            other => Err(other.to_owned()),
        }
    });
    let body = health_is(port, 200);
    assert!(body.contains("\"redis_ok_age_ms\""), "{body}");
}
