//! The dashboard's view of a real `delayq gateway` (`GET /api/gateway`, a gateway queue's rows
//! and entry): before the gateway starts it lists none; once it runs, a delayed message
//! published with a forwarded `Authorization` reads decoded (method, URL, message id, labels,
//! body and length) with the credential redacted, one whose first attempt failed reads with
//! its attempt count, a message enqueued to a QStash queue reads
//! in its lane with the queue's name, and the Gateway answer lists that queue with its lag.
//! A plain queue's rows carry no message; a dashboard whose `--match` leaves the lanes out
//! lists the gateway without them.

use crate::common::{wait_until, TestRedis, PATIENCE};
use crate::dashboard::{dashboard, dashboard_with, json};
use crate::observe::{delayq, free_port, request, Daemon, BIN};
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const TOKEN: &str = "tok_dashboard_gateway_0123456789";
const SECRET: &str = "Bearer forwarded-credential-never-shown";

/// A file holding `text`, readable by its owner only.
fn secret(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, format!("{text}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    path
}

/// `POST path` on the gateway with the admin token and `headers`: the answer's JSON.
fn post(port: u16, path: &str, headers: &str) -> Value {
    let auth = format!("Authorization: Bearer {TOKEN}\r\n{headers}");
    let (status, body) = request(port, "POST", path, &auth).unwrap();
    assert!(status == 200 || status == 201, "{path}: {status} {body}");
    serde_json::from_str(&body).unwrap()
}

#[test]
fn the_dashboard_reads_a_gateways_messages_and_queues_with_secrets_redacted() {
    let redis = TestRedis::start_with(&[]);
    let url = redis.url();
    delayq(&url, &["offer", "plain", "a plain value", "--delay", "1h"]);
    let (_ui, ui) = dashboard(&redis);
    assert_eq!(
        json(ui, "/api/gateway", 200)["gateways"],
        serde_json::json!([])
    );

    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let _gateway = Daemon(
        Command::new(BIN)
            .args(["--url", &url, "gateway", "--listen"])
            .arg(format!("127.0.0.1:{port}"))
            .arg("--token-file")
            .arg(secret(dir.path(), "token", TOKEN))
            .arg("--signing-key-file")
            .arg(secret(dir.path(), "key", "sig_dashboard_gateway_key"))
            .args(["--allow-destination", "http://127.0.0.1:9/"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_until("the gateway", PATIENCE, || {
        let auth = format!("Authorization: Bearer {TOKEN}\r\n");
        match request(port, "GET", "/v2/keys", &auth) {
            Ok((200, _)) => Ok(()),
            other => Err(format!("{other:?}")),
        }
    });
    let published = post(
        port,
        "/v2/publish/http://127.0.0.1:9/hook?x=1",
        &format!(
            "Upstash-Delay: 1h\r\nUpstash-Label: billing\r\n\
             Upstash-Forward-Authorization: {SECRET}\r\nUpstash-Forward-X-Trace: t-1\r\n"
        ),
    );
    let id = published["messageId"].as_str().unwrap().to_owned();
    let queued = post(
        port,
        "/v2/enqueue/emails/http://127.0.0.1:9/mail",
        "Upstash-Delay: 1h\r\n",
    );

    // Refused at 127.0.0.1:9: its first attempt fails, its next waits an hour.
    let retried = post(
        port,
        "/v2/publish/http://127.0.0.1:9/retried",
        "Upstash-Retries: 2\r\nUpstash-Retry-Delay: 3600000\r\n",
    );
    let retried_row = wait_until("the failed attempt counted", PATIENCE, || {
        let page = json(ui, "/api/queues/delayq-gateway?tab=pending", 200);
        let rows = page["rows"].as_array().cloned().unwrap_or_default();
        rows.into_iter()
            .find(|r| r["message"]["messageId"] == retried["messageId"] && r["attempts"] == 1)
            .ok_or_else(|| page.to_string())
    });
    assert_eq!(retried_row["message"]["url"], "http://127.0.0.1:9/retried");

    let page = json(ui, "/api/queues/delayq-gateway?tab=pending", 200);
    assert_eq!(page["gateway"], "delayq-gateway", "{page}");
    // Nor in the envelope's bytes, as text or hex: a gateway row has no `value` preview.
    let hex: String = "forwarded-credential"
        .bytes()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert!(!page.to_string().contains("forwarded-credential"), "{page}");
    assert!(!page.to_string().contains(&hex), "{page}");
    let row = page["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["message"]["messageId"] == id.as_str())
        .unwrap_or_else(|| panic!("no row of {id}: {page}"));
    let message = &row["message"];
    assert_eq!(row["attempts"], 0, "{row}");
    assert_eq!(message["method"], "POST");
    assert_eq!(message["url"], "http://127.0.0.1:9/hook?x=1");
    assert_eq!(message["labels"], serde_json::json!(["billing"]));
    assert_eq!(
        message["header"]["authorization"],
        serde_json::json!(["[redacted]"])
    );
    assert_eq!(message["header"]["x-trace"], serde_json::json!(["t-1"]));
    assert_eq!(
        (&message["body"], &message["bodyLength"]),
        (&"".into(), &0.into())
    );
    let handle = row["handle"].as_str().unwrap();
    let entry = json(
        ui,
        &format!("/api/queues/delayq-gateway/job/pending/{handle}?at=0"),
        200,
    );
    assert_eq!(entry["message"]["messageId"], id.as_str(), "{entry}");
    assert_eq!(entry["attempts"], 0, "{entry}");
    assert!(
        !entry.to_string().contains("forwarded-credential"),
        "{entry}"
    );
    assert!(!entry.to_string().contains(&hex), "{entry}");

    let lane = json(
        ui,
        "/api/queues/delayq-gateway%3Aq%3Aemails?tab=pending",
        200,
    );
    assert_eq!(lane["gateway"], "delayq-gateway", "{lane}");
    let message = &lane["rows"][0]["message"];
    assert_eq!(message["messageId"], queued["messageId"], "{lane}");
    assert_eq!(message["queueName"], "emails");

    // A schedule's template envelope holds its forwarded headers: the schedules tab shows its
    // method and destination, never its bytes.
    post(
        port,
        "/v2/schedules/http://127.0.0.1:9/tick",
        &format!("Upstash-Cron: */5 * * * *\r\nUpstash-Forward-Authorization: {SECRET}\r\n"),
    );
    let schedules = json(ui, "/api/queues/delayq-gateway/schedules", 200);
    let text = schedules.to_string();
    assert!(
        !text.contains("forwarded-credential") && !text.contains(&hex),
        "{text}"
    );
    let tick = &schedules["schedules"][0];
    assert_eq!(
        tick["value"]["value"], "POST http://127.0.0.1:9/tick",
        "{tick}"
    );
    assert_eq!(
        tick["schedule"]["header"]["authorization"],
        serde_json::json!(["[redacted]"])
    );

    let plain = json(ui, "/api/queues/plain?tab=pending", 200);
    assert!(
        plain["gateway"].is_null() && plain["rows"][0].get("message").is_none(),
        "{plain}"
    );

    let gateways = json(ui, "/api/gateway", 200);
    let gateway = &gateways["gateways"][0];
    assert_eq!(gateway["name"], "delayq-gateway", "{gateways}");
    assert_eq!(gateways["gateways"].as_array().unwrap().len(), 1);
    let emails = &gateway["queues"][0];
    assert_eq!(
        (
            &emails["name"],
            &emails["lane"],
            &emails["lag"],
            &emails["paused"]
        ),
        (
            &"emails".into(),
            &"delayq-gateway:q:emails".into(),
            &1.into(),
            &false.into()
        ),
        "{gateway}"
    );
    assert_eq!(gateway["dlq"], 0);
    assert_eq!(gateway["schedules"]["total"], 1);

    // A dashboard whose --match leaves the lanes out lists the gateway without them (it read
    // none: a lane outside --match is never read).
    let (_only, only) = dashboard_with(&redis, &[("DELAYQ_MATCH", "delayq-gateway")]);
    let gateways = json(only, "/api/gateway", 200);
    let gateway = &gateways["gateways"][0];
    assert_eq!(gateway["name"], "delayq-gateway", "{gateways}");
    assert_eq!(gateway["queues"], serde_json::json!([]), "{gateway}");
    assert_eq!(gateway["lanes"], 1, "{gateway}");
}
