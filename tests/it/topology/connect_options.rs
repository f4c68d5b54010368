//! Connection settings ([`delayq::ConnectOptions`]): a connect timeout that bounds the whole
//! first connection and says how long it waited, a command timeout, secrets kept out of output.

use crate::common::{unique_name, TestRedis};
use delayq::codec::StringCodec;
use delayq::{ConnectOptions, DelayedQueue};
use std::net::{Ipv4Addr, TcpListener};
use std::time::{Duration, Instant};

/// A loopback port that accepts connections and never answers (the listener's backlog takes
/// them; nobody reads), like a hung server.
fn silent_port() -> (TcpListener, u16) {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let port = listener.local_addr().unwrap().port();
    (listener, port)
}

/// The seconds an error message says it waited ("... after 10.0 s ...").
fn said_waited(message: &str) -> Duration {
    let number = message
        .split_once("after ")
        .and_then(|(_, rest)| rest.split_once(" s"))
        .map(|(number, _)| number)
        .unwrap_or_else(|| panic!("no \"after N s\" in {message:?}"));
    Duration::from_secs_f64(number.parse().unwrap())
}

/// Whether `said` (to 0.1 s) is the time really waited, `took` as the test measured it around
/// the call: at least `limit`, and no more than the test saw pass (the test's measure also
/// holds the moments before and after the library's; a busy machine makes those long, but
/// not the library's report wrong).
fn says_what_it_waited(said: Duration, limit: Duration, took: Duration) -> bool {
    let rounding = Duration::from_millis(50);
    said + rounding >= limit && said <= took + rounding
}

/// A loopback port nothing listens on (bound, then closed).
fn closed_port() -> u16 {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    listener.local_addr().unwrap().port()
}

/// `delayq::connect` to a server that accepts and never answers gives up after its 10 s connect
/// timeout and says so, rather than leaving the attempt to a QUIT that waits out the 30 s
/// command timeout (40 s in all, saying 10 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_server_fails_after_the_default_connect_timeout() {
    let (_listener, port) = silent_port();
    let started = Instant::now();
    let err = delayq::connect(&format!("redis://127.0.0.1:{port}"))
        .await
        .unwrap_err();
    let took = started.elapsed();
    // Under load the timer can fire late, but never 30 s late: that is the QUIT's wait.
    let limit = Duration::from_secs(10);
    assert!(
        took >= limit && took < limit + Duration::from_secs(30),
        "took {took:?}: {err}"
    );
    let text = err.to_string();
    assert!(
        says_what_it_waited(said_waited(&text), limit, took),
        "took {took:?}: {text}"
    );
    assert!(text.contains("connect timeout 10.0 s"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_server_fails_after_a_chosen_connect_timeout() {
    let (_listener, port) = silent_port();
    for (url, limit_ms) in [
        (format!("redis://127.0.0.1:{port}"), 700),
        (format!("redis-cluster://127.0.0.1:{port}"), 1_200),
        (
            format!("redis-sentinel://127.0.0.1:{port}?sentinelServiceName=m"),
            900,
        ),
    ] {
        let limit = Duration::from_millis(limit_ms);
        let started = Instant::now();
        let err = ConnectOptions::new()
            .connect_timeout(limit)
            .connect(&url)
            .await
            .unwrap_err();
        let took = started.elapsed();
        // Well before the default connect timeout (10 s), which would mean this one was lost.
        assert!(
            took >= limit && took < Duration::from_secs(10),
            "{url}: took {took:?}: {err}"
        );
        assert!(
            says_what_it_waited(said_waited(&err.to_string()), limit, took),
            "{url}: {err} (took {took:?})"
        );
    }
}

#[tokio::test]
async fn closed_port_fails_at_once_with_the_reason() {
    let port = closed_port();
    let started = Instant::now();
    let err = delayq::connect(&format!("redis://127.0.0.1:{port}"))
        .await
        .unwrap_err();
    // Refused, not left to the 10 s connect timeout.
    assert!(started.elapsed() < Duration::from_secs(10), "{err}");
    assert!(err.to_string().contains("refused"), "{err}");
}

/// A server that stops answering after the connection is made (SIGSTOP): a command fails after
/// the chosen command timeout, not the default 30 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn command_timeout_applies_to_a_server_that_stops_answering() {
    let redis = TestRedis::start_with(&[]);
    let client = ConnectOptions::new()
        .command_timeout(Duration::from_millis(800))
        .connect(&redis.url())
        .await
        .unwrap();
    let queue = DelayedQueue::builder(client, unique_name("cmd-timeout"), StringCodec)
        .transfer(false)
        .build()
        .await
        .unwrap();
    queue.offer("before", Duration::ZERO).await.unwrap();

    let pid = redis.pid().unwrap().to_string();
    signal("STOP", &pid);
    let started = Instant::now();
    let result = queue.offer("during", Duration::ZERO).await;
    let took = started.elapsed();
    signal("CONT", &pid);
    let err = result.unwrap_err();
    // Well before the default command timeout (30 s), which would mean this one was lost.
    assert!(
        took >= Duration::from_millis(800) && took < Duration::from_secs(20),
        "took {took:?}: {err}"
    );
    assert!(
        err.to_string().to_lowercase().contains("timed out"),
        "{err}"
    );
}

fn signal(which: &str, pid: &str) {
    let status = std::process::Command::new("kill")
        .args([&format!("-{which}"), pid])
        .status()
        .unwrap();
    assert!(status.success(), "kill -{which} {pid}");
}
