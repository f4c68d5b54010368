//! delayq's own keys live and die with the queue: `expire` (from delayq or from a Java peer),
//! an emptied order list, `delete`.

use crate::common::queue::{connect, manual_queue, push_raw_entry};
use crate::common::{unique_name, TestRedis};
use delayq::codec::StringCodec;
use delayq::dedup::Dedup;
use delayq::fred::clients::Client;
use delayq::inspect::AccessCheck;
use delayq::limit::Limits;
use delayq::{DelayedQueue, QueueKeys, TransferConfig};
use std::time::Duration;

/// A queue that has used every feature: a position index (any length uses it with threshold 1),
/// a value index (`contains`, offer handles), a quarantined entry, a value in flight and one
/// settled by a reliable consumer, a dead letter, a claim list and the pause flag.
async fn busy_queue(redis: &TestRedis, client: &Client) -> DelayedQueue<StringCodec> {
    let queue = manual_queue(client, &unique_name("life")).await;
    // The due entry sits past the head window of a one-entry batch: the index gets built.
    queue
        .offer_all(&[
            ("a".into(), Duration::from_secs(60)),
            ("b".into(), Duration::from_secs(61)),
            ("c".into(), Duration::from_secs(62)),
            ("d".into(), Duration::from_secs(63)),
            ("due".into(), Duration::ZERO),
        ])
        .await
        .unwrap();
    let indexed = TransferConfig::default()
        .with_batch_size(1)
        .with_index_threshold(1);
    assert_eq!(
        queue
            .admin()
            .transfer_due_with(&indexed)
            .await
            .unwrap()
            .moved,
        1
    );
    assert!(queue.contains("b").await.unwrap(), "builds the value index");
    queue
        .offer_with_handle("handled", Duration::from_secs(60))
        .await
        .unwrap();
    queue.offer("due too", Duration::ZERO).await.unwrap();
    let keys = queue.keys().clone();
    push_raw_entry(client, keys.timeout(), keys.order(), b"junk", 0).await;
    let moved = queue
        .admin()
        .transfer_due_with(&indexed.with_batch_size(10))
        .await
        .unwrap();
    assert_eq!((moved.moved, moved.quarantined), (1, 1));
    let consumer = queue.reliable_consumer().await.unwrap();
    let mut taken = consumer.try_take(2).await.unwrap();
    assert_eq!(taken.len(), 2);
    assert!(
        taken.pop().unwrap().ack().await.unwrap(),
        "a settled record"
    );
    std::mem::forget(taken.pop().unwrap());
    redis.cli(&["RPUSH", keys.dead(), "a record"]);
    let claim = keys.claim("gone");
    redis.cli(&["RPUSH", &claim, "claimed"]);
    redis.cli(&["ZADD", keys.claims(), "1", &claim]);
    assert!(queue.admin().pause().await.unwrap());
    // Limits, what enforcing them keeps (queue-wide and for one limit key), and a dedup key's
    // mapping.
    queue
        .limits()
        .set(&Limits::default().with_concurrency(2))
        .await
        .unwrap();
    let limit = |name: &str| format!("{name}:{{{}}}", queue.name());
    for zset in [
        "delayq_limit_slots",
        "delayq_limit_tat",
        "delayq_limit_held",
    ] {
        redis.cli(&["ZADD", &limit(zset), "1", "acme"]);
    }
    redis.cli(&["ZADD", &limit("delayq_limit_busy"), "1", "acme"]);
    redis.cli(&[
        "ZADD",
        &format!("{}:acme", limit("delayq_limit_key")),
        "1",
        "d",
    ]);
    redis.cli(&["RPUSH", &keys.limit_parked("acme"), "held back"]);
    let dedup = Dedup::throttle("order-1", Duration::from_secs(600));
    queue
        .dedup(dedup.clone())
        .offer("deduped", Duration::from_secs(60))
        .await
        .unwrap();
    queue
}

/// Whether `key` keeps a life of its own that a longer time to live leaves alone and a removal
/// of the time to live keeps: the record of settled deliveries (a minute), a dedup key's
/// mapping (its window, here 10 minutes).
fn own_life(keys: &QueueKeys, key: &str) -> Option<i64> {
    match key {
        k if k == keys.settled() => Some(60_000),
        k if k.starts_with("delayq_dedup:") => Some(600_000),
        _ => None,
    }
}

/// Every key whose name contains the queue's, but the target list, by `SCAN`.
fn keys_of(redis: &TestRedis, name: &str) -> Vec<String> {
    let found = redis.cli(&["--scan", "--pattern", &format!("*{name}*")]);
    let mut keys: Vec<String> = found
        .lines()
        .filter(|k| !k.is_empty() && *k != name)
        .map(str::to_owned)
        .collect();
    keys.sort();
    keys
}

fn exists(redis: &TestRedis, key: &str) -> bool {
    redis.cli(&["EXISTS", key]) == "1"
}

fn ttl(redis: &TestRedis, key: &str) -> i64 {
    redis.cli(&["PTTL", key]).parse().unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn expire_covers_every_key_of_the_queue() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let queue = busy_queue(&redis, &client).await;
    let keys = queue.keys().clone();
    let existing = keys_of(&redis, queue.name());
    for key in [
        keys.values(),
        keys.settled(),
        keys.paused(),
        keys.quarantine(),
        &keys.limits(),
        &keys.limit_parked("acme"),
        &keys.dedup("order-1"),
    ] {
        assert!(existing.iter().any(|k| k == key), "{key} in {existing:?}");
    }
    // Shorter than the settled record's own minute: it gets this one too.
    assert!(queue.expire(Duration::from_secs(30)).await.unwrap());
    for key in &existing {
        let left = ttl(&redis, key);
        assert!(left > 20_000 && left <= 30_000, "{key}: {left}");
    }
    assert!(queue.clear_expire().await.unwrap());
    for key in &existing {
        let left = ttl(&redis, key);
        match own_life(&keys, key) {
            // Its own life is gone (the 30 s given), but it keeps one.
            Some(_) => assert!(left > 0 && left <= 30_000, "{key} lost its life: {left}"),
            None => assert_eq!(left, -1, "{key} kept its time to live"),
        }
    }
    // Longer than the settled record's minute: it keeps its own.
    assert!(queue.expire(Duration::from_secs(100)).await.unwrap());
    for key in &existing {
        let left = ttl(&redis, key);
        match own_life(&keys, key) {
            Some(_) => assert!(left > 0 && left <= 30_000, "{key}: {left}"),
            None => assert!(left > 90_000 && left <= 100_000, "{key}: {left}"),
        }
    }
    redis.cli(&["RPUSH", keys.target(), "ready"]);
    assert!(queue.expire(Duration::from_secs(100)).await.unwrap());
    assert_eq!(ttl(&redis, keys.target()), -1, "the target list has none");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_java_expire_reaches_the_indexes_and_an_emptied_queue_drops_them() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let queue = busy_queue(&redis, &client).await;
    let keys = queue.keys().clone();
    // A Java peer's expire sets a time to live on the zset and the order list only.
    redis.cli(&["PEXPIRE", keys.timeout(), "100000"]);
    redis.cli(&["PEXPIRE", keys.order(), "100000"]);
    queue.admin().transfer_due(10).await.unwrap();
    for key in [keys.index(), keys.values()] {
        let left = ttl(&redis, key);
        assert!(left > 90_000 && left <= 100_000, "{key}: ttl {left}");
    }

    // A Java peer polls every pending entry (LPOP + ZREM): the index is stale, then gone at
    // delayq's next call.
    let java_poll = "while true do local e = redis.call('lpop', KEYS[1]) \
        if not e then return 0 end redis.call('zrem', KEYS[2], e) end";
    let _: i64 = fred::interfaces::LuaInterface::eval(
        &client,
        java_poll,
        vec![keys.order(), keys.timeout()],
        Vec::<String>::new(),
    )
    .await
    .unwrap();
    assert!(exists(&redis, keys.index()));
    assert!(exists(&redis, keys.values()));
    queue.admin().transfer_due(10).await.unwrap();
    assert!(!exists(&redis, keys.index()));
    assert!(!exists(&redis, keys.values()));
}

#[tokio::test(flavor = "multi_thread")]
async fn delete_removes_every_key_but_the_target() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let queue = busy_queue(&redis, &client).await;
    let keys = queue.keys().clone();
    redis.cli(&["RPUSH", "another-app", "x"]);
    redis.cli(&["ZADD", keys.claims(), "1", "another-app"]);
    redis.cli(&["RPUSH", keys.target(), "ready"]);
    assert!(keys_of(&redis, queue.name()).len() >= 21);
    // A recurring schedule is the queue's too, but outlives a delete (docs/schedules.md).
    let schedule = keys.schedule("s");
    redis.cli(&["HSET", &schedule, "every_ms", "1000", "value", "v"]);
    assert!(queue.delete().await.unwrap());
    assert_eq!(keys_of(&redis, queue.name()), vec![schedule]);
    assert_eq!(redis.cli(&["LLEN", keys.target()]), "1");
    assert_eq!(redis.cli(&["LLEN", "another-app"]), "1");
}

/// `check` probes every key and channel of the queue: a user who may use all of them but one
/// is told so, whichever one it is; a user given exactly `acl_selectors` is refused nothing.
#[tokio::test(flavor = "multi_thread")]
async fn check_probes_every_key_of_the_queue() {
    let redis = TestRedis::start_with(&[]);
    let name = unique_name("acl-keys");
    let selectors = QueueKeys::new(name.as_str()).acl_selectors();
    let setuser = |rules: &[&String]| {
        let mut args = vec!["ACL", "SETUSER", "app", "on", ">pw", "+@all"];
        args.extend(["resetkeys", "resetchannels"]);
        args.extend(rules.iter().map(|r| r.as_str()));
        assert_eq!(redis.cli(&args), "OK");
    };
    setuser(&selectors.iter().collect::<Vec<_>>());
    let client = connect(&format!("redis://app:pw@127.0.0.1:{}", redis.port)).await;
    let queue = manual_queue(&client, &name).await;
    let report = queue.inspect().check().await.unwrap();
    assert_eq!(report.access, AccessCheck::DryRun);
    assert_eq!(report.denied, Vec::<String>::new());
    // The selectors are enough for the limits and dedup keys too.
    queue
        .limits()
        .set(&Limits::default().with_concurrency(1))
        .await
        .unwrap();
    let dedup = Dedup::throttle("k", Duration::from_secs(60));
    queue
        .dedup(dedup.clone())
        .offer("v", Duration::from_secs(60))
        .await
        .unwrap();
    assert!(queue.delete().await.unwrap());
    for left_out in &selectors {
        let rest: Vec<&String> = selectors.iter().filter(|s| *s != left_out).collect();
        setuser(&rest);
        let report = queue.inspect().check().await.unwrap();
        assert!(
            !report.denied.is_empty(),
            "without {left_out}: nothing denied"
        );
    }
}

/// `clear` deletes the pending entries and what names them (indexes, dedup mappings: a new
/// offer of the key is offered at once), and leaves what describes consumption (limits).
#[tokio::test(flavor = "multi_thread")]
async fn clear_takes_the_dedup_mappings_with_the_entries() {
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let queue = busy_queue(&redis, &client).await;
    let keys = queue.keys().clone();
    assert!(queue.clear().await.unwrap());
    assert!(!exists(&redis, &keys.dedup("order-1")));
    assert!(!exists(&redis, keys.timeout()));
    assert!(exists(&redis, &keys.limits()));
    assert!(exists(&redis, &keys.limit_parked("acme")));
}

/// Queue `T` and queue `{T}:orders` share a hash tag, so their keys one per business or limit
/// key start alike (`delayq_dedup:{T}:…`): `T`'s business key `orders:k` is named apart from
/// `{T}:orders`'s key `k` (each throttles on its own), and `clear`, `delete` and `expire` of
/// `T` leave `{T}:orders`'s dedup mapping, values held back and per-key slots as they were.
#[tokio::test(flavor = "multi_thread")]
async fn a_queue_leaves_the_item_keys_of_a_queue_named_under_its_tag_alone() {
    use delayq::dedup::DedupOutcome;
    let redis = TestRedis::start();
    let client = connect(&redis.url()).await;
    let name = unique_name("tagged");
    let queue = manual_queue(&client, &name).await;
    let other = manual_queue(&client, &format!("{{{name}}}:orders")).await;
    let window = Duration::from_secs(3_600);
    let throttle = |key: &str| Dedup::throttle(key, window);
    let offered = |outcome: DedupOutcome| matches!(outcome, DedupOutcome::Offered { .. });
    let later = Duration::from_secs(3_600);
    assert!(offered(
        other.dedup(throttle("k")).offer("o", later).await.unwrap()
    ));
    assert!(offered(
        queue
            .dedup(throttle("orders:k"))
            .offer("z", later)
            .await
            .unwrap()
    ));
    assert_ne!(other.keys().dedup("k"), queue.keys().dedup("orders:k"));
    let parked = other.keys().limit_parked("k");
    let slots = format!("delayq_limit_key:{}:k", other.name());
    redis.cli(&["RPUSH", &parked, "p1", "p2", "p3"]);
    redis.cli(&["ZADD", &slots, "99999999999999", "d1"]);
    queue.offer("z2", later).await.unwrap();

    let intact = |what: &str| {
        assert_eq!(
            redis.cli(&["LLEN", &parked]),
            "3",
            "{what}: values held back"
        );
        assert_eq!(ttl(&redis, &parked), -1, "{what}: values held back");
        assert_eq!(redis.cli(&["ZCARD", &slots]), "1", "{what}: per-key slots");
        assert_eq!(ttl(&redis, &slots), -1, "{what}: per-key slots");
        let mapping = ttl(&redis, &other.keys().dedup("k"));
        assert!(mapping > 600_000, "{what}: dedup mapping's life {mapping}");
    };
    assert!(queue.clear().await.unwrap());
    intact("clear");
    let again = other.dedup(throttle("k")).offer("o", later).await.unwrap();
    assert!(matches!(again, DedupOutcome::Kept { .. }), "{again:?}");
    // The mapping of `T`'s own key went with its entries: offered afresh.
    assert!(offered(
        queue
            .dedup(throttle("orders:k"))
            .offer("z", later)
            .await
            .unwrap()
    ));
    assert!(queue.expire(Duration::from_secs(5)).await.unwrap());
    intact("expire");
    assert!(queue.delete().await.unwrap());
    intact("delete");
    let again = other.dedup(throttle("k")).offer("o", later).await.unwrap();
    assert!(matches!(again, DedupOutcome::Kept { .. }), "{again:?}");
}
