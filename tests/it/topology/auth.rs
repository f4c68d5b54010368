//! Authentication on every connection delayq opens: `requirepass`, an ACL user limited to one
//! queue's keys and channel, Sentinel with passwords on the data nodes and the sentinels.

use crate::common::{
    documented_acl, unique_name, Setup, TestCluster, TestRedis, TestSentinel, PATIENCE,
};
use delayq::codec::StringCodec;
use delayq::{Clock, DelayedQueue, ReliableConfig, Scheduler};
use std::time::Duration;

/// Everything a queue user does, with every kind of connection delayq opens: the queue's
/// scripts, a scheduler (its own subscriber connection, on the server's clock: `TIME`), a
/// consumer (its own blocking connection) and a reliable consumer (its own waiting connection).
async fn use_every_connection(client: &delayq::fred::clients::Client, name: &str) {
    let queue = DelayedQueue::builder(client.clone(), name, StringCodec)
        .transfer(false)
        .options(delayq::QueueOptions::default().clock(Clock::Server))
        .build()
        .await
        .unwrap();
    let scheduler = Scheduler::builder(client.clone(), name)
        .options(delayq::QueueOptions::default().clock(Clock::Server))
        .spawn()
        .await
        .unwrap();
    // Due in an hour, so both are still pending when counted; brought forward one at a time.
    let hour = Duration::from_secs(3_600);
    queue.offer("one", hour).await.unwrap();
    // A new value: nothing replaced.
    assert!(!queue.offer_unique("two", 2 * hour).await.unwrap());
    assert!(queue.reschedule("two", hour).await.unwrap());
    assert!(queue.contains("two").await.unwrap());
    assert_eq!(queue.inspect().pending(10).await.unwrap().len(), 2);
    assert!(queue.reschedule("one", Duration::ZERO).await.unwrap());
    let consumer = queue.consumer().await.unwrap();
    let first = consumer.poll(PATIENCE).await.unwrap();
    assert_eq!(first.as_deref(), Some("one"));
    assert!(queue.reschedule("two", Duration::ZERO).await.unwrap());

    let reliable = queue
        .reliable_consumer_with(
            ReliableConfig::default().with_wait_slice(Duration::from_millis(200)),
        )
        .await
        .unwrap();
    let delivery = reliable.take_timeout(PATIENCE).await.unwrap().unwrap();
    assert_eq!(delivery.value().map(String::as_str), Some("two"));
    assert!(delivery.dead_letter("checked").await.unwrap());
    assert_eq!(queue.inspect().dead_letters(10).await.unwrap().len(), 1);
    let stats = queue.inspect().stats().await.unwrap();
    assert_eq!(stats.pending, 0);
    reliable.close().await;
    scheduler.shutdown().await;
    queue.destroy().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requirepass_on_every_connection() {
    let redis = TestRedis::start_setup(&Setup::password("s3cret-pass"), &[]);
    let client = delayq::connect(&redis.url()).await.unwrap();
    use_every_connection(&client, &unique_name("auth")).await;

    // A wrong password is refused at once, and the error does not repeat it.
    let wrong = format!("redis://:not-the-pass@127.0.0.1:{}", redis.port);
    let err = delayq::connect(&wrong).await.unwrap_err().to_string();
    assert!(err.contains("WRONGPASS"), "{err}");
    assert!(!err.contains("not-the-pass"), "{err}");
    // Without a password the server answers NOAUTH (fred sends no AUTH, so the connection
    // is made and the first command is refused).
    let none = format!("redis://127.0.0.1:{}", redis.port);
    let refused = match delayq::connect(&none).await {
        Err(err) => err.to_string(),
        Ok(client) => {
            let queue = DelayedQueue::builder(client, unique_name("noauth"), StringCodec)
                .transfer(false)
                .build()
                .await
                .unwrap();
            queue
                .offer("x", Duration::ZERO)
                .await
                .unwrap_err()
                .to_string()
        }
    };
    assert!(refused.contains("NOAUTH"), "{refused}");
}

/// `ACL SETUSER app RULES...`.
fn setuser(rules: &[String]) -> Vec<&str> {
    let mut args = vec!["ACL", "SETUSER", "app"];
    args.extend(rules.iter().map(String::as_str));
    args
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acl_user_limited_to_one_queue() {
    let redis = TestRedis::start_setup(&Setup::password("admin-pass"), &[]);
    let name = unique_name("acl");
    assert_eq!(
        redis.cli(&setuser(&documented_acl(&name, "app-pass", &[]))),
        "OK"
    );

    let url = format!("redis://app:app-pass@127.0.0.1:{}", redis.port);
    let client = delayq::connect(&url).await.unwrap();
    use_every_connection(&client, &name).await;

    // The restriction is real: another queue's keys are refused.
    let other = DelayedQueue::builder(client.clone(), unique_name("acl-other"), StringCodec)
        .transfer(false)
        .build()
        .await
        .unwrap();
    let err = other.offer("x", Duration::ZERO).await.unwrap_err();
    assert!(err.to_string().contains("NOPERM"), "{err}");
}

/// Passwords on the data nodes and (different ones) on the sentinels: the client, its
/// +switch-master listeners, and every connection a queue opens authenticate; a failover is
/// followed when the sentinels announce it (listeners that cannot authenticate never
/// subscribe, and the client then notices only when the old master is demoted, ~8 s later).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sentinel_with_passwords_follows_a_failover() {
    let setup = Setup {
        password: Some("data-secret".into()),
        sentinel_password: Some("sentinel-secret".into()),
        ..Setup::default()
    };
    let sentinel = TestSentinel::start_setup(&setup);
    let client = delayq::connect(&sentinel.url()).await.unwrap();
    use_every_connection(&client, &unique_name("auth-sentinel")).await;

    // An ACL user on the data nodes (ACL users are not replicated: set on both) also needs
    // ROLE, which fred sends to check that the node Sentinel named is the master.
    let name = unique_name("acl-sentinel");
    let rules = documented_acl(&name, "app-pass", &["Sentinel"]);
    for port in [sentinel.master_port(), sentinel.replica_port()] {
        assert_eq!(sentinel.cli(port, &setuser(&rules)), "OK");
    }
    let app_url = sentinel.url().replacen(":data-secret@", "app:app-pass@", 1);
    assert_ne!(app_url, sentinel.url());
    let app = delayq::connect(&app_url).await.unwrap();
    use_every_connection(&app, &name).await;

    crate::topology::cluster_sentinel::follows_failover_before_the_demotion(sentinel, client).await;
}

/// On a Cluster the same user also needs `CLUSTER SLOTS` and `CLUSTER INFO` (fred reads the slot
/// map with the one and checks the cluster's health with the other).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acl_user_on_a_cluster() {
    let cluster = TestCluster::start_setup(3, &Setup::password("admin-pass"));
    let name = unique_name("acl-cluster");
    let rules = documented_acl(&name, "app-pass", &["Cluster"]);
    for node in 0..3 {
        assert_eq!(cluster.cli(node, &setuser(&rules)), "OK");
    }
    let ports = cluster.client_ports();
    let url = format!(
        "redis-cluster://app:app-pass@127.0.0.1:{}?node=127.0.0.1:{}",
        ports[0], ports[1]
    );
    let client = delayq::connect(&url).await.unwrap();
    use_every_connection(&client, &name).await;
}
