//! A loopback receiver for the queue and flow-control tests: each request to
//! `/GROUP/...` is answered 200 after the configured time, and the receiver keeps, per group,
//! the order the requests came in (their paths), when each started and ended, and the most
//! that were under way at once. A group can be closed: its requests then wait at the receiver
//! (under way) until it is opened, so that a test sees deliveries overlap however slow the
//! machine is.

#![allow(dead_code)]

use axum::extract::{Request, State};
use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One request: its path, and when it came and was answered (ms since the receiver started).
#[derive(Debug, Clone)]
pub struct Call {
    pub path: String,
    pub start_ms: u64,
    pub end_ms: u64,
}

#[derive(Default)]
struct Group {
    running: usize,
    peak: usize,
    calls: Vec<Call>,
}

struct Inner {
    started: Instant,
    hold: Duration,
    groups: Mutex<HashMap<String, Group>>,
    /// Groups whose requests wait until the group is opened.
    closed: Mutex<HashSet<String>>,
}

#[derive(Clone)]
pub struct SlowReceiver {
    pub addr: SocketAddr,
    inner: Arc<Inner>,
    _stop: Arc<tokio::sync::oneshot::Sender<()>>,
}

impl SlowReceiver {
    /// A receiver that answers every request after `hold`.
    pub async fn start(hold: Duration) -> SlowReceiver {
        let inner = Arc::new(Inner {
            started: Instant::now(),
            hold,
            groups: Mutex::new(HashMap::new()),
            closed: Mutex::new(HashSet::new()),
        });
        let app = axum::Router::new()
            .fallback(answer)
            .with_state(inner.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await
                .unwrap();
        });
        SlowReceiver {
            addr,
            inner,
            _stop: Arc::new(stop),
        }
    }

    pub fn base(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// The finished calls of `group`, in the order they came.
    pub fn calls(&self, group: &str) -> Vec<Call> {
        let groups = self.inner.groups.lock().unwrap();
        groups
            .get(group)
            .map(|g| g.calls.clone())
            .unwrap_or_default()
    }

    /// The most calls of `group` under way at once.
    pub fn peak(&self, group: &str) -> usize {
        let groups = self.inner.groups.lock().unwrap();
        groups.get(group).map_or(0, |g| g.peak)
    }

    /// The calls of `group` under way now.
    pub fn running(&self, group: &str) -> usize {
        let groups = self.inner.groups.lock().unwrap();
        groups.get(group).map_or(0, |g| g.running)
    }

    /// Holds the requests of `group` (those under way and those to come) until
    /// [`open`](Self::open).
    pub fn close(&self, group: &str) {
        self.inner.closed.lock().unwrap().insert(group.to_owned());
    }

    /// Lets the requests of `group` be answered (after the hold).
    pub fn open(&self, group: &str) {
        self.inner.closed.lock().unwrap().remove(group);
    }

    /// Waits until `n` calls of `group` are under way at once.
    pub async fn wait_running(&self, group: &str, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let running = self.running(group);
            if running >= n {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{group}: {running} calls under way, not {n}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits until `n` calls of `group` were answered.
    pub async fn wait_for(&self, group: &str, n: usize) -> Vec<Call> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let calls = self.calls(group);
            if calls.len() >= n {
                return calls;
            }
            assert!(
                Instant::now() < deadline,
                "{group}: {} calls, not {n}",
                calls.len()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

async fn answer(State(inner): State<Arc<Inner>>, request: Request) -> &'static str {
    let path = request.uri().path().to_owned();
    let group = path
        .trim_start_matches('/')
        .split('/')
        .next()
        .unwrap_or("")
        .to_owned();
    let start_ms = inner.started.elapsed().as_millis() as u64;
    {
        let mut groups = inner.groups.lock().unwrap();
        let g = groups.entry(group.clone()).or_default();
        g.running += 1;
        g.peak = g.peak.max(g.running);
    }
    while inner.closed.lock().unwrap().contains(&group) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(inner.hold).await;
    let end_ms = inner.started.elapsed().as_millis() as u64;
    let mut groups = inner.groups.lock().unwrap();
    let g = groups.entry(group).or_default();
    g.running -= 1;
    g.calls.push(Call {
        path,
        start_ms,
        end_ms,
    });
    "answer"
}
