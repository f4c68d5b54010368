//! Two gateways on one Redis whose queues are `gw` and `{gw}:id` (a gateway's queue name is
//! not restricted; QStash queue names are): the deduplication ids, cancellations and delivered
//! messages kept of one are never the other's, though both gateways' keys start with `PREFIX:{gw}:` (issue 38).

mod common;

use common::*;
use delayq::fred::interfaces::KeysInterface;
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread")]
async fn a_gateway_named_under_anothers_tag_keeps_its_dedup_ids_cancellations_and_messages() {
    let redis = TestRedis::start();
    let receiver = Receiver::start().await;
    let plain = TestGateway::start(&redis, &receiver, |c| c.with_queue("gw")).await;
    let keep = Duration::from_secs(600);
    let tagged = TestGateway::start(&redis, &receiver, |c| {
        c.with_queue("{gw}:id").with_keep_delivered(keep)
    })
    .await;

    // Before, both ids were `delayq_gateway_dedup:{gw}:id:id:d1`.
    let to_plain = format!("{}200/plain", receiver.base());
    let to_tagged = format!("{}200/tagged", receiver.base());
    let (status, first) = plain
        .publish(
            &to_plain,
            &[("Upstash-Deduplication-Id", "id:d1")],
            b"a".to_vec(),
        )
        .await;
    assert_eq!(status, 201, "{first}");
    let (status, second) = tagged
        .publish(
            &to_tagged,
            &[("Upstash-Deduplication-Id", "d1")],
            b"b".to_vec(),
        )
        .await;
    assert_eq!(
        status, 201,
        "{second}: not a duplicate of the other gateway's message"
    );
    assert_ne!(first["messageId"], second["messageId"]);
    receiver.wait_for("/200/plain", 1).await;
    receiver.wait_for("/200/tagged", 1).await;

    // A delivered message `tagged` keeps readable is not `plain`'s `id:M` (before, both were
    // `delayq_gateway_delivered:{gw}:id:M`).
    let delivered = second["messageId"].as_str().unwrap();
    let deadline = Instant::now() + PATIENCE;
    // The DELIVERED event is written after the record moved to the kept ones.
    let events = format!("/v2/events?messageId={delivered}");
    loop {
        let (_, found) = tagged.call("GET", &events).await;
        if found["events"][0]["state"] == "DELIVERED" {
            break;
        }
        assert!(Instant::now() < deadline, "never delivered: {found}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let (status, kept) = tagged
        .call("GET", &format!("/v2/messages/{delivered}"))
        .await;
    assert_eq!(status, 200, "kept readable where it was published: {kept}");
    let (status, read) = plain
        .call("GET", &format!("/v2/messages/id:{delivered}"))
        .await;
    assert_eq!(status, 404, "the other gateway's message: {read}");

    // A cancellation `tagged` keeps for its message `M` (as for a message in flight when it was
    // cancelled) stays when `plain` is asked to cancel `id:M`, a message it does not have:
    // before, both were `delayq_gateway_cancelled:{gw}:id:M`, and `plain`'s not-found cleared it.
    let to_cancelled = format!("{}200/cancelled", receiver.base());
    let (status, later) = tagged
        .publish(&to_cancelled, &[("Upstash-Delay", "2s")], b"c".to_vec())
        .await;
    assert_eq!(status, 201, "{later}");
    let id = later["messageId"].as_str().unwrap();
    let client = delayq::connect(&redis.url()).await.unwrap();
    let marker = format!("delayq_gateway_cancelled:{{gw}}:id:{id}");
    let _: () = client.set(&marker, 1, None, None, false).await.unwrap();
    let (status, answer) = plain.call("DELETE", &format!("/v2/messages/id:{id}")).await;
    assert_eq!(status, 404, "{answer}");
    let kept: i64 = client.exists(&marker).await.unwrap();
    assert_eq!(kept, 1, "the other gateway's cancellation was cleared");
    // `tagged` drops its message unsent when it comes due, and clears the cancellation then.
    let deadline = Instant::now() + PATIENCE;
    while client.exists::<i64, _>(&marker).await.unwrap() == 1 {
        assert!(
            Instant::now() < deadline,
            "the cancellation was never consumed"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(receiver.to("/200/cancelled").is_empty());

    plain.shutdown().await;
    tagged.shutdown().await;
}
