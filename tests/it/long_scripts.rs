//! A script that runs long on a big queue reads everything it needs before its first write, so
//! Redis can still stop it with `SCRIPT KILL` (a script that has written can only be stopped by
//! `SHUTDOWN NOSAVE`; until it ends every other client, Java peers included, gets BUSY).

use crate::common::queue::{connect, manual_queue};
use crate::common::{unique_name, TestRedis};
use delayq::QueueKeys;
use fred::clients::Client;
use fred::interfaces::{LuaInterface, SortedSetsInterface};
use std::time::{Duration, Instant};

/// Entries in the big queue: enough for a whole-list scan to outlast the busy threshold.
const ENTRIES: i64 = 200_000;

/// Fills the queue with `ENTRIES` current-format entries, `value` first and last, in one script.
async fn fill(client: &Client, keys: &QueueKeys, value: &str) {
    let script = r#"
        local n, value = tonumber(ARGV[1]), ARGV[2]
        local batch, scores = {}, {}
        for i = 1, n do
            local v = (i == 1 or i == n) and value or ('filler-' .. i)
            local entry = struct.pack('Bc0Lc0', 8, string.format('%08d', i), #v, v)
            batch[#batch + 1] = entry
            scores[#scores + 1] = 4000000000000 + i
            scores[#scores + 1] = entry
            if #batch == 500 or i == n then
                redis.call('rpush', KEYS[2], unpack(batch))
                redis.call('zadd', KEYS[1], unpack(scores))
                batch, scores = {}, {}
            end
        end
        return n
    "#;
    let _: i64 = client
        .eval(
            script,
            vec![keys.timeout(), keys.order()],
            vec![ENTRIES.to_string(), value.to_owned()],
        )
        .await
        .unwrap();
}

/// Waits until the server says BUSY, then kills the script; returns SCRIPT KILL's reply.
fn kill_when_busy(redis: &TestRedis) -> String {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !redis.cli(&["PING"]).contains("BUSY") {
        assert!(Instant::now() < deadline, "the script never got busy");
        std::thread::sleep(Duration::from_millis(20));
    }
    redis.cli(&["SCRIPT", "KILL"])
}

#[tokio::test(flavor = "multi_thread")]
async fn long_scans_are_killable_and_change_nothing() {
    let redis = TestRedis::start_with(&["--busy-reply-threshold", "100"]);
    let client = connect(&redis.url()).await;
    let name = unique_name("long");
    let queue = manual_queue(&client, &name).await;
    let keys = queue.keys().clone();
    fill(&client, &keys, "target").await;
    let first_entry = {
        let v = "target";
        let mut entry = vec![8u8];
        entry.extend_from_slice(b"00000001");
        entry.extend_from_slice(&(v.len() as u64).to_le_bytes());
        entry.extend_from_slice(v.as_bytes());
        entry
    };
    let score: Option<f64> = client
        .zscore(keys.timeout(), first_entry.as_slice())
        .await
        .unwrap();

    for op in ["reschedule", "remove_all", "offer_unique"] {
        let q = queue.clone();
        let call = tokio::spawn(async move {
            let target = [String::from("target")];
            match op {
                "reschedule" => q
                    .reschedule("target", Duration::from_secs(60))
                    .await
                    .map(drop),
                "remove_all" => q.remove_all(&target).await.map(drop),
                _ => q
                    .offer_unique("target", Duration::from_secs(60))
                    .await
                    .map(drop),
            }
        });
        let killed = tokio::task::block_in_place(|| kill_when_busy(&redis));
        assert_eq!(
            killed, "OK",
            "{op}: the script had written before it was killed"
        );
        let result = call.await.unwrap();
        assert!(result.is_err(), "{op}: a killed call must fail");
        assert_eq!(queue.size().await.unwrap(), ENTRIES as u64, "{op}");
        let card: u64 = client.zcard(keys.timeout()).await.unwrap();
        assert_eq!(card, ENTRIES as u64, "{op}");
        let now: Option<f64> = client
            .zscore(keys.timeout(), first_entry.as_slice())
            .await
            .unwrap();
        assert_eq!(now, score, "{op}: the first equal entry's due time changed");
    }
}
