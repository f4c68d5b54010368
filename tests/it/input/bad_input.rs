//! Bad data on Redis: malformed entries (quarantined, reported, never a panic), codec
//! mismatches (the raw bytes kept), and keys of the wrong type (an error naming the key, and
//! nothing lost or half-written, generated over every operation and every script).

use crate::common::queue::*;
use crate::common::{unique_name, TestRedis};
use bytes::Bytes;
use delayq::codec::{LongCodec, StringCodec};
use delayq::entry::pack;
use delayq::{DelayedQueue, EntryFormat, Error, QueueKeys};
use fred::clients::Client;
use fred::prelude::Value;
use std::time::Duration;

/// Three kinds of malformed entry: garbage, a truncated entry, a wrong length field.
fn bad_entries() -> Vec<Vec<u8>> {
    let garbage = b"not an entry at all".to_vec();
    let mut truncated = pack(&[1; 8], b"truncated-value");
    truncated.truncate(truncated.len() - 3);
    let mut wrong_len = pack(&[2; 8], b"abc");
    wrong_len[9..17].copy_from_slice(&100u64.to_le_bytes());
    vec![garbage, truncated, wrong_len]
}

#[tokio::test]
async fn transfer_quarantines_malformed_entries_and_moves_their_neighbours() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let queue = manual_queue(&client, &unique_name("bad-transfer")).await;
    let keys = queue.keys().clone();
    let now = now_ms();
    let bad = bad_entries();
    // Due order: good0, bad0, good1, bad1, good2, bad2, good3 (good ones written by hand too,
    // in current packing).
    let mut due = now - 100;
    for i in 0..4 {
        let good = pack(&[i as u8 + 10; 8], format!("good{i}").as_bytes());
        push_raw_entry(&client, keys.timeout(), keys.order(), &good, due).await;
        due += 1;
        if let Some(b) = bad.get(i) {
            push_raw_entry(&client, keys.timeout(), keys.order(), b, due).await;
            due += 1;
        }
    }
    // One good entry not yet due.
    queue
        .offer(&s("future"), Duration::from_secs(60))
        .await
        .unwrap();

    let outcome = queue.admin().transfer_due(100).await.unwrap();
    assert_eq!((outcome.moved, outcome.quarantined), (4, 3));
    assert_eq!(
        list_str(&client, keys.target()).await,
        vec!["good0", "good1", "good2", "good3"]
    );
    // The raw malformed entries, byte for byte, in due order.
    let quarantine: Vec<Vec<u8>> = list(&client, keys.quarantine())
        .await
        .iter()
        .map(|b| b.to_vec())
        .collect();
    assert_eq!(quarantine, bad);
    // They left the order list and the zset; the future entry stays.
    assert_eq!(queue.read_all().await.unwrap(), vec![s("future")]);
    assert_eq!(zset(&client, keys.timeout()).await.len(), 1);
    let stats = queue.inspect().stats().await.unwrap();
    assert_eq!((stats.pending, stats.quarantined, stats.ready), (1, 3, 4));
    // Transferring again changes nothing.
    let again = queue.admin().transfer_due(100).await.unwrap();
    assert_eq!((again.moved, again.quarantined), (0, 0));
    assert_eq!(int(&client, "LLEN", keys.quarantine()).await, 3);
}

#[tokio::test]
async fn a_running_scheduler_quarantines_too() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let name = unique_name("bad-scheduler");
    let keys = QueueKeys::new(name.as_str());
    let queue = DelayedQueue::new(client.clone(), name.as_str(), StringCodec)
        .await
        .unwrap();
    push_raw_entry(
        &client,
        keys.timeout(),
        keys.order(),
        b"\x08garbage",
        now_ms() + 100,
    )
    .await;
    queue
        .offer(&s("fine"), Duration::from_millis(150))
        .await
        .unwrap();
    let target = keys.target().to_owned();
    assert!(
        eventually(crate::common::PATIENCE, || async {
            int(&client, "LLEN", &target).await == 1
        })
        .await
    );
    assert_eq!(list_str(&client, &target).await, vec!["fine"]);
    assert_eq!(
        list(&client, keys.quarantine()).await,
        vec![&b"\x08garbage"[..]]
    );
    assert_eq!(queue.size().await.unwrap(), 0);
    queue.destroy().await.unwrap();
}

#[tokio::test]
async fn read_all_and_peek_report_malformed_entries() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    for (i, bad) in bad_entries().into_iter().enumerate() {
        let queue = manual_queue(&client, &unique_name("bad-read")).await;
        let keys = queue.keys().clone();
        push_raw_entry(
            &client,
            keys.timeout(),
            keys.order(),
            &bad,
            now_ms() + 60_000,
        )
        .await;
        queue
            .offer(&s("good"), Duration::from_secs(60))
            .await
            .unwrap();

        match queue.peek().await {
            Err(Error::MalformedEntry { key, entry, .. }) => {
                assert_eq!(key, keys.order());
                assert_eq!(entry, Bytes::from(bad.clone()), "case {i}");
            }
            other => panic!("case {i}: peek gave {other:?}"),
        }
        match queue.read_all().await {
            Err(Error::MalformedEntry { entry, .. }) => assert_eq!(entry, Bytes::from(bad.clone())),
            other => panic!("case {i}: read_all gave {other:?}"),
        }
        // pending reports it and goes on.
        let pending = queue.inspect().pending(0).await.unwrap();
        assert_eq!(pending.len(), 2);
        match &pending[0].value {
            Err(e) => assert!(matches!(**e, Error::MalformedEntry { .. }), "{e:?}"),
            Ok(v) => panic!("case {i}: pending decoded {v:?}"),
        }
        assert_eq!(pending[1].value.as_deref().unwrap(), "good");
        // contains / remove walk past it; remove never touches it.
        assert!(queue.contains(&s("good")).await.unwrap());
        assert!(queue.remove(&s("good")).await.unwrap());
        assert_eq!(
            list(&client, keys.order()).await,
            vec![Bytes::from(bad.clone())]
        );
        assert!(queue.retain_all(&[]).await.is_ok());
        assert_eq!(list(&client, keys.order()).await, vec![Bytes::from(bad)]);
    }
}

#[tokio::test]
async fn poll_quarantines_a_malformed_head_and_takes_the_next_value() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let queue = manual_queue(&client, &unique_name("bad-poll")).await;
    let keys = queue.keys().clone();
    let bad = bad_entries();
    push_raw_entry(
        &client,
        keys.timeout(),
        keys.order(),
        &bad[0],
        now_ms() + 60_000,
    )
    .await;
    queue
        .offer(&s("good"), Duration::from_secs(60))
        .await
        .unwrap();
    push_raw_entry(
        &client,
        keys.timeout(),
        keys.order(),
        &bad[1],
        now_ms() + 60_000,
    )
    .await;
    queue
        .offer(&s("good2"), Duration::from_secs(60))
        .await
        .unwrap();

    // Documented: "A malformed head entry is quarantined and the next taken."
    let polled = queue.poll().await.unwrap();
    assert_eq!(
        list(&client, keys.quarantine()).await,
        vec![Bytes::from(bad[0].clone())],
        "the malformed head is quarantined"
    );
    assert_eq!(
        polled,
        Some(s("good")),
        "poll() must return the good value behind a malformed head, not None while values are \
         pending (pending now: {:?})",
        queue.read_all().await.map_err(|e| e.to_string())
    );
}

#[tokio::test]
async fn poll_many_and_poll_last_quarantine_malformed_entries() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let queue = manual_queue(&client, &unique_name("bad-poll-many")).await;
    let keys = queue.keys().clone();
    let bad = bad_entries();
    queue.offer(&s("a"), Duration::from_secs(60)).await.unwrap();
    push_raw_entry(
        &client,
        keys.timeout(),
        keys.order(),
        &bad[2],
        now_ms() + 60_000,
    )
    .await;
    queue.offer(&s("b"), Duration::from_secs(60)).await.unwrap();
    queue.offer(&s("c"), Duration::from_secs(60)).await.unwrap();
    push_raw_entry(
        &client,
        keys.timeout(),
        keys.order(),
        &bad[0],
        now_ms() + 60_000,
    )
    .await;

    // Last entry is malformed: quarantined, and "c" moved instead.
    let dest = format!("{{{}}}:dest", queue.name());
    assert_eq!(
        queue.poll_last_and_offer_first_to(&dest).await.unwrap(),
        Some(s("c"))
    );
    assert_eq!(list_str(&client, &dest).await, vec!["c"]);
    assert_eq!(
        list(&client, keys.quarantine()).await,
        vec![Bytes::from(bad[0].clone())]
    );

    // poll_many walks over the malformed one, which is quarantined, not returned.
    let values = queue.poll_many(3).await.unwrap();
    assert!(values.iter().all(|v| v == "a" || v == "b"), "{values:?}");
    assert_eq!(values.first().map(String::as_str), Some("a"));
    assert_eq!(
        list(&client, keys.quarantine()).await,
        vec![Bytes::from(bad[0].clone()), Bytes::from(bad[2].clone())]
    );
    assert_eq!(
        int(&client, "ZCARD", keys.timeout()).await as usize,
        2 - values.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_entries_are_quarantined_and_neighbours_move() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let name = unique_name("poison");
    let queue = manual_queue(&client, &name).await;
    let keys = queue.keys().clone();
    let due = now_ms() - 1_000;
    let good = |v: &str| pack(&rand::random::<[u8; 8]>(), v.as_bytes());
    let mut truncated = good("truncated");
    truncated.truncate(20);
    let mut wrong_length = good("len");
    wrong_length[9] = 200;
    let poisons: Vec<Vec<u8>> = vec![b"garbage".to_vec(), truncated, wrong_length, vec![]];
    push_raw_entry(&client, keys.timeout(), keys.order(), &good("g1"), due).await;
    for (i, poison) in poisons.iter().enumerate() {
        push_raw_entry(
            &client,
            keys.timeout(),
            keys.order(),
            poison,
            due + 1 + i as i64,
        )
        .await;
    }
    push_raw_entry(&client, keys.timeout(), keys.order(), &good("g2"), due + 10).await;

    // Reads that must decode every entry say exactly what is wrong.
    match queue.read_all().await {
        Err(Error::MalformedEntry { key, .. }) => assert_eq!(key, keys.order()),
        other => panic!("expected MalformedEntry, got {other:?}"),
    }
    let pending = queue.inspect().pending(0).await.unwrap();
    assert_eq!(pending.len(), 6);
    assert!(pending[0].value.is_ok() && pending[1].value.is_err());

    // The transfer moves the good ones and takes the bad ones out, in one call.
    let outcome = queue.admin().transfer_due(100).await.unwrap();
    assert_eq!(outcome.moved, 2);
    assert_eq!(outcome.quarantined, 4);
    assert_eq!(list_str(&client, keys.target()).await, ["g1", "g2"]);
    let mut quarantined = list(&client, keys.quarantine()).await;
    let mut expected: Vec<Vec<u8>> = poisons.clone();
    quarantined.sort();
    expected.sort();
    assert_eq!(
        quarantined.iter().map(|b| b.to_vec()).collect::<Vec<_>>(),
        expected
    );
    assert_eq!(int(&client, "LLEN", keys.order()).await, 0);
    assert_eq!(int(&client, "ZCARD", keys.timeout()).await, 0);
    assert_eq!(queue.inspect().stats().await.unwrap().quarantined, 4);

    // poll() skips (and quarantines) a malformed head instead of failing on it forever.
    push_raw_entry(&client, keys.timeout(), keys.order(), b"bad-head", due).await;
    queue.offer("next", Duration::from_secs(60)).await.unwrap();
    assert_eq!(queue.poll().await.unwrap().as_deref(), Some("next"));
    assert_eq!(int(&client, "LLEN", keys.quarantine()).await, 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codec_mismatch_keeps_the_raw_bytes() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let name = unique_name("mismatch");
    let strings = manual_queue(&client, &name).await;
    strings.offer("abc", Duration::from_secs(60)).await.unwrap();
    let longs = manual_queue_with(&client, &name, LongCodec, EntryFormat::Current).await;
    match longs.peek().await {
        Err(Error::Decode { raw, codec, .. }) => {
            assert_eq!(&raw[..], b"abc");
            assert_eq!(codec, "long");
        }
        other => panic!("expected Decode, got {other:?}"),
    }
    // The value is still pending for a reader with the right codec.
    assert_eq!(strings.read_all().await.unwrap(), ["abc"]);
}

/// Readable snapshot of every key of a queue, to prove an error changed nothing.
async fn snapshot(client: &Client, keys: &QueueKeys) -> Vec<String> {
    let show = |b: &[u8]| b.escape_ascii().to_string();
    let mut out = Vec::new();
    for key in [
        keys.target(),
        keys.timeout(),
        keys.order(),
        keys.quarantine(),
    ] {
        let kind = key_type(client, key).await;
        let content: Vec<String> = match kind.as_str() {
            "list" => list(client, key).await.iter().map(|b| show(b)).collect(),
            "zset" => zset(client, key)
                .await
                .iter()
                .map(|(m, score)| format!("{}@{score}", show(m)))
                .collect(),
            "string" => vec![format!("{:?}", cmd(client, "GET", vec![arg(key)]).await)],
            _ => Vec::new(),
        };
        out.push(format!("{key} ({kind}): {content:?}"));
    }
    out
}

/// A queue with two pending entries (one due) and one ready value, then `key` overwritten
/// with a string.
async fn broken_queue(client: &Client, broken: Key) -> DelayedQueue<StringCodec> {
    let queue = manual_queue(client, &unique_name("wrong-type")).await;
    queue
        .offer_all(&[
            (s("due"), Duration::ZERO),
            (s("later"), Duration::from_secs(60)),
        ])
        .await
        .unwrap();
    let key = broken.of(queue.keys()).to_owned();
    cmd(client, "DEL", vec![arg(&key)]).await;
    cmd(client, "SET", vec![arg(&key), arg("a string")]).await;
    queue
}

/// The key a case breaks.
#[derive(Debug, Clone, Copy)]
enum Key {
    Target,
    Timeout,
    Order,
    Quarantine,
}

impl Key {
    fn of(self, keys: &QueueKeys) -> &str {
        match self {
            Key::Target => keys.target(),
            Key::Timeout => keys.timeout(),
            Key::Order => keys.order(),
            Key::Quarantine => keys.quarantine(),
        }
    }
}

/// An operation of the public API, run for its error only.
#[derive(Debug, Clone, Copy)]
enum Op {
    Size,
    IsEmpty,
    Peek,
    ReadAll,
    Contains,
    Pending,
    Offer,
    Transfer,
    Poll,
    Remove,
    Stats,
    PollLastOfferFirst,
}

impl Op {
    async fn run(self, queue: &DelayedQueue<StringCodec>) -> Result<(), Error> {
        let dest = format!("{{{}}}:dest", queue.name());
        match self {
            Op::Size => queue.size().await.map(drop),
            Op::IsEmpty => queue.is_empty().await.map(drop),
            Op::Peek => queue.peek().await.map(drop),
            Op::ReadAll => queue.read_all().await.map(drop),
            Op::Contains => queue.contains("due").await.map(drop),
            Op::Pending => queue.inspect().pending(0).await.map(drop),
            Op::Offer => queue.offer("new", Duration::from_secs(5)).await,
            Op::Transfer => queue.admin().transfer_due(100).await.map(drop),
            Op::Poll => queue.poll().await.map(drop),
            Op::Remove => queue.remove("later").await.map(drop),
            Op::Stats => queue.inspect().stats().await.map(drop),
            Op::PollLastOfferFirst => queue.poll_last_and_offer_first_to(&dest).await.map(drop),
        }
    }
}

/// Every operation that touches a broken key refuses with [`Error::WrongType`] naming that key
/// and leaves every key as it was: no half-written entry (a zset member without its order-list
/// entry), no popped head or tail, no value pushed anywhere.
#[tokio::test]
async fn wrong_type_keys_are_refused_by_every_operation_and_nothing_changes() {
    use Op::*;
    let cases: &[(Key, &[Op])] = &[
        (
            Key::Order,
            &[
                Size, IsEmpty, Peek, ReadAll, Contains, Pending, Offer, Transfer, Poll,
            ],
        ),
        (Key::Target, &[Transfer, Stats]),
        (
            Key::Timeout,
            &[Poll, Remove, Offer, Transfer, PollLastOfferFirst],
        ),
        (Key::Quarantine, &[Stats, Transfer, Poll]),
    ];
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    for (broken, ops) in cases {
        let queue = broken_queue(&client, *broken).await;
        let broken_key = broken.of(queue.keys()).to_owned();
        let before = snapshot(&client, queue.keys()).await;
        for op in *ops {
            match op.run(&queue).await {
                Err(Error::WrongType { key, .. }) => {
                    assert_eq!(key, broken_key, "{op:?} with {broken:?} broken")
                }
                other => panic!("{op:?} with {broken:?} broken: expected WrongType, got {other:?}"),
            }
            assert_eq!(
                snapshot(&client, queue.keys()).await,
                before,
                "{op:?} with {broken:?} broken changed the queue"
            );
        }
        let dest = format!("{{{}}}:dest", queue.name());
        assert_eq!(int(&client, "EXISTS", &dest).await, 0);
    }
}

/// A queue with something in every key: pending entries, a ready value, a value in flight (with
/// its attempt counter), a settled delivery, a dead letter, a claim list with its lease, a
/// quarantined entry, a position index.
async fn full_queue(client: &Client) -> DelayedQueue<StringCodec> {
    let queue = manual_queue(client, &unique_name("every-key")).await;
    let keys = queue.keys().clone();
    queue
        .offer_all(&[
            (s("ready"), Duration::ZERO),
            (s("taken"), Duration::ZERO),
            (s("acked"), Duration::ZERO),
            (s("later"), Duration::from_secs(60)),
        ])
        .await
        .unwrap();
    queue.admin().transfer_due(10).await.unwrap();
    let consumer = queue.reliable_consumer().await.unwrap();
    let acked = consumer.try_take(1).await.unwrap().pop().unwrap();
    assert!(acked.ack().await.unwrap());
    let taken = consumer.try_take(1).await.unwrap().pop().unwrap();
    std::mem::forget(taken); // stays in flight
    let claim = keys.claim("c1");
    cmd(client, "RPUSH", vec![arg(&claim), arg("claimed")]).await;
    cmd(
        client,
        "ZADD",
        vec![arg(keys.claims()), arg("1"), arg(&claim)],
    )
    .await;
    cmd(
        client,
        "RPUSH",
        vec![arg(keys.dead()), arg("not even a record")],
    )
    .await;
    cmd(client, "RPUSH", vec![arg(keys.quarantine()), arg("junk")]).await;
    cmd(
        client,
        "ZADD",
        vec![arg(keys.index()), arg("0"), arg("member")],
    )
    .await;
    queue
}

/// The keys given per call to the scripts that take one.
fn given_keys(script: &str, keys: &QueueKeys) -> Vec<String> {
    match script {
        "take.lua" | "unclaim.lua" => vec![keys.claim("c1")],
        "limit_take.lua" => [vec![keys.claim("c1")], limit_keys(script, keys)].concat(),
        "poll_last_offer_first.lua" => vec![format!("{{{}}}:dest", keys.target())],
        "purge_list.lua" => vec![keys.dead().to_owned()],
        "offer_dedup.lua" => vec![keys.dedup("k1")],
        "schedule_fire.lua" | "schedule_set.lua" | "schedule_remove.lua" => {
            vec![keys.schedule("s1")]
        }
        // A schedule's hash under its name now and under its name before the escaping.
        "schedule_adopt.lua" => {
            let now = keys.schedule("s:1");
            let before = now.replace("s%3A1", "s:1");
            vec![now, before]
        }
        _ if script.starts_with("limit_") => limit_keys(script, keys),
        _ => Vec::new(),
    }
}

/// The limit keys a limit script declares, in its KEYS order (after the target list).
fn limit_keys(script: &str, keys: &QueueKeys) -> Vec<String> {
    let name = keys.target();
    let header = delayq::__internal::script_source(script).unwrap();
    let mut out = Vec::new();
    for line in header.lines().filter(|l| l.starts_with("-- KEYS[")) {
        if let Some(pattern) = line
            .split_whitespace()
            .find(|w| w.starts_with("delayq_limit"))
        {
            out.push(
                pattern
                    .replace("{NAME}", &format!("{{{name}}}"))
                    .replace(":KEY", ":k1"),
            );
        }
    }
    out
}

/// Every key's serialized content (`DUMP`), to prove a refused call changed nothing.
async fn dump_all(client: &Client, keys: &[String]) -> Vec<Value> {
    let mut out = Vec::new();
    for key in keys {
        out.push(cmd(client, "DUMP", vec![arg(key)]).await);
    }
    out
}

/// Generated over every script and every key it touches: with that key holding a string, the
/// script refuses before its body runs (its key guard), with a WRONGTYPE error naming the key,
/// and every key of the queue is byte for byte what it was. The arguments after ARGV[2] are
/// left out on purpose: the guard must refuse before anything reads them.
#[tokio::test]
async fn every_script_refuses_a_wrong_type_key_before_writing() {
    use delayq::__internal::{script_key_types, script_keys, script_names};
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let mut cases = 0;
    for script in script_names() {
        let source = delayq::__internal::script_source(script).unwrap();
        let types = script_key_types(script).unwrap();
        for (i, kind) in types.iter().enumerate() {
            if !["list", "zset", "hash"].contains(kind) {
                continue;
            }
            let queue = full_queue(&client).await;
            let keys = queue.keys();
            let given = given_keys(script, keys);
            let given: Vec<&str> = given.iter().map(String::as_str).collect();
            let script_keys = script_keys(script, keys, &given).unwrap();
            let broken = script_keys[i].clone();
            cmd(&client, "DEL", vec![arg(&broken)]).await;
            cmd(&client, "SET", vec![arg(&broken), arg("a string")]).await;
            let before = dump_all(&client, &script_keys).await;
            let args: Vec<Value> = vec![now_ms().into(), "0".into()];
            let result: Result<Value, _> = fred::interfaces::LuaInterface::eval(
                &client,
                source.as_str(),
                script_keys.clone(),
                args,
            )
            .await;
            let err = match result {
                Err(err) => err.details().to_string(),
                Ok(reply) => panic!("{script} with {broken} ({kind}) broken: ran, {reply:?}"),
            };
            assert!(
                err.contains("WRONGTYPE") && err.contains(&format!("key '{broken}' is a string")),
                "{script} with {broken} broken: {err}"
            );
            assert_eq!(
                dump_all(&client, &script_keys).await,
                before,
                "{script} with {broken} broken changed a key"
            );
            cases += 1;
        }
    }
    assert!(cases > 60, "only {cases} cases");
}
