//! `DELETE /v2/dlq`: many dead letters deleted in one request, with the ids in the query (as
//! the node SDK sends them) or in a JSON body (as the Python SDK does); bad input refused with
//! nothing deleted.

mod common;

use common::*;

/// `DELETE /v2/dlq` + `query` with `body`: its status and JSON.
async fn delete_many(gw: &TestGateway, query: &str, body: &str) -> (u16, serde_json::Value) {
    let response = reqwest::Client::new()
        .delete(format!("{}/v2/dlq{query}", gw.base))
        .bearer_auth(TOKEN)
        .header("Content-Type", "application/json")
        .body(body.to_owned())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let json = serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
    (status, json)
}

async fn dlq_ids(gw: &TestGateway) -> Vec<String> {
    let (_, list) = gw.call("GET", "/v2/dlq").await;
    let mut ids: Vec<String> = list["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["dlqId"].as_str().unwrap().to_owned())
        .collect();
    ids.sort();
    ids
}

#[tokio::test(flavor = "multi_thread")]
async fn dead_letters_deleted_by_ids_in_the_query_and_in_the_body() {
    let redis = TestRedis::start();
    let receiver = Receiver::start().await;
    let gw = TestGateway::start(&redis, &receiver, |c| c).await;
    let mut ids = Vec::new();
    for path in ["500/bulk-a", "500/bulk-b", "500/bulk-c", "500/bulk-d"] {
        let url = format!("{}{path}", receiver.base());
        let (_, answer) = gw
            .publish(&url, &[("Upstash-Retries", "0")], b"d".to_vec())
            .await;
        let id = answer["messageId"].as_str().unwrap().to_owned();
        gw.wait_dead(&id).await;
        ids.push(id);
    }
    let mut all = ids.clone();
    all.sort();
    assert_eq!(dlq_ids(&gw).await, all);

    // Bad input: a 400 JSON error each, and every dead letter still there.
    let many: Vec<String> = (0..1_001).map(|n| format!("\"x{n}\"")).collect();
    let many = format!("{{\"dlqIds\": [{}]}}", many.join(","));
    let a = &ids[0];
    let bad = [
        ("".to_owned(), "".to_owned()),
        ("".to_owned(), "{\"dlqIds\": []}".to_owned()),
        ("".to_owned(), format!("{{\"dlqIds\": [\"{a}\"")),
        ("".to_owned(), format!("{{\"dlqIds\": \"{a}\"}}")),
        ("".to_owned(), format!("{{\"dlqIds\": [\"{a}\", 7]}}")),
        (
            "".to_owned(),
            format!("{{\"dlqIds\": [\"{a}\"], \"all\": true}}"),
        ),
        ("".to_owned(), format!("{{\"dlqIds\": [\"{a}\", \"\"]}}")),
        ("".to_owned(), "[]".to_owned()),
        ("".to_owned(), many),
        (format!("?dlqIds={a}&url=http%3A%2F%2Fx"), "".to_owned()),
        ("?count=1001".to_owned(), "".to_owned()),
        (format!("?dlqIds={a}&cursor=1"), "".to_owned()),
        (format!("?dlqIds={a}&dlqIds="), "".to_owned()),
    ];
    for (query, body) in &bad {
        let (status, answer) = delete_many(&gw, query, body).await;
        assert_eq!(status, 400, "{query} {body}: {answer}");
        assert!(answer["error"].is_string(), "{query} {body}: {answer}");
    }
    assert_eq!(
        dlq_ids(&gw).await,
        all,
        "a refused request deleted something"
    );

    // Ids in the query (repeated, as node's URLSearchParams writes them); an unknown id is not
    // counted, a repeated one once.
    let query = format!("?dlqIds={a}&dlqIds=msg_unknown&dlqIds={a}");
    let (status, answer) = delete_many(&gw, &query, "").await;
    assert_eq!((status, &answer), (200, &serde_json::json!({"deleted": 1})));
    // Ids in the body (as the Python SDK sends them), plus one in the query.
    let (b, c, d) = (&ids[1], &ids[2], &ids[3]);
    let body = format!("{{\"dlqIds\": [\"{b}\", \"{c}\", \"{a}\", \"msg_nope\"]}}");
    let (status, answer) = delete_many(&gw, &format!("?dlqIds={d}"), &body).await;
    assert_eq!((status, &answer), (200, &serde_json::json!({"deleted": 3})));
    assert!(dlq_ids(&gw).await.is_empty());
    for id in &ids {
        assert_eq!(gw.call("GET", &format!("/v2/dlq/{id}")).await.0, 404);
    }
    // Nothing left to delete: 200 with none counted, as QStash answers.
    let (status, answer) = delete_many(&gw, &format!("?dlqIds={a}"), "").await;
    assert_eq!((status, &answer), (200, &serde_json::json!({"deleted": 0})));
    gw.shutdown().await;
}
