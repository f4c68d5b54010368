//! The systemd unit of `delayq ui` (deploy/systemd/delayq-ui.service) run as systemd would run
//! it, without systemd: its environment file (ui.env.example, with this test's Redis and port),
//! its `Environment=` lines with `%d` the credentials directory, each `LoadCredential=` token file
//! copied there mode 0400, and its `ExecStart=` with nothing else in the environment. The
//! dashboard comes up and knows each role by the token the unit loaded for it.
//! `scripts/check_deploy.sh` checks the same unit with `systemd-analyze verify` and `security`.

use crate::access::{ADMIN, OPERATOR};
use crate::common::{wait_until, TestRedis, PATIENCE};
use crate::observe::{free_port, get, request, Daemon, BIN};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};

/// `deploy/systemd/NAME`'s text.
fn deploy_file(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../deploy/systemd")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The values of the directive `key` in a unit's text, in order (comments left out).
fn directives<'a>(unit: &'a str, key: &str) -> Vec<&'a str> {
    let prefix = format!("{key}=");
    unit.lines()
        .filter_map(|line| line.trim().strip_prefix(prefix.as_str()))
        .collect()
}

/// The `VARIABLE=value` lines of an environment file (comments and blank lines left out).
fn environment_file(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(|line| {
            let (name, value) = line.split_once('=').unwrap();
            (name.to_owned(), value.trim_matches('"').to_owned())
        })
        .collect()
}

/// The token a credential's source file holds in this test, by the file's name.
fn token_of(source: &str) -> &'static str {
    match Path::new(source).file_name().and_then(|n| n.to_str()) {
        Some("ui-operator.token") => OPERATOR,
        Some("ui-admin.token") => ADMIN,
        _ => panic!("a credential this test has no token for: {source}"),
    }
}

#[test]
fn the_ui_unit_loads_each_role_token_as_a_credential() {
    let redis = TestRedis::start_with(&[]);
    let unit = deploy_file("delayq-ui.service");
    let credentials = tempfile::tempdir().unwrap();
    let loaded = directives(&unit, "LoadCredential");
    assert!(loaded.len() >= 2, "{loaded:?}");
    for credential in &loaded {
        let (name, source) = credential.split_once(':').unwrap();
        assert!(source.starts_with("/etc/delayq/"), "{credential}");
        // systemd copies it readable by the service's user alone.
        let path = credentials.path().join(name);
        std::fs::write(&path, format!("{}\n", token_of(source))).unwrap();
        set_mode(&path, 0o400);
    }

    let env_files = directives(&unit, "EnvironmentFile");
    assert_eq!(env_files, ["/etc/delayq/ui.env"]);
    let mut env = environment_file(&deploy_file("ui.env.example"));
    let port = free_port();
    assert!(
        env.contains_key("REDIS_URL") && env.contains_key("DELAYQ_LISTEN"),
        "{env:?}"
    );
    env.insert("REDIS_URL".into(), redis.url());
    env.insert("DELAYQ_LISTEN".into(), format!("127.0.0.1:{port}"));
    let dir = credentials.path().display().to_string();
    for line in directives(&unit, "Environment") {
        let (name, value) = line.split_once('=').unwrap();
        env.insert(name.to_owned(), value.replace("%d", &dir));
    }

    let exec = directives(&unit, "ExecStart");
    let mut words = exec[0].split_whitespace();
    assert_eq!(words.next(), Some("/usr/local/bin/delayq"));
    let args: Vec<&str> = words.collect();
    assert_eq!(args, ["ui"]);
    let log = tempfile::NamedTempFile::new().unwrap();
    let mut daemon = Daemon(
        Command::new(BIN)
            .args(&args)
            .env_clear()
            .envs(&env)
            .stdout(Stdio::null())
            .stderr(log.reopen().unwrap())
            .spawn()
            .unwrap(),
    );
    wait_until("the dashboard", PATIENCE, || {
        if let Ok(Some(exited)) = daemon.0.try_wait() {
            let said = std::fs::read_to_string(log.path()).unwrap_or_default();
            panic!("delayq ui ended ({exited}): {said}");
        }
        match get(port, "/healthz") {
            Ok((200, _)) => Ok(()),
            other => Err(format!("{other:?}")),
        }
    });
    for (token, role) in [
        (None, "read-only"),
        (Some(OPERATOR), "operator"),
        (Some(ADMIN), "admin"),
    ] {
        let headers = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
        let (status, body) = request(port, "GET", "/api/whoami", &headers).unwrap();
        assert_eq!(status, 200, "{body}");
        let who: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(who["role"], role, "{body}");
    }
    // The log (JSON lines, as the unit asks) names no token.
    let said = std::fs::read_to_string(log.path()).unwrap();
    assert!(!said.contains(OPERATOR) && !said.contains(ADMIN), "{said}");
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}
