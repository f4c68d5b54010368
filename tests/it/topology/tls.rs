//! TLS on real servers: `redis-server --tls-port` with a CA and certificates that `openssl`
//! makes for each test (standalone, mutual TLS, server name, a wrong CA refused, Cluster and
//! Sentinel over TLS). The servers keep a plaintext port for the harness only; delayq gets the
//! TLS ports, and the tests check on the server that its connections came in there.

use crate::common::{unique_name, Setup, TestCerts, TestCluster, TestRedis, TestSentinel};
use delayq::codec::StringCodec;
use delayq::{ConnectOptions, DelayedQueue, Error, Scheduler, TlsFailure, TlsOptions};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn certs() -> Arc<TestCerts> {
    Arc::new(TestCerts::generate())
}

fn trusting(certs: &TestCerts) -> ConnectOptions {
    ConnectOptions::new().tls(TlsOptions::new().ca_file(certs.ca()))
}

fn named(certs: &TestCerts) -> ConnectOptions {
    ConnectOptions::new().tls(
        TlsOptions::new()
            .ca_file(certs.ca())
            .server_name(TestCerts::NAMED_HOST),
    )
}

/// The local ports of the server's client connections other than `CLIENT LIST`'s own.
fn client_local_ports(list: &str) -> Vec<u16> {
    list.lines()
        .filter(|line| !line.contains("cmd=client|list"))
        .filter_map(|line| {
            let laddr = line.split(' ').find_map(|f| f.strip_prefix("laddr="))?;
            laddr.rsplit_once(':')?.1.parse().ok()
        })
        .collect()
}

/// Offers, lets a scheduler (its own subscriber connection) move the value, and takes it with a
/// consumer (its own blocking connection): every kind of connection delayq opens.
async fn round_trip(client: &delayq::fred::clients::Client, name: &str) {
    let queue = DelayedQueue::builder(client.clone(), name, StringCodec)
        .transfer(false)
        .build()
        .await
        .unwrap();
    let scheduler = Scheduler::builder(client.clone(), name)
        .spawn()
        .await
        .unwrap();
    queue
        .offer("over-tls", Duration::from_millis(200))
        .await
        .unwrap();
    let consumer = queue.consumer().await.unwrap();
    let got = consumer.poll(crate::common::PATIENCE).await.unwrap();
    assert_eq!(got.as_deref(), Some("over-tls"));
    scheduler.shutdown().await;
    queue.destroy().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn standalone_with_a_ca_file() {
    let certs = certs();
    let redis = TestRedis::start_setup(&Setup::tls(&certs), &[]);
    let tls_port = redis.tls_port.unwrap();
    assert!(redis.url().starts_with("rediss://"));
    let client = trusting(&certs).connect(&redis.url()).await.unwrap();
    let name = unique_name("tls");
    round_trip(&client, &name).await;

    // Every connection delayq keeps open (client, scheduler's subscriber, consumer) came in on
    // the TLS port.
    let queue = DelayedQueue::new(client.clone(), name.as_str(), StringCodec)
        .await
        .unwrap();
    let _consumer = queue.consumer().await.unwrap();
    let ports = client_local_ports(&redis.cli(&["CLIENT", "LIST"]));
    assert!(ports.len() >= 3, "{ports:?}");
    assert!(ports.iter().all(|&p| p == tls_port), "{ports:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn untrusted_certificates_are_refused_quickly() {
    let certs = certs();
    let redis = TestRedis::start_setup(&Setup::tls(&certs), &[]);
    let cases = [
        ("the system CAs", ConnectOptions::new()),
        (
            "an unrelated CA",
            ConnectOptions::new().tls(TlsOptions::new().ca_file(certs.path("other-ca.crt"))),
        ),
    ];
    for (what, options) in cases {
        let started = Instant::now();
        let err = options.connect(&redis.url()).await.unwrap_err();
        let text = err.to_string();
        // Refused by the handshake, not by the 10 s connect timeout.
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{what}: {text}"
        );
        assert!(
            matches!(
                err,
                Error::Tls {
                    failure: TlsFailure::UnknownIssuer,
                    ..
                }
            ),
            "{what}: {err:?}"
        );
        assert!(
            text.contains("not signed by a CA this client trusts"),
            "{what}: {text}"
        );
    }
    // Nothing got through to run a command.
    let stats = redis.cli(&["INFO", "stats"]);
    assert!(stats.contains("total_commands_processed:"), "{stats}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_tls_needs_the_client_certificate() {
    let certs = certs();
    let setup = Setup {
        client_certs: true,
        ..Setup::tls(&certs)
    };
    let redis = TestRedis::start_setup(&setup, &[]);
    let started = Instant::now();
    let refused = trusting(&certs).connect(&redis.url()).await;
    assert!(
        matches!(
            refused,
            Err(Error::Tls {
                failure: TlsFailure::ClientCertificateRequired,
                ..
            })
        ),
        "{refused:?}"
    );
    // Refused by the server, not by the 10 s connect timeout.
    assert!(started.elapsed() < Duration::from_secs(10), "{refused:?}");

    let client = ConnectOptions::new()
        .tls(
            TlsOptions::new()
                .ca_file(certs.ca())
                .client_cert(certs.path("client.crt"), certs.path("client.key")),
        )
        .connect(&redis.url())
        .await
        .unwrap();
    round_trip(&client, &unique_name("mtls")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_name_verifies_a_certificate_for_another_name() {
    let certs = certs();
    let setup = Setup {
        named_cert: true,
        ..Setup::tls(&certs)
    };
    let redis = TestRedis::start_setup(&setup, &[]);
    // The certificate names redis.delayq.test only, not 127.0.0.1.
    let err = trusting(&certs).connect(&redis.url()).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::Tls {
                failure: TlsFailure::WrongName,
                ..
            }
        ),
        "{err:?}"
    );

    let client = named(&certs).connect(&redis.url()).await.unwrap();
    round_trip(&client, &unique_name("sni")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insecure_mode_skips_verification() {
    let certs = certs();
    let redis = TestRedis::start_setup(&Setup::tls(&certs), &[]);
    let client = ConnectOptions::new()
        .tls(TlsOptions::new().insecure(true))
        .connect(&redis.url())
        .await
        .unwrap();
    round_trip(&client, &unique_name("insecure")).await;
}

/// A v1 client certificate is refused as what it is, not blamed on its key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_v1_client_certificate_is_named_as_such() {
    let certs = certs();
    let v1 = certs.v1_client();
    let err = ConnectOptions::new()
        .tls(TlsOptions::new().client_cert(&v1, certs.path("client.key")))
        .connect("rediss://127.0.0.1:1")
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("X.509 v1"), "{text}");
    assert!(text.contains(&v1.display().to_string()), "{text}");
    assert!(
        !text.contains("private key") && !text.contains("go together"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_files_are_named_in_the_error() {
    let certs = certs();
    let missing = certs.path("no-such-ca.crt");
    let err = ConnectOptions::new()
        .tls(TlsOptions::new().ca_file(&missing))
        .connect("rediss://127.0.0.1:1")
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains(&missing.display().to_string()),
        "{err}"
    );
}

/// The nodes' certificate names only redis.delayq.test: the server name must reach the nodes
/// found through `CLUSTER SLOTS` (as 127.0.0.1) too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_over_tls_with_a_server_name() {
    let certs = certs();
    let setup = Setup {
        named_cert: true,
        ..Setup::tls(&certs)
    };
    let cluster = TestCluster::start_setup(3, &setup);
    let url = cluster.url();
    assert!(url.starts_with("rediss-cluster://"), "{url}");
    assert!(trusting(&certs).connect(&url).await.is_err());
    let client = named(&certs).connect(&url).await.unwrap();
    // Queues on at least two masters, all through TLS connections.
    let first = unique_name("tls-cluster");
    let first_owner = cluster.slot_owner(cluster.key_slot(&first));
    let second = (0..)
        .map(|k| format!("{first}-{k}"))
        .find(|n| cluster.slot_owner(cluster.key_slot(n)) != first_owner)
        .unwrap();
    for name in [&first, &second] {
        round_trip(&client, name).await;
    }
    let tls_ports = cluster.client_ports();
    for (node, tls_port) in tls_ports.iter().enumerate() {
        let ports = client_local_ports(&cluster.cli(node, &["CLIENT", "LIST"]));
        assert!(!ports.is_empty(), "node {node}: no client");
        assert!(
            ports.iter().all(|p| p == tls_port),
            "node {node}: {ports:?}"
        );
    }
}

/// Sentinels and data nodes on TLS, with passwords on both and certificates that name only
/// redis.delayq.test: the client (sentinels, then the master they name as 127.0.0.1) and the
/// +switch-master listeners connect with TLS, the server name and the right credentials, and a
/// failover is followed in 3 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sentinel_over_tls_with_passwords_follows_a_failover() {
    let certs = certs();
    let setup = Setup {
        password: Some("data-secret".into()),
        sentinel_password: Some("sentinel-secret".into()),
        named_cert: true,
        ..Setup::tls(&certs)
    };
    let sentinel = TestSentinel::start_setup(&setup);
    let url = sentinel.url();
    assert!(url.starts_with("rediss-sentinel://"), "{url}");
    let client = named(&certs).connect(&url).await.unwrap();
    round_trip(&client, &unique_name("tls-sentinel")).await;
    crate::topology::cluster_sentinel::follows_failover_before_the_demotion(sentinel, client).await;
}
