//! QStash's DLQ filters against a real redis-server: `GET /v2/dlq` by url, label,
//! responseStatus, dates, ids (each repeatable, any value matching, filters together all
//! matching); `DELETE /v2/dlq` and `POST /v2/dlq/retry` by filter or all, `count` at a time
//! with a cursor while more match; a bad filter or bound is a 400 with nothing done.

mod common;

use common::*;
use serde_json::Value;

/// A `method` request to `path` with the token: its status and JSON.
async fn call(gw: &TestGateway, method: &str, path: &str) -> (u16, Value) {
    gw.call(method, path).await
}

/// The message ids `GET /v2/dlq` + `query` lists, sorted; panics unless it answers 200.
async fn listed(gw: &TestGateway, query: &str) -> Vec<String> {
    let (status, list) = call(gw, "GET", &format!("/v2/dlq{query}")).await;
    assert_eq!(status, 200, "{query}: {list}");
    let mut ids: Vec<String> = list["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["messageId"].as_str().unwrap().to_owned())
        .collect();
    ids.sort();
    ids
}

fn sorted(ids: &[&String]) -> Vec<String> {
    let mut ids: Vec<String> = ids.iter().map(|s| (*s).clone()).collect();
    ids.sort();
    ids
}

/// `text` for a query value: `:` and `/` may stay as they are there; only these are escaped.
fn encoded(text: &str) -> String {
    text.replace('%', "%25")
        .replace('&', "%26")
        .replace('+', "%2B")
        .replace('=', "%3D")
}

/// Three dead letters: (url, id) of a 500 labelled red, a 404 labelled blue, a 500 labelled red.
async fn three_dead(gw: &TestGateway, receiver: &Receiver) -> Vec<(String, String)> {
    let mut dead = Vec::new();
    for (path, label) in [("500/f-a", "red"), ("404/f-b", "blue"), ("500/f-c", "red")] {
        let url = format!("{}{path}", receiver.base());
        let headers = [("Upstash-Retries", "0"), ("Upstash-Label", label)];
        let (status, answer) = gw.publish(&url, &headers, b"d".to_vec()).await;
        assert_eq!(status, 201, "{answer}");
        let id = answer["messageId"].as_str().unwrap().to_owned();
        gw.wait_dead(&id).await;
        dead.push((url, id));
    }
    dead
}

#[tokio::test(flavor = "multi_thread")]
async fn the_list_is_filtered_as_the_sdks_ask() {
    let redis = TestRedis::start();
    let receiver = Receiver::start().await;
    let gw = TestGateway::start(&redis, &receiver, |c| c).await;
    let before = now_ms();
    let dead = three_dead(&gw, &receiver).await;
    let after = now_ms();
    let [(url_a, a), (_, b), (_, c)] = &dead[..] else {
        panic!("three");
    };
    assert_eq!(listed(&gw, "").await, sorted(&[a, b, c]));
    let by_url = format!("?url={}", encoded(url_a));
    assert_eq!(listed(&gw, &by_url).await, sorted(&[a]));
    assert_eq!(listed(&gw, "?responseStatus=404").await, sorted(&[b]));
    assert_eq!(listed(&gw, "?label=red").await, sorted(&[a, c]));
    assert_eq!(
        listed(&gw, "?label=red&label=blue").await,
        sorted(&[a, b, c])
    );
    assert_eq!(
        listed(&gw, &format!("{by_url}&responseStatus=404")).await,
        sorted(&[])
    );
    assert_eq!(
        listed(&gw, &format!("?fromDate={before}&toDate={after}")).await,
        sorted(&[a, b, c])
    );
    assert!(listed(&gw, &format!("?fromDate={}", after + 1))
        .await
        .is_empty());
    assert_eq!(
        listed(&gw, &format!("?dlqIds={a}&dlqIds={c}")).await,
        sorted(&[a, c])
    );
    assert_eq!(listed(&gw, &format!("?messageId={b}")).await, sorted(&[b]));
    // No URL group holds a message here.
    assert!(listed(&gw, "?topicName=group").await.is_empty());
    // A page of one with the cursor, through the matching ones only.
    let (_, page) = call(&gw, "GET", "/v2/dlq?label=red&count=1").await;
    assert_eq!(page["messages"].as_array().unwrap().len(), 1, "{page}");
    let cursor = page["cursor"].as_str().unwrap();
    let (_, rest) = call(
        &gw,
        "GET",
        &format!("/v2/dlq?label=red&count=1&cursor={cursor}"),
    )
    .await;
    assert_eq!(rest["messages"].as_array().unwrap().len(), 1, "{rest}");
    assert!(rest.get("cursor").is_none(), "{rest}");
    // A filter that is not one, or a bad value: a 400, not every dead letter.
    for bad in [
        "?foo=1",
        "?responseStatus=x",
        "?fromDate=yesterday",
        "?callerIp=127.0.0.1",
        "?url=",
        "?count=0",
        "?cursor=x",
    ] {
        let (status, answer) = call(&gw, "GET", &format!("/v2/dlq{bad}")).await;
        assert_eq!(status, 400, "{bad}: {answer}");
        assert!(answer["error"].is_string(), "{bad}: {answer}");
    }
    gw.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn bulk_delete_and_retry_by_filter_count_at_a_time() {
    let redis = TestRedis::start();
    let receiver = Receiver::start().await;
    let gw = TestGateway::start(&redis, &receiver, |c| c).await;
    let dead = three_dead(&gw, &receiver).await;
    let [(_, a), (url_b, b), (_, c)] = &dead[..] else {
        panic!("three");
    };
    // Refused, with nothing deleted or retried: no ids, filters or count; over the bound; a bad
    // filter; ids beside a filter.
    for (method, path) in [
        ("DELETE", "/v2/dlq".to_owned()),
        ("DELETE", "/v2/dlq?count=1001".to_owned()),
        ("DELETE", "/v2/dlq?label=red&count=5000".to_owned()),
        ("DELETE", "/v2/dlq?colour=red".to_owned()),
        ("DELETE", format!("/v2/dlq?dlqIds={a}&label=red")),
        ("POST", "/v2/dlq/retry".to_owned()),
        ("POST", "/v2/dlq/retry?responseStatus=abc".to_owned()),
        ("POST", "/v2/dlq/retry?count=1001".to_owned()),
    ] {
        let (status, answer) = call(&gw, method, &path).await;
        assert_eq!(status, 400, "{method} {path}: {answer}");
    }
    assert_eq!(listed(&gw, "").await, sorted(&[a, b, c]));
    assert_eq!(receiver.to("/404/f-b").len(), 1);

    // By label, one at a time: a cursor while more match, none after the last.
    let (status, first) = call(&gw, "DELETE", "/v2/dlq?label=red&count=1").await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["deleted"], 1, "{first}");
    let cursor = first["cursor"].as_str().expect("more red ones").to_owned();
    let path = format!("/v2/dlq?label=red&count=1&cursor={cursor}");
    let (_, second) = call(&gw, "DELETE", &path).await;
    assert_eq!(second["deleted"], 1, "{second}");
    assert!(second.get("cursor").is_none(), "{second}");
    assert_eq!(listed(&gw, "").await, sorted(&[b]));

    // Retry by status: redelivered (and dead again: it answers 404 every time).
    let (status, retried) = call(&gw, "POST", "/v2/dlq/retry?responseStatus=404&count=10").await;
    assert_eq!(status, 201, "{retried}");
    assert_eq!(
        retried["responses"],
        serde_json::json!([{ "messageId": b }])
    );
    let again = receiver.wait_for("/404/f-b", 2).await;
    assert_eq!(again[1].header("upstash-message-id"), b.as_str());
    assert!(again[1].target.ends_with("f-b") && url_b.ends_with("f-b"));
    gw.wait_dead(b).await;

    // All (the JS SDK's `all: true` sends only count): the rest.
    let (status, all) = call(&gw, "DELETE", "/v2/dlq?count=100").await;
    assert_eq!((status, &all), (200, &serde_json::json!({ "deleted": 1 })));
    assert!(listed(&gw, "").await.is_empty());
    gw.shutdown().await;
}
