//! Durable offers on a real master and replica: a write waits for the replica (`WAIT`) or the
//! append-only files (`WAITAOF`), reports [`Error::NotConfirmed`] when they do not confirm it in
//! time (with the value on the master all the same), and concurrent writes share their waits.
//!
//! A frozen replica (SIGSTOP) keeps its link to the master but acknowledges nothing: what a
//! replica cut off by a partition looks like to the master until its timeout.

use crate::common::{unique_name, wait_until, TestRedis, PATIENCE};
use delayq::codec::StringCodec;
use delayq::dedup::Dedup;
use delayq::{DelayedQueue, Durability, Error};
use fred::interfaces::{ListInterface, SortedSetsInterface};
use std::time::{Duration, Instant};

/// A master and a replica of it whose link is up; both with `extra` arguments.
struct Pair {
    master: TestRedis,
    replica: TestRedis,
}

impl Pair {
    fn start(extra: &[&str]) -> Pair {
        let master = TestRedis::start_with(extra);
        let port = master.port.to_string();
        let mut args = vec!["--replicaof", "127.0.0.1", port.as_str()];
        args.extend_from_slice(extra);
        let replica = TestRedis::start_with(&args);
        wait_until("the replica's link to the master", PATIENCE, || {
            let info = master.cli(&["INFO", "replication"]);
            match info.contains("connected_slaves:1") && info.contains("state=online") {
                true => Ok(()),
                false => Err(info),
            }
        });
        Pair { master, replica }
    }

    /// Freezes the replica: it stays connected but acknowledges nothing until `thaw`.
    fn freeze(&self) -> Frozen {
        let pid = self.replica.pid().expect("the replica runs");
        signal(pid, "-STOP");
        Frozen(pid)
    }
}

/// A frozen replica, thawed when dropped (also when the test fails).
struct Frozen(u32);

impl Drop for Frozen {
    fn drop(&mut self) {
        signal(self.0, "-CONT");
    }
}

fn signal(pid: u32, which: &str) {
    let status = std::process::Command::new("kill")
        .args([which, &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill {which} {pid}");
}

async fn queue_on(redis: &TestRedis, prefix: &str) -> DelayedQueue<StringCodec> {
    let client = crate::common::queue::connect(&redis.url()).await;
    crate::common::queue::manual_queue(&client, &unique_name(prefix)).await
}

/// How many entries the queue's timeout set holds on `redis`.
async fn pending_on(redis: &TestRedis, queue: &DelayedQueue<StringCodec>) -> u64 {
    let client = crate::common::queue::connect(&redis.url()).await;
    client.zcard(queue.keys().timeout()).await.unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_durable_offer_is_on_the_replica_when_it_returns() {
    let pair = Pair::start(&[]);
    let queue = queue_on(&pair.master, "durable-ok").await;
    let durable = queue.with_durability(Durability::replicas(1).timeout(PATIENCE));
    let waits = pair.master.command_calls("wait");
    durable.offer("a", Duration::from_secs(60)).await.unwrap();
    durable
        .offer_all(&[("b".into(), Duration::from_secs(60))])
        .await
        .unwrap();
    durable
        .offer_with_handle("c", Duration::from_secs(60))
        .await
        .unwrap();
    let replaced = durable.offer_unique("d", Duration::from_secs(60)).await;
    assert!(!replaced.unwrap());
    // WAIT returned 1: the replica has applied every write the connection made before it.
    assert_eq!(pending_on(&pair.replica, &queue).await, 4);
    assert!(pair.master.command_calls("wait") > waits);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unconfirmed_offer_is_not_confirmed_and_is_on_the_master() {
    let pair = Pair::start(&[]);
    let queue = queue_on(&pair.master, "durable-unconfirmed").await;
    let timeout = Duration::from_millis(300);
    let durable = queue.with_durability(Durability::replicas(1).timeout(timeout));
    let frozen = pair.freeze();
    let started = Instant::now();
    let err = durable
        .offer("kept", Duration::from_secs(60))
        .await
        .unwrap_err();
    let took = started.elapsed();
    match &err {
        Error::NotConfirmed {
            wanted_replicas: 1,
            acked_replicas: 0,
            ..
        } => {}
        other => panic!("expected NotConfirmed, got {other:?}"),
    }
    assert!(
        err.to_string().contains("was written on the master"),
        "{err}"
    );
    assert!(
        took >= timeout,
        "returned after {took:?}, before the timeout"
    );
    assert_eq!(pending_on(&pair.master, &queue).await, 1);
    // Plain offers of the same queue still return at once.
    queue.offer("plain", Duration::from_secs(60)).await.unwrap();
    drop(frozen);
}

#[tokio::test(flavor = "multi_thread")]
async fn deduplicated_offers_wait_for_the_replica() {
    let pair = Pair::start(&[]);
    let queue = queue_on(&pair.master, "durable-dedup").await;
    // Confirmed with time to spare on a loaded machine; refused quickly once frozen.
    let durable = queue.with_durability(Durability::replicas(1).timeout(PATIENCE));
    let hasty = queue.with_durability(Durability::replicas(1).timeout(Duration::from_millis(300)));
    let dedup = Dedup::throttle("order-7", Duration::from_secs(60));
    let first = durable
        .dedup(dedup.clone())
        .offer("first", Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(first.as_str(), "offered");
    assert_eq!(pending_on(&pair.replica, &queue).await, 1);
    let frozen = pair.freeze();
    // Dropped, yet waited for like any durable offer: a kept offer cannot tell an entry confirmed
    // long ago from one whose offer was told it was not (see the next test).
    let kept = hasty
        .dedup(dedup.clone())
        .offer("again", Duration::from_secs(60))
        .await
        .unwrap_err();
    assert!(matches!(kept, Error::NotConfirmed { .. }), "{kept:?}");
    let other = Dedup::throttle("order-8", Duration::from_secs(60));
    let err = hasty
        .dedup(other.clone())
        .offer("second", Duration::from_secs(60))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotConfirmed { .. }), "{err:?}");
    assert_eq!(pending_on(&pair.master, &queue).await, 2);
    drop(frozen);
}

/// A throttled retry after "not confirmed" (the remedy docs/durability.md gives for it) is not
/// reported confirmed while nothing confirmed the entry, even from another process's connection;
/// once the replica has it, the retry is answered `kept`, and the replica holds the entry.
#[tokio::test(flavor = "multi_thread")]
async fn a_kept_retry_after_not_confirmed_is_confirmed_truly() {
    let pair = Pair::start(&[]);
    let first = queue_on(&pair.master, "durable-kept").await;
    let name = first.name().to_owned();
    // The retry comes from another client: its own durable connection, which wrote nothing.
    let client = crate::common::queue::connect(&pair.master.url()).await;
    let retry = crate::common::queue::manual_queue(&client, &name).await;
    let hasty = Durability::replicas(1).timeout(Duration::from_millis(300));
    let dedup = Dedup::throttle("order-9", Duration::from_secs(600));
    let frozen = pair.freeze();
    let err = first
        .with_durability(hasty)
        .dedup(dedup.clone())
        .offer("v", Duration::from_secs(600))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotConfirmed { .. }), "{err:?}");
    for queue in [&first, &retry] {
        let again = queue
            .with_durability(hasty)
            .dedup(dedup.clone())
            .offer("v", Duration::from_secs(600))
            .await;
        assert!(
            matches!(again, Err(Error::NotConfirmed { .. })),
            "a retry while the replica acknowledges nothing: {again:?}"
        );
    }
    assert_eq!(pending_on(&pair.master, &first).await, 1);
    drop(frozen);
    let kept = retry
        .with_durability(Durability::replicas(1).timeout(PATIENCE))
        .dedup(dedup.clone())
        .offer("v", Duration::from_secs(600))
        .await
        .unwrap();
    assert_eq!(kept.as_str(), "kept");
    assert_eq!(pending_on(&pair.replica, &first).await, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_durable_offers_share_their_waits() {
    let pair = Pair::start(&[]);
    let queue = queue_on(&pair.master, "durable-batch").await;
    let durable = queue.with_durability(Durability::replicas(1).timeout(PATIENCE));
    // Opens the durable connection, so the writes below are all that is left to do.
    durable
        .offer("warm-up", Duration::from_secs(60))
        .await
        .unwrap();
    let waits = pair.master.command_calls("wait");
    // A frozen replica holds the first offer's wait, and with it the connection (Redis runs
    // nothing more of that client until the wait returns): the 16 offers begun meanwhile are
    // certainly all under way when it returns, however loaded the machine. (Left to race, on a
    // loaded machine each could start after the one before it was confirmed: 11 waits for 16
    // once under four busy loops.)
    let frozen = pair.freeze();
    let first = tokio::spawn({
        let durable = durable.clone();
        async move { durable.offer("first", Duration::from_secs(60)).await }
    });
    tokio::task::block_in_place(|| {
        wait_until("the first offer's wait blocked", PATIENCE, || {
            let info = pair.master.cli(&["INFO", "clients"]);
            match info.contains("blocked_clients:1") {
                true => Ok(()),
                false => Err(info),
            }
        })
    });
    let (begun, all_begun) = tokio::sync::oneshot::channel();
    let offers = tokio::spawn({
        let durable = durable.clone();
        async move {
            let values: Vec<String> = (0..16).map(|i| format!("v{i}")).collect();
            let mut offers = std::pin::pin!(futures::future::join_all(
                values
                    .iter()
                    .map(|value| durable.offer(value, Duration::from_secs(60)))
            ));
            // One poll of all 16: each has begun its write (queued behind the wait).
            let polled = futures::poll!(offers.as_mut());
            assert!(
                polled.is_pending(),
                "the offers returned with the replica frozen"
            );
            begun.send(()).unwrap();
            offers.await
        }
    });
    all_begun.await.unwrap();
    drop(frozen);
    first.await.unwrap().unwrap();
    for offered in offers.await.unwrap() {
        offered.unwrap();
    }
    let used = pair.master.command_calls("wait") - waits;
    assert_eq!(
        used, 2,
        "the first offer's wait, then one for the 16 offers begun while it blocked"
    );
    assert_eq!(pending_on(&pair.replica, &queue).await, 18);
}

/// A dead letter of `value` as the dead list holds it (see `src/reliable/dead.rs`).
fn dead_record(value: &str) -> Vec<u8> {
    let error = b"failed";
    let mut record = b"DQD1".to_vec();
    record.extend_from_slice(&3u32.to_be_bytes());
    record.extend_from_slice(&delayq::time::now_ms().to_be_bytes());
    record.extend_from_slice(&(error.len() as u32).to_be_bytes());
    record.extend_from_slice(error);
    record.extend_from_slice(value.as_bytes());
    record
}

#[tokio::test(flavor = "multi_thread")]
async fn replays_of_dead_letters_wait_for_the_replica() {
    let pair = Pair::start(&[]);
    let queue = queue_on(&pair.master, "durable-replay").await;
    let master = crate::common::queue::connect(&pair.master.url()).await;
    let dead = queue.keys().dead().to_owned();
    let _: u64 = master
        .rpush(&dead, vec![dead_record("one"), dead_record("two")])
        .await
        .unwrap();
    let durable = queue.with_durability(Durability::replicas(1).timeout(PATIENCE));
    assert_eq!(
        durable
            .admin()
            .replay_dead_letters(1, Duration::ZERO)
            .await
            .unwrap(),
        1
    );
    let replica = crate::common::queue::connect(&pair.replica.url()).await;
    let on_replica: Vec<String> = replica.lrange(queue.name(), 0, -1).await.unwrap();
    assert_eq!(on_replica, ["one"]);

    let frozen = pair.freeze();
    let durable =
        queue.with_durability(Durability::replicas(1).timeout(Duration::from_millis(200)));
    let left = queue.inspect().dead_letters(0).await.unwrap();
    let err = durable
        .admin()
        .replay_dead_letter(&left[0].record, 10, Duration::ZERO)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotConfirmed { .. }), "{err:?}");
    let on_master: Vec<String> = master.lrange(queue.name(), 0, -1).await.unwrap();
    assert_eq!(on_master, ["one", "two"]);
    drop(frozen);
}

#[tokio::test(flavor = "multi_thread")]
async fn aof_waits_need_waitaof_and_confirm_the_fsync() {
    let pair = Pair::start(&["--appendonly", "yes", "--appendfsync", "always"]);
    let queue = queue_on(&pair.master, "durable-aof").await;
    let wanted = Durability::replicas(1).local_aof().timeout(PATIENCE);
    let has_waitaof = !pair
        .master
        .cli(&["COMMAND", "INFO", "WAITAOF"])
        .trim()
        .is_empty();
    if !has_waitaof {
        // Redis before 7.2: a clear error before anything is written, at build and per call.
        let client = crate::common::queue::connect(&pair.master.url()).await;
        let built = DelayedQueue::builder(client, queue.name(), StringCodec)
            .transfer(false)
            .durability(wanted)
            .build()
            .await;
        assert!(matches!(built, Err(Error::InvalidConfig(ref m)) if m.contains("WAITAOF")));
        let err = queue
            .with_durability(wanted)
            .offer("x", Duration::ZERO)
            .await
            .unwrap_err();
        assert!(matches!(err, Error::InvalidConfig(ref m) if m.contains("nothing was written")));
        assert_eq!(pending_on(&pair.master, &queue).await, 0);
        assert!(queue.is_empty().await.unwrap());
        return;
    }
    let durable = queue.with_durability(wanted);
    durable
        .offer("fsynced", Duration::from_secs(60))
        .await
        .unwrap();
    assert!(pair.master.command_calls("waitaof") >= 1);
    assert_eq!(pending_on(&pair.replica, &queue).await, 1);
    let frozen = pair.freeze();
    let durable = queue.with_durability(wanted.timeout(Duration::from_millis(200)));
    let err = durable
        .offer("local only", Duration::from_secs(60))
        .await
        .unwrap_err();
    match err {
        Error::NotConfirmed {
            acked_replicas: 0,
            local_aof: true,
            ..
        } => {}
        other => panic!("expected NotConfirmed with the local AOF, got {other:?}"),
    }
    assert_eq!(pending_on(&pair.master, &queue).await, 2);
    drop(frozen);
}

#[tokio::test(flavor = "multi_thread")]
async fn dead_letters_of_a_durable_queue_wait_for_the_replica() {
    let pair = Pair::start(&[]);
    let queue = queue_on(&pair.master, "durable-dead").await;
    // Confirmed with time to spare on a loaded machine; refused quickly once frozen.
    let durable = queue.with_durability(Durability::replicas(1).timeout(PATIENCE));
    let hasty = queue.with_durability(Durability::replicas(1).timeout(Duration::from_millis(200)));
    let master = crate::common::queue::connect(&pair.master.url()).await;
    let _: u64 = master
        .rpush(queue.name(), vec!["kept", "frozen"])
        .await
        .unwrap();
    let consumer = durable.reliable_consumer().await.unwrap();

    let delivery = consumer.take().await.unwrap();
    assert!(delivery.dead_letter("gave up").await.unwrap());
    consumer.close().await;
    let consumer = hasty.reliable_consumer().await.unwrap();
    // Confirmed: the replica has the dead letter.
    let replica = crate::common::queue::connect(&pair.replica.url()).await;
    let dead = queue.keys().dead().to_owned();
    assert_eq!(replica.llen::<u64, _>(&dead).await.unwrap(), 1);

    let delivery = consumer.take().await.unwrap();
    let frozen = pair.freeze();
    let err = delivery.dead_letter("gave up").await.unwrap_err();
    assert!(matches!(err, Error::NotConfirmed { .. }), "{err:?}");
    assert_eq!(master.llen::<u64, _>(&dead).await.unwrap(), 2);
    drop(frozen);
}

/// A dead letter whose first send ran on a connection that then dropped (its reply lost) is
/// sent again on the durable connection, which finds the delivery settled: that resend must
/// not be confirmed by a `WAIT` covering nothing of the first send. Here the first send is a
/// raw call of `dead.lua` on another connection while the replica acknowledges nothing.
#[tokio::test(flavor = "multi_thread")]
async fn a_resent_dead_letter_is_not_confirmed_before_the_replica_has_it() {
    let pair = Pair::start(&[]);
    let queue = queue_on(&pair.master, "durable-dead-resend").await;
    let hasty = queue.with_durability(Durability::replicas(1).timeout(Duration::from_millis(300)));
    let master = crate::common::queue::connect(&pair.master.url()).await;
    let _: u64 = master.rpush(queue.name(), "v").await.unwrap();
    let consumer = hasty.reliable_consumer().await.unwrap();
    let delivery = consumer.take().await.unwrap();
    // The durable connection's last write confirmed: the replica acknowledged all of it.
    queue
        .with_durability(Durability::replicas(1).timeout(PATIENCE))
        .offer("before", Duration::from_secs(3_600))
        .await
        .unwrap();
    let frozen = pair.freeze();
    // The first send: it ran, and its reply never came back.
    let keys = queue.keys().clone();
    let source = delayq::__internal::script_source("dead.lua").unwrap();
    let script_keys = delayq::__internal::script_keys("dead.lua", &keys, &[]).unwrap();
    let args: Vec<fred::types::Value> = vec![
        delayq::time::now_ms().into(),
        "0".into(),
        delivery.id().into(),
        fred::types::Value::Bytes(dead_record("").into()),
        0.into(),
    ];
    let ran: Vec<i64> = fred::interfaces::LuaInterface::eval(&master, source, script_keys, args)
        .await
        .unwrap();
    assert_eq!(ran, [1, 0]);
    // The resend, on the queue's durable connection.
    let resent = delivery.dead_letter("gave up").await;
    assert!(
        matches!(resent, Err(Error::NotConfirmed { .. })),
        "the replica has nothing yet: {resent:?}"
    );
    drop(frozen);
    // Once thawed, the replica gets it, and a dead letter confirms as before.
    wait_until("the dead letter on the replica", PATIENCE, || {
        match pair.replica.cli(&["LLEN", keys.dead()]).as_str() {
            "1" => Ok(()),
            other => Err(other.to_owned()),
        }
    });
}

/// Waiting for every replica: confirmed while both replicas of the master acknowledge, and not
/// once one of them has left (as a replica promoted by a forced failover leaves the old master),
/// though the one left acknowledges everything: `WAIT 1` would confirm what the promoted
/// replica never got.
#[tokio::test(flavor = "multi_thread")]
async fn every_replica_keeps_waiting_for_a_replica_that_left() {
    let pair = Pair::start(&[]);
    let port = pair.master.port.to_string();
    let second = TestRedis::start_with(&["--replicaof", "127.0.0.1", port.as_str()]);
    let connected = |n: &'static str| {
        let master = &pair.master;
        move || {
            let info = master.cli(&["INFO", "replication"]);
            let online = info.matches("state=online").count().to_string();
            match info.contains(&format!("connected_slaves:{n}")) && online == n {
                true => Ok(()),
                false => Err(info),
            }
        }
    };
    wait_until("two replicas online", PATIENCE, connected("2"));
    let queue = queue_on(&pair.master, "durable-every").await;
    let every = queue.with_durability(Durability::every_replica().timeout(PATIENCE));
    every.offer("both", Duration::from_secs(60)).await.unwrap();
    assert_eq!(pending_on(&second, &queue).await, 1);
    assert_eq!(pending_on(&pair.replica, &queue).await, 1);
    // One replica leaves; the other still follows and acknowledges.
    drop(second);
    wait_until("one replica left", PATIENCE, connected("1"));
    let hasty =
        queue.with_durability(Durability::every_replica().timeout(Duration::from_millis(300)));
    let err = hasty
        .offer("one", Duration::from_secs(60))
        .await
        .unwrap_err();
    match err {
        Error::NotConfirmed {
            wanted_replicas: 2,
            acked_replicas: 1,
            ..
        } => {}
        other => panic!("expected NotConfirmed, 1 of 2: {other:?}"),
    }
    let one = queue.with_durability(Durability::replicas(1).timeout(PATIENCE));
    one.offer("any", Duration::from_secs(60)).await.unwrap();
}

/// A replica an earlier process saw, and gone since, is still waited for by a fresh process's
/// every-replica offer: the record on the master (`delayq_replicas`) remembers it, as a
/// one-shot `delayq offer --wait-replicas all` run while a replica is cut off must not confirm
/// what a forced failover to that replica would lose. Once an operator forgets it
/// (`DEL delayq_replicas`), the fresh process and the earlier one confirm again.
#[tokio::test(flavor = "multi_thread")]
async fn every_replica_in_a_fresh_process_waits_for_a_replica_another_saw() {
    let pair = Pair::start(&[]);
    let port = pair.master.port.to_string();
    let second = TestRedis::start_with(&["--replicaof", "127.0.0.1", port.as_str()]);
    let connected = |n: &'static str| {
        let master = &pair.master;
        move || {
            let info = master.cli(&["INFO", "replication"]);
            let online = info.matches("state=online").count().to_string();
            match info.contains(&format!("connected_slaves:{n}")) && online == n {
                true => Ok(()),
                false => Err(info),
            }
        }
    };
    wait_until("two replicas online", PATIENCE, connected("2"));
    let every = Durability::every_replica().timeout(PATIENCE);
    let hasty = Durability::every_replica().timeout(Duration::from_millis(300));
    // The earlier process sees both replicas.
    let earlier = queue_on(&pair.master, "durable-shared").await;
    earlier
        .with_durability(every)
        .offer("both", Duration::from_secs(60))
        .await
        .unwrap();
    drop(second);
    wait_until("one replica left", PATIENCE, connected("1"));
    // A fresh process: its own client, its own durable connection, which never saw the second.
    let fresh = queue_on(&pair.master, "durable-shared-fresh").await;
    let err = fresh
        .with_durability(hasty)
        .offer("one", Duration::from_secs(60))
        .await
        .unwrap_err();
    match err {
        Error::NotConfirmed {
            wanted_replicas: 2,
            acked_replicas: 1,
            ..
        } => {}
        other => panic!("expected NotConfirmed, 1 of 2: {other:?}"),
    }
    // The operator says the second replica is gone for good.
    let forgotten = pair.master.cli(&["DEL", "delayq_replicas"]);
    assert_eq!(forgotten, "1", "the record was on the master");
    fresh
        .with_durability(every)
        .offer("after", Duration::from_secs(60))
        .await
        .unwrap();
    earlier
        .with_durability(every)
        .offer("after", Duration::from_secs(60))
        .await
        .unwrap();
}

/// The documented ACL user has no `+wait`: a durable write is refused before anything is
/// written, and with `+wait` added it goes through (docs/durability.md says so).
#[tokio::test(flavor = "multi_thread")]
async fn an_acl_user_without_wait_is_refused_before_writing() {
    let redis = TestRedis::start_setup(&crate::common::Setup::password("admin-pass"), &[]);
    let name = unique_name("durable-acl");
    let mut args = vec!["ACL", "SETUSER", "app"];
    let rules = crate::common::documented_acl(&name, "app-pass", &[]);
    args.extend(rules.iter().map(String::as_str));
    assert_eq!(redis.cli(&args), "OK");
    let url = format!("redis://app:app-pass@127.0.0.1:{}", redis.port);
    let client = crate::common::queue::connect(&url).await;
    let queue = crate::common::queue::manual_queue(&client, &name).await;
    // No replica: a wait that runs confirms nothing, so the timeout is short.
    let wanted = Durability::replicas(1).timeout(Duration::from_millis(50));
    let err = queue
        .with_durability(wanted)
        .offer("x", Duration::ZERO)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("NOPERM"), "{err}");
    assert!(queue.is_empty().await.unwrap());

    assert_eq!(redis.cli(&["ACL", "SETUSER", "app", "+wait"]), "OK");
    let err = queue
        .with_durability(wanted)
        .offer("x", Duration::ZERO)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotConfirmed { .. }), "{err:?}");
    assert_eq!(queue.size().await.unwrap(), 1);
}
