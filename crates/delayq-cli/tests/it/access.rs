//! Who may change queues through `delayq ui`, against a real redis-server: each action is
//! allowed or refused by role as the dashboard's table says (401 without a valid token, 403 to
//! a lower role, the queue untouched when refused); `--base-path` serves everything under it
//! and nothing outside; no token ever shows in the logs or the answers.

use crate::common::{unique_name, wait_until, TestRedis, PATIENCE};
use crate::dashboard::{dead_letters, json};
use crate::observe::{delayq, exchange, free_port, get, request, Daemon, BIN};
use std::path::{Path, PathBuf};
use std::process::Command;

pub(crate) const OPERATOR: &str = "operator-token-0123456789";
pub(crate) const ADMIN: &str = "admin-token-0123456789abcd";

/// The token files of both roles in `dir`, mode 0600: (operator, admin).
fn token_files(dir: &Path) -> (PathBuf, PathBuf) {
    let write = |name: &str, token: &str| {
        let path = dir.join(name);
        std::fs::write(&path, format!("{token}\n")).unwrap();
        set_mode(&path, 0o600);
        path
    };
    (write("operator", OPERATOR), write("admin", ADMIN))
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// `delayq ui` of `redis` with both roles' tokens, `extra` arguments and `env`, its stdout
/// and stderr into files of those names in `dir`; its port once `health` answers 200.
pub(crate) fn dashboard(
    redis: &TestRedis,
    dir: &Path,
    extra: &[&str],
    env: &[(&str, &str)],
    health: &str,
) -> (Daemon, u16) {
    let (operator, admin) = token_files(dir);
    let port = free_port();
    let log = |name: &str| std::fs::File::create(dir.join(name)).unwrap();
    let mut daemon = Daemon(
        Command::new(BIN)
            .args(["--url", &redis.url(), "ui"])
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .arg("--operator-token-file")
            .arg(&operator)
            .arg("--admin-token-file")
            .arg(&admin)
            .args(extra)
            .envs(env.iter().copied())
            .stdout(log("stdout"))
            .stderr(log("stderr"))
            .spawn()
            .unwrap(),
    );
    wait_until("the dashboard", PATIENCE, || {
        if let Ok(Some(exited)) = daemon.0.try_wait() {
            panic!("delayq ui ended: {exited}");
        }
        match get(port, health) {
            Ok((200, _)) => Ok(()),
            other => Err(format!("{other:?}")),
        }
    });
    (daemon, port)
}

pub(crate) fn bearer(token: &str) -> String {
    format!("Authorization: Bearer {token}\r\nX-Delayq-Write: 1\r\n")
}

/// Every key of the queue `name`, dumped: equal before and after means nothing changed.
pub(crate) fn snapshot(redis: &TestRedis, name: &str) -> String {
    let script = "local out = {} \
        for _, k in ipairs(redis.call('KEYS', ARGV[1])) do \
        table.insert(out, k .. '=' .. redis.call('DUMP', k)) end \
        table.sort(out) return table.concat(out, '|')";
    redis.cli(&["EVAL", script, "0", &format!("*{name}*")])
}

#[test]
fn each_role_may_do_what_the_table_says_and_no_more() {
    let redis = TestRedis::start_with(&[]);
    let url = redis.url();
    let name = unique_name("roles");
    for value in ["a", "b"] {
        delayq(&url, &["offer", &name, value, "--delay", "1h"]);
    }
    dead_letters(&redis, &name, &["first", "second"]);
    redis.cli(&["ZADD", &format!("delayq_inflight:{{{name}}}"), "9e12", "d1"]);
    redis.cli(&[
        "HSET",
        &format!("delayq_inflight_data:{{{name}}}"),
        "d1",
        "v",
    ]);
    redis.cli(&["RPUSH", &format!("delayq_quarantine:{{{name}}}"), "q"]);
    let dir = tempfile::tempdir().unwrap();
    let (_ui, port) = dashboard(&redis, dir.path(), &[], &[], "/healthz");

    let pending = json(port, &format!("/api/queues/{name}"), 200);
    let handle = |i: usize| pending["rows"][i]["handle"].as_str().unwrap().to_owned();
    let dead = json(port, &format!("/api/queues/{name}?tab=dead"), 200);
    let id = |i: usize| dead["rows"][i]["id"].as_str().unwrap().to_owned();
    let q = format!("/api/queues/{name}");
    // (the action's path, whether it loses values: admin's; else operator's)
    let actions = [
        (format!("{q}/pending/{}/run-now", handle(0)), false),
        (format!("{q}/pause"), false),
        (format!("{q}/resume"), false),
        (format!("{q}/in_flight/d1/give-back"), false),
        (format!("{q}/dead/0/{}/retry", id(0)), false),
        (format!("{q}/dead/1/{}/delete", id(1)), true),
        (format!("{q}/pending/{}/cancel", handle(1)), true),
        (format!("{q}/purge-quarantine"), true),
        (format!("{q}/purge-dead"), true),
        (format!("{q}/replay"), false),
    ];
    let before = snapshot(&redis, &name);
    for (path, admins) in &actions {
        for (headers, want) in [
            (String::new(), 401),
            (bearer("not-a-token-of-anyone-at-all"), 401),
            ("Authorization: Basic b3A6b3A=\r\n".to_owned(), 401),
        ] {
            let (status, body) = request(port, "POST", path, &headers).unwrap();
            assert_eq!(status, want, "{path} with {headers:?}: {body}");
        }
        if *admins {
            let (status, body) = request(port, "POST", path, &bearer(OPERATOR)).unwrap();
            assert_eq!(status, 403, "{path} as operator: {body}");
            assert!(body.contains("needs the admin role"), "{body}");
        }
    }
    assert_eq!(
        snapshot(&redis, &name),
        before,
        "a refused write changed the queue"
    );

    for (path, admins) in &actions {
        let token = if *admins { ADMIN } else { OPERATOR };
        let (status, body) = request(port, "POST", path, &bearer(token)).unwrap();
        assert_eq!(status, 200, "{path}: {body}");
    }
    // What the allowed actions did: the entry run now is due, the other cancelled; the value in
    // flight given back; the dead letters retried, deleted, and purged; the quarantine purged.
    let zset = format!("redisson_delay_queue_timeout:{{{name}}}");
    assert_eq!(redis.cli(&["ZCARD", &zset]), "1");
    assert_eq!(redis.cli(&["LRANGE", &name, "0", "-1"]), "v\nfirst");
    for key in ["delayq_dead", "delayq_quarantine"] {
        assert_eq!(redis.cli(&["LLEN", &format!("{key}:{{{name}}}")]), "0");
    }
    // The admin may do what the operator may.
    let (status, body) = request(port, "POST", &format!("{q}/pause"), &bearer(ADMIN)).unwrap();
    assert_eq!(status, 200, "{body}");

    for (headers, role) in [
        (String::new(), "read-only"),
        (bearer(OPERATOR), "operator"),
        (bearer(ADMIN), "admin"),
    ] {
        let (status, body) = request(port, "GET", "/api/whoami", &headers).unwrap();
        assert_eq!(status, 200, "{body}");
        let who: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(who["role"], role, "{body}");
        assert_eq!(who["needs"]["purge-dead"], "admin", "{body}");
        assert_eq!(who["needs"]["retry"], "operator", "{body}");
    }
    let (status, _) = request(port, "GET", "/api/whoami", &bearer("no-such-token-here")).unwrap();
    assert_eq!(status, 401);
}

#[test]
fn the_dashboard_sits_under_its_base_path_and_nothing_outside() {
    let redis = TestRedis::start_with(&[]);
    let name = unique_name("based");
    delayq(&redis.url(), &["offer", &name, "x", "--delay", "1h"]);
    let dir = tempfile::tempdir().unwrap();
    let extra = ["--base-path", "/ops/delayq/"];
    let (_ui, port) = dashboard(&redis, dir.path(), &extra, &[], "/ops/delayq/healthz");

    let redirect = exchange(port, "GET", "/ops/delayq?x=1", "").unwrap();
    assert!(redirect.starts_with("HTTP/1.1 308"), "{redirect}");
    assert!(
        redirect
            .to_ascii_lowercase()
            .contains("location: /ops/delayq/?x=1\r\n"),
        "{redirect}"
    );
    for path in [
        "/ops/delayq/",
        "/ops/delayq/app.js",
        "/ops/delayq/access.js",
        "/ops/delayq/metrics",
    ] {
        assert_eq!(get(port, path).unwrap().0, 200, "{path}");
    }
    let overview = json(port, "/ops/delayq/api/queues", 200);
    assert_eq!(overview["total"], 1, "{overview}");
    json(port, &format!("/ops/delayq/api/queues/{name}"), 200);
    let (status, body) = request(
        port,
        "POST",
        &format!("/ops/delayq/api/queues/{name}/pause"),
        &bearer(OPERATOR),
    )
    .unwrap();
    assert_eq!(status, 200, "{body}");
    for path in [
        "/",
        "/api/queues",
        "/metrics",
        "/healthz",
        "/app.js",
        "/ops/delayqx/",
        "/ops/",
    ] {
        assert_eq!(get(port, path).unwrap().0, 404, "{path}");
    }

    for bad in ["delayq", "/", "/a/../b", "/a?x=1", "/a%2f", "/a//b"] {
        let out = Command::new(BIN)
            .args(["--url", &redis.url(), "ui", "--base-path", bad])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {out:?}");
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(said.contains("--base-path"), "{bad:?}: {said}");
    }
}

#[test]
fn a_token_file_others_may_read_or_one_token_for_both_roles_is_refused() {
    let redis = TestRedis::start_with(&[]);
    let dir = tempfile::tempdir().unwrap();
    let (operator, admin) = token_files(dir.path());
    let run = |admin: &Path| {
        Command::new(BIN)
            .args([
                "--url",
                &redis.url(),
                "ui",
                "--listen",
                &format!("127.0.0.1:{}", free_port()),
            ])
            .arg("--operator-token-file")
            .arg(&operator)
            .arg("--admin-token-file")
            .arg(admin)
            .output()
            .unwrap()
    };
    set_mode(&admin, 0o644);
    let out = run(&admin);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && said.contains("chmod 600"),
        "{out:?}"
    );
    assert!(!said.contains(ADMIN), "{said}");
    let out = run(&operator);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && said.contains("the same"),
        "{out:?}"
    );
    assert!(!said.contains(OPERATOR), "{said}");
}

#[test]
fn no_token_shows_in_the_logs_or_the_answers() {
    let redis = TestRedis::start_with(&[]);
    let name = unique_name("quiet");
    delayq(&redis.url(), &["offer", &name, "x", "--delay", "1h"]);
    let wrong = "a-wrong-token-given-by-someone";
    for format in ["text", "json"] {
        let dir = tempfile::tempdir().unwrap();
        let extra = ["--log-format", format];
        let env = [("RUST_LOG", "trace")];
        let (ui, port) = dashboard(&redis, dir.path(), &extra, &env, "/healthz");
        let q = format!("/api/queues/{name}");
        let mut answers = String::new();
        for (path, token) in [
            (format!("{q}/pause"), OPERATOR),
            (format!("{q}/purge-dead"), OPERATOR),
            (format!("{q}/purge-dead"), ADMIN),
            (format!("{q}/resume"), wrong),
        ] {
            answers += &exchange(port, "POST", &path, &bearer(token)).unwrap();
        }
        for token in [OPERATOR, ADMIN, wrong] {
            answers += &exchange(port, "GET", "/api/whoami", &bearer(token)).unwrap();
        }
        answers += &exchange(port, "GET", "/api/queues", &bearer(ADMIN)).unwrap();
        drop(ui);
        let logs = ["stderr", "stdout"]
            .map(|f| std::fs::read_to_string(dir.path().join(f)).unwrap())
            .join("\n");
        assert!(logs.contains("dashboard write refused"), "{format}: {logs}");
        assert!(
            logs.lines().count() > 10,
            "{format}: trace lines missing: {logs}"
        );
        for token in [OPERATOR, ADMIN, wrong] {
            assert!(!logs.contains(token), "{format}: {token} logged");
            assert!(
                !answers.contains(token),
                "{format}: {token} answered: {answers}"
            );
        }
    }
}
