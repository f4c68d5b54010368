//! QStash queues against a real redis-server: FIFO with parallelism 1, parallelism as a cap,
//! pause and resume, the queues API, a queue made through another gateway served, and bad
//! input refused with nothing stored.

mod common;
mod slow;

use common::*;
use serde_json::json;
use slow::SlowReceiver;
use std::time::Duration;

async fn post_json(gw: &TestGateway, path: &str, body: serde_json::Value) -> (u16, String) {
    let response = reqwest::Client::new()
        .post(format!("{}{path}", gw.base))
        .bearer_auth(TOKEN)
        .header("Content-Type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

/// A `method` request to `path` with the token: its status (the body may be empty).
async fn call_empty(gw: &TestGateway, method: &str, path: &str) -> (u16, String) {
    let response = reqwest::Client::new()
        .request(method.parse().unwrap(), format!("{}{path}", gw.base))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

async fn enqueue(
    base: &str,
    queue: &str,
    url: &str,
    headers: &[(&str, &str)],
) -> (u16, serde_json::Value) {
    let mut request = reqwest::Client::new()
        .post(format!("{base}/v2/enqueue/{queue}/{url}"))
        .bearer_auth(TOKEN)
        .body("q");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (
        status,
        serde_json::from_slice(&response.bytes().await.unwrap()).unwrap(),
    )
}

async fn start(redis: &TestRedis, slow: &SlowReceiver) -> (Receiver, TestGateway) {
    let receiver = Receiver::start().await;
    let base = slow.base();
    let gw = TestGateway::start(redis, &receiver, move |c| c.allow_destination(base)).await;
    (receiver, gw)
}

#[tokio::test(flavor = "multi_thread")]
async fn parallelism_one_is_fifo_one_at_a_time() {
    let redis = TestRedis::start();
    let slow = SlowReceiver::start(Duration::from_millis(100)).await;
    let (_receiver, gw) = start(&redis, &slow).await;
    let (status, body) = post_json(
        &gw,
        "/v2/queues",
        json!({"queueName": "orders", "parallelism": 1, "paused": true}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    // Enqueued while paused: all ready at once when it resumes.
    for i in 0..8 {
        let (status, answer) =
            enqueue(&gw.base, "orders", &format!("{}fifo/{i}", slow.base()), &[]).await;
        assert_eq!(status, 201, "{answer}");
        assert!(answer["messageId"].as_str().unwrap().starts_with("msg_"));
        // Distinct offer times: entries due in the same millisecond have no order.
        tokio::time::sleep(Duration::from_millis(3)).await;
    }
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert!(slow.calls("fifo").is_empty());
    // All eight still held by the paused queue: none taken.
    let (_, queue) = gw.call("GET", "/v2/queues/orders").await;
    assert_eq!((&queue["paused"], &queue["lag"]), (&json!(true), &json!(8)));
    let (status, _) = call_empty(&gw, "POST", "/v2/queues/orders/resume").await;
    assert_eq!(status, 200);
    let mut calls = slow.wait_for("fifo", 8).await;
    calls.sort_by_key(|c| c.start_ms);
    let order: Vec<&str> = calls.iter().map(|c| c.path.as_str()).collect();
    let want: Vec<String> = (0..8).map(|i| format!("/fifo/{i}")).collect();
    assert_eq!(order, want);
    assert_eq!(slow.peak("fifo"), 1);
    for pair in calls.windows(2) {
        assert!(pair[1].start_ms >= pair[0].end_ms, "{pair:?}");
    }
    let (status, queue) = gw.call("GET", "/v2/queues/orders").await;
    assert_eq!(status, 200);
    assert_eq!(queue["name"], "orders");
    assert_eq!(queue["parallelism"], 1);
    assert_eq!(queue["paused"], false);
    assert_eq!(queue["lag"], 0);
    assert!(queue["createdAt"].as_i64().unwrap() > 0);
    gw.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn parallelism_caps_deliveries_at_once() {
    let redis = TestRedis::start();
    let slow = SlowReceiver::start(Duration::from_millis(300)).await;
    let (_receiver, gw) = start(&redis, &slow).await;
    // Held at the receiver until three are under way: the parallelism is seen used whatever
    // the machine's speed (timed answers alone may each end before the next starts).
    slow.close("par");
    post_json(
        &gw,
        "/v2/queues",
        json!({"queueName": "three", "parallelism": 3}),
    )
    .await;
    for i in 0..12 {
        let (status, _) = enqueue(&gw.base, "three", &format!("{}par/{i}", slow.base()), &[]).await;
        assert_eq!(status, 201);
    }
    slow.wait_running("par", 3).await;
    slow.open("par");
    slow.wait_for("par", 12).await;
    // Three at once, never more.
    assert_eq!(slow.peak("par"), 3);
    let (_, list) = gw.call("GET", "/v2/queues").await;
    let names: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["three"]);
    gw.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn paused_queue_delivers_nothing_until_resumed() {
    let redis = TestRedis::start();
    let slow = SlowReceiver::start(Duration::from_millis(10)).await;
    let (_receiver, gw) = start(&redis, &slow).await;
    // Made by the first enqueue, with parallelism 1.
    let (status, _) = enqueue(&gw.base, "held", &format!("{}held/first", slow.base()), &[]).await;
    assert_eq!(status, 201);
    slow.wait_for("held", 1).await;
    let (_, queue) = gw.call("GET", "/v2/queues/held").await;
    assert_eq!(queue["parallelism"], 1);
    // Its worker runs (registered as serving the queue's lane)...
    let lane = format!("{}:q:held", gw.gateway.queue().name());
    wait_workers(&redis, &lane, 1).await;
    let (status, _) = call_empty(&gw, "POST", "/v2/queues/held/pause").await;
    assert_eq!(status, 200);
    // ... and stops once the pause reaches it (each process reads the queues every 250 ms):
    // waited for, however slow the machine, before the next messages come.
    wait_workers(&redis, &lane, 0).await;
    for i in 0..3 {
        enqueue(&gw.base, "held", &format!("{}held/{i}", slow.base()), &[]).await;
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(slow.calls("held").len(), 1);
    let (_, queue) = gw.call("GET", "/v2/queues/held").await;
    assert_eq!(
        (queue["paused"].clone(), queue["lag"].clone()),
        (json!(true), json!(3))
    );
    // A queue with messages is not deleted.
    let (status, _) = call_empty(&gw, "DELETE", "/v2/queues/held").await;
    assert_eq!(status, 409);
    call_empty(&gw, "POST", "/v2/queues/held/resume").await;
    slow.wait_for("held", 4).await;
    let deadline = std::time::Instant::now() + PATIENCE;
    while gw.call("GET", "/v2/queues/held").await.1["lag"] != 0 {
        assert!(std::time::Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (status, _) = call_empty(&gw, "DELETE", "/v2/queues/held").await;
    assert_eq!(status, 200);
    assert_eq!(gw.call("GET", "/v2/queues/held").await.0, 404);
    gw.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_queue_made_through_another_gateway_is_served() {
    let redis = TestRedis::start();
    let slow = SlowReceiver::start(Duration::from_millis(10)).await;
    let (_receiver, delivering) = start(&redis, &slow).await;
    // A second gateway on the same Redis that only serves the API (no deliveries of its own).
    let client = delayq::connect(&redis.url()).await.unwrap();
    let config =
        delayq_gateway::GatewayConfig::new(TOKEN, CURRENT_KEY).allow_destination(slow.base());
    let api_only = delayq_gateway::Gateway::new(client, config).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let router = api_only.router();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    let (status, answer) =
        enqueue(&base, "elsewhere", &format!("{}other/1", slow.base()), &[]).await;
    assert_eq!(status, 201, "{answer}");
    slow.wait_for("other", 1).await;
    delivering.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_queue_input_is_refused_and_nothing_is_stored() {
    let redis = TestRedis::start();
    let slow = SlowReceiver::start(Duration::from_millis(10)).await;
    let (_receiver, gw) = start(&redis, &slow).await;
    let ok = format!("{}bad/x", slow.base());
    for name in ["bad%20name", "a*b", &"q".repeat(101)] {
        let (status, body) = enqueue(&gw.base, name, &ok, &[]).await;
        assert_eq!(status, 400, "{name}: {body}");
        assert!(body["error"].as_str().is_some());
    }
    let flow = [
        ("Upstash-Flow-Control-Key", "k"),
        ("Upstash-Flow-Control-Value", "parallelism=1"),
    ];
    assert_eq!(enqueue(&gw.base, "good", &ok, &flow).await.0, 400);
    assert_eq!(
        enqueue(&gw.base, "good", "http://127.0.0.2:1/x", &[])
            .await
            .0,
        403
    );
    for body in [
        json!({"queueName": "p0", "parallelism": 0}),
        json!({"queueName": "p", "parallelism": 1001}),
        json!({"queueName": "bad name"}),
        json!({"queueName": "x", "parallelism": 1, "burst": 2}),
        json!({"parallelism": 1}),
        json!([1]),
    ] {
        let (status, text) = post_json(&gw, "/v2/queues", body.clone()).await;
        assert_eq!(status, 400, "{body}: {text}");
        let error: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert!(error["error"].as_str().is_some(), "{text}");
    }
    assert_eq!(gw.call("GET", "/v2/queues/missing").await.0, 404);
    assert_eq!(gw.call("POST", "/v2/queues/missing/pause").await.0, 404);
    let (_, list) = gw.call("GET", "/v2/queues").await;
    assert_eq!(list, json!([]));
    let keys = std::process::Command::new("redis-cli")
        .args(["-p", &redis.port.to_string(), "--raw", "keys", "*"])
        .output()
        .unwrap();
    let keys = String::from_utf8(keys.stdout).unwrap();
    let stored: Vec<&str> = keys
        .lines()
        .filter(|k| {
            k.contains("gateway_messages") || k.contains(":q:") || k.contains("gateway_lanes")
        })
        .collect();
    assert!(stored.is_empty(), "{stored:?}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(slow.calls("bad").is_empty());
    gw.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn dead_letters_of_queues_and_flow_keys_are_in_the_dlq() {
    let redis = TestRedis::start();
    let slow = SlowReceiver::start(Duration::from_millis(1)).await;
    let (receiver, gw) = start(&redis, &slow).await;
    let url = format!("{}500-200/qdead", receiver.base());
    let (status, answer) = enqueue(&gw.base, "dying", &url, &[("Upstash-Retries", "0")]).await;
    assert_eq!(status, 201);
    let queued = answer["messageId"].as_str().unwrap().to_owned();
    let flow_url = format!("{}500-200/fdead", receiver.base());
    let (status, answer) = gw
        .publish(
            &flow_url,
            &[
                ("Upstash-Retries", "0"),
                ("Upstash-Flow-Control-Key", "k"),
                ("Upstash-Flow-Control-Value", "parallelism=1"),
            ],
            b"f".to_vec(),
        )
        .await;
    assert_eq!(status, 201);
    let flowed = answer["messageId"].as_str().unwrap().to_owned();
    let dead = gw.wait_dead(&queued).await;
    assert_eq!(dead["responseStatus"], 500);
    assert_eq!(dead["queueName"], "dying");
    gw.wait_dead(&flowed).await;
    for (id, path) in [(&queued, "/500-200/qdead"), (&flowed, "/500-200/fdead")] {
        let (status, _) = gw.call("POST", &format!("/v2/dlq/retry/{id}")).await;
        assert_eq!(status, 201);
        let got = receiver.wait_for(path, 2).await;
        assert_eq!(got[1].header("upstash-message-id"), id.as_str());
    }
    gw.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_message_being_retried_holds_its_queue() {
    let redis = TestRedis::start();
    let slow = SlowReceiver::start(Duration::from_millis(1)).await;
    let (receiver, gw) = start(&redis, &slow).await;
    post_json(
        &gw,
        "/v2/queues",
        json!({"queueName": "strict", "parallelism": 1, "paused": true}),
    )
    .await;
    let head = format!("{}500-500-200/hol-a", receiver.base());
    let (status, _) = enqueue(&gw.base, "strict", &head, &[("Upstash-Retries", "3")]).await;
    assert_eq!(status, 201);
    tokio::time::sleep(Duration::from_millis(5)).await;
    let next = format!("{}200/hol-b", receiver.base());
    enqueue(&gw.base, "strict", &next, &[]).await;
    call_empty(&gw, "POST", "/v2/queues/strict/resume").await;
    let b = receiver.wait_for("/200/hol-b", 1).await;
    let a = receiver.to("/500-500-200/hol-a");
    let retried: Vec<&str> = a.iter().map(|r| r.header("upstash-retried")).collect();
    assert_eq!(retried, ["0", "1", "2"]);
    assert!(a.iter().all(|r| r.at_ms <= b[0].at_ms), "{a:?} {b:?}");
    // Each retry freshly signed, after the backoff.
    for pair in a.windows(2) {
        assert!(pair[1].at_ms - pair[0].at_ms >= 150, "{pair:?}");
        assert_ne!(
            pair[0].header("upstash-signature"),
            pair[1].header("upstash-signature")
        );
    }
    gw.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn batch_items_go_to_their_queues() {
    let redis = TestRedis::start();
    let slow = SlowReceiver::start(Duration::from_millis(50)).await;
    let (_receiver, gw) = start(&redis, &slow).await;
    let batch = |items: serde_json::Value| post_json(&gw, "/v2/batch", items);
    let item = |i: usize, queue: Option<&str>| json!({"destination": format!("{}bq/{i}", slow.base()), "body": "b", "queue": queue});
    // A bad queue name refuses the whole batch: nothing stored.
    let (status, text) = batch(json!([item(0, Some("batched")), item(1, Some("bad name"))])).await;
    assert_eq!(status, 400, "{text}");
    assert_eq!(gw.call("GET", "/v2/queues/batched").await.0, 404);
    let items: Vec<_> = (0..4).map(|i| item(i, Some("batched"))).collect();
    let (status, text) = batch(json!(items)).await;
    assert_eq!(status, 201, "{text}");
    let answers: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(answers.as_array().unwrap().len(), 4);
    let mut calls = slow.wait_for("bq", 4).await;
    calls.sort_by_key(|c| c.start_ms);
    // All four, one at a time (their order is the offer order unless two were offered in the
    // same millisecond, which a batch may do: see docs/gateway.md).
    let mut paths: Vec<&str> = calls.iter().map(|c| c.path.as_str()).collect();
    paths.sort();
    assert_eq!(paths, ["/bq/0", "/bq/1", "/bq/2", "/bq/3"]);
    assert_eq!(slow.peak("bq"), 1);
    assert_eq!(
        gw.call("GET", "/v2/queues/batched").await.1["parallelism"],
        1
    );
    gw.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_new_parallelism_reaches_the_running_workers() {
    let redis = TestRedis::start();
    let slow = SlowReceiver::start(Duration::from_millis(300)).await;
    let (_receiver, gw) = start(&redis, &slow).await;
    // Held at the receiver until the parallelism was seen at work: one under way (the others
    // wait behind it), then three, whatever the machine's speed (timed answers alone may all
    // be over before the new parallelism is set).
    slow.close("grow");
    let upsert = |parallelism: u32, paused: bool| {
        post_json(
            &gw,
            "/v2/queues",
            json!({"queueName": "grow", "parallelism": parallelism, "paused": paused}),
        )
    };
    assert_eq!(upsert(1, false).await.0, 200);
    let (_, before) = gw.call("GET", "/v2/queues/grow").await;
    for i in 0..9 {
        enqueue(&gw.base, "grow", &format!("{}grow/{i}", slow.base()), &[]).await;
    }
    // Served one at a time, then, without a pause, three at a time: the first still held
    // counts among the three (its worker's stop waits for it).
    slow.wait_running("grow", 1).await;
    assert_eq!(slow.peak("grow"), 1);
    assert_eq!(upsert(3, false).await.0, 200);
    slow.wait_running("grow", 3).await;
    slow.open("grow");
    slow.wait_for("grow", 9).await;
    assert_eq!(slow.peak("grow"), 3);
    let (_, after) = gw.call("GET", "/v2/queues/grow").await;
    assert_eq!(after["parallelism"], 3);
    assert_eq!(after["createdAt"], before["createdAt"]);
    assert!(after["updatedAt"].as_i64() > before["updatedAt"].as_i64());
    gw.shutdown().await;
}
