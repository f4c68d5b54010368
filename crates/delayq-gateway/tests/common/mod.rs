//! What the gateway's tests share: a real `redis-server` on a free loopback port (the pattern of
//! the workspace's `tests/common`, cut down), the gateway on 127.0.0.1:0, and a recording
//! receiver that answers each attempt as its path says.

#![allow(dead_code)]

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use delayq_gateway::{Delivery, Gateway, GatewayConfig};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How long a test waits for something that must happen before it fails.
pub const PATIENCE: Duration = Duration::from_secs(60);
pub const TOKEN: &str = "test-token-0123456789";
pub const CURRENT_KEY: &str = "sig_current_key_for_tests";
pub const NEXT_KEY: &str = "sig_next_key_for_tests";

/// A `redis-server` of this test alone, stopped when dropped.
pub struct TestRedis {
    child: Child,
    pub port: u16,
    _dir: tempfile::TempDir,
}

impl TestRedis {
    pub fn start() -> TestRedis {
        let dir = tempfile::tempdir().unwrap();
        for _ in 0..20 {
            let port = free_port();
            let mut child = Command::new("redis-server")
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args(["--save", "", "--appendonly", "no"])
                .arg("--dir")
                .arg(dir.path())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    break; // the port was taken meanwhile: try another
                }
                if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                    return TestRedis {
                        child,
                        port,
                        _dir: dir,
                    };
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("redis-server did not start");
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// `redis-cli -p PORT args...`: its output.
    pub fn cli(&self, args: &[&str]) -> String {
        let out = Command::new("redis-cli")
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "redis-cli {args:?}: {out:?}");
        String::from_utf8(out.stdout).unwrap()
    }

    /// How many times the server has run `command` (lower case, e.g. `"eval"`; the commands
    /// scripts call count too), from `INFO commandstats`.
    pub fn command_calls(&self, command: &str) -> u64 {
        let prefix = format!("cmdstat_{command}:calls=");
        self.cli(&["INFO", "commandstats"])
            .lines()
            .find_map(|l| l.strip_prefix(prefix.as_str()))
            .and_then(|rest| rest.split(',').next())
            .map_or(0, |n| n.parse().unwrap())
    }
}

impl Drop for TestRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A free loopback port (never 6379).
pub fn free_port() -> u16 {
    loop {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        if port != 6379 {
            return port;
        }
    }
}

pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// One request the receiver got.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    /// Path and query, as sent.
    pub target: String,
    pub headers: axum::http::HeaderMap,
    pub body: Vec<u8>,
    pub at_ms: i64,
}

impl Recorded {
    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .map(|v| v.to_str().unwrap())
            .unwrap_or("")
    }
}

/// A loopback HTTP server that records every request and answers the n-th request to a path
/// `/PLAN/...` with the n-th status of PLAN (`500-500-200`: two failures, then success; the
/// last status repeats). 489 comes with `Upstash-NonRetryable-Error: true`, 429 with
/// `Retry-After: 2`.
#[derive(Clone)]
pub struct Receiver {
    pub addr: SocketAddr,
    seen: Arc<Mutex<Vec<Recorded>>>,
    _stop: Arc<tokio::sync::oneshot::Sender<()>>,
}

impl Receiver {
    pub async fn start() -> Receiver {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let app = axum::Router::new()
            .fallback(record)
            .with_state(seen.clone());
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
        Receiver {
            addr,
            seen,
            _stop: Arc::new(stop),
        }
    }

    /// `http://ADDR/` (the allow-list prefix).
    pub fn base(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// The requests to paths starting with `path`.
    pub fn to(&self, path: &str) -> Vec<Recorded> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.target.starts_with(path))
            .cloned()
            .collect()
    }

    /// Waits until `n` requests to `path` were recorded.
    pub async fn wait_for(&self, path: &str, n: usize) -> Vec<Recorded> {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let got = self.to(path);
            if got.len() >= n {
                return got;
            }
            assert!(
                Instant::now() < deadline,
                "{path}: {} requests after {PATIENCE:?}, not {n}",
                got.len()
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }
}

async fn record(State(seen): State<Arc<Mutex<Vec<Recorded>>>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, usize::MAX).await.unwrap();
    let target = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_default();
    let plan = target
        .trim_start_matches('/')
        .split('/')
        .next()
        .unwrap_or("");
    let statuses: Vec<u16> = plan.split('-').filter_map(|s| s.parse().ok()).collect();
    let n = {
        let mut seen = seen.lock().unwrap();
        let n = seen
            .iter()
            .filter(|r| r.target.split('?').next() == target.split('?').next())
            .count();
        seen.push(Recorded {
            method: parts.method.to_string(),
            target: target.clone(),
            headers: parts.headers,
            body: body.to_vec(),
            at_ms: now_ms(),
        });
        n
    };
    let status = statuses.get(n).or(statuses.last()).copied().unwrap_or(200);
    let status = StatusCode::from_u16(status).unwrap();
    match status.as_u16() {
        489 => (status, [("Upstash-NonRetryable-Error", "true")], "no").into_response(),
        429 => (status, [("Retry-After", "2")], "later").into_response(),
        _ => (status, "answer").into_response(),
    }
}

/// A gateway serving on 127.0.0.1:0 with its deliveries running.
pub struct TestGateway {
    pub base: String,
    pub gateway: Gateway,
    delivery: Option<Delivery>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl TestGateway {
    /// A gateway on `redis` allowing `receiver`, with short retry waits, after `tune`.
    pub async fn start(
        redis: &TestRedis,
        receiver: &Receiver,
        tune: impl FnOnce(GatewayConfig) -> GatewayConfig,
    ) -> TestGateway {
        TestGateway::start_at(&redis.url(), receiver, tune).await
    }

    /// [`TestGateway::start`] on the Redis at `url` (a [`FreezingProxy`], say).
    pub async fn start_at(
        url: &str,
        receiver: &Receiver,
        tune: impl FnOnce(GatewayConfig) -> GatewayConfig,
    ) -> TestGateway {
        let client = delayq::connect(url).await.unwrap();
        let config = GatewayConfig::new(TOKEN, CURRENT_KEY)
            .with_next_key(NEXT_KEY)
            .allow_destination(receiver.base())
            .with_backoff(Duration::from_millis(200), Duration::from_secs(1))
            // Well above what an answer of the loopback receivers takes on a loaded machine: a
            // slow answer is not a failed attempt (a test that wants timeouts sets its own).
            .with_request_timeout(Duration::from_secs(30));
        let gateway = Gateway::new(client, tune(config)).await.unwrap();
        let delivery = gateway.deliver().unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let router = gateway.router();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            axum::serve(listener, router)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await
                .unwrap();
        });
        TestGateway {
            base,
            gateway,
            delivery: Some(delivery),
            _stop: stop,
        }
    }

    pub async fn shutdown(mut self) {
        if let Some(delivery) = self.delivery.take() {
            delivery.shutdown().await.unwrap();
        }
    }

    /// `POST /v2/publish/{destination}` with the token and `headers`.
    pub async fn publish(
        &self,
        destination: &str,
        headers: &[(&str, &str)],
        body: Vec<u8>,
    ) -> (u16, serde_json::Value) {
        let mut request = reqwest::Client::new()
            .post(format!("{}/v2/publish/{destination}", self.base))
            .bearer_auth(TOKEN)
            .body(body);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        (
            status,
            serde_json::from_slice(&response.bytes().await.unwrap()).unwrap(),
        )
    }

    /// A `method` request to `path` with the token: its status and JSON.
    pub async fn call(&self, method: &str, path: &str) -> (u16, serde_json::Value) {
        let response = reqwest::Client::new()
            .request(method.parse().unwrap(), format!("{}{path}", self.base))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        (
            status,
            serde_json::from_slice(&response.bytes().await.unwrap()).unwrap(),
        )
    }

    /// Waits until `GET /v2/dlq` lists `id`; its entry.
    pub async fn wait_dead(&self, id: &str) -> serde_json::Value {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let (_, list) = self.call("GET", "/v2/dlq").await;
            let found = list["messages"]
                .as_array()
                .unwrap()
                .iter()
                .find(|m| m["messageId"] == id)
                .cloned();
            if let Some(found) = found {
                return found;
            }
            assert!(Instant::now() < deadline, "{id} not in the DLQ: {list}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Checks `token` as QStash's receivers do (HS256 with `key`'s bytes, issuer, times, `sub`,
/// body hash) and returns its claims.
pub fn verify(token: &str, key: &str, url: &str, body: &[u8]) -> serde_json::Value {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine;
    use hmac::Mac;
    use sha2::Digest;
    let (signed, signature) = token.rsplit_once('.').unwrap();
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(key.as_bytes()).unwrap();
    mac.update(signed.as_bytes());
    mac.verify_slice(&URL_SAFE_NO_PAD.decode(signature).unwrap())
        .expect("signature");
    let claims = signed.split('.').nth(1).unwrap();
    let claims: serde_json::Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(claims).unwrap()).unwrap();
    let now = now_ms() / 1000;
    assert_eq!(claims["iss"], "Upstash");
    assert_eq!(claims["sub"], url);
    assert!(claims["nbf"].as_i64().unwrap() <= now + 1);
    assert!(claims["exp"].as_i64().unwrap() > now);
    assert_eq!(
        claims["body"],
        URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(body))
    );
    claims
}

/// A loopback TCP proxy in front of a Redis that passes everything until a client sends a
/// command naming `needle`; from then on it passes that command (and the answers) but holds
/// every later command of every connection, as if their sender had died right after it.
/// [`FreezingProxy::cut`] closes every connection and the listener.
pub struct FreezingProxy {
    pub port: u16,
    frozen: Arc<std::sync::atomic::AtomicBool>,
    tasks: Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>>,
}

impl FreezingProxy {
    pub async fn start(redis: &TestRedis, needle: &'static [u8]) -> FreezingProxy {
        use std::sync::atomic::{AtomicBool, Ordering};
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let upstream = redis.port;
        let frozen = Arc::new(AtomicBool::new(false));
        let tasks: Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>> = Arc::default();
        let (frozen2, tasks2) = (frozen.clone(), tasks.clone());
        let accept = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let server = tokio::net::TcpStream::connect(("127.0.0.1", upstream))
                    .await
                    .unwrap();
                let (mut client_read, mut client_write) = client.into_split();
                let (mut server_read, mut server_write) = server.into_split();
                let frozen = frozen2.clone();
                let up = tokio::spawn(async move {
                    let mut buf = vec![0u8; 64 * 1024];
                    loop {
                        let n = match client_read.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => n,
                        };
                        if frozen.load(Ordering::SeqCst) {
                            std::future::pending::<()>().await;
                        }
                        let chunk = &buf[..n];
                        if server_write.write_all(chunk).await.is_err() {
                            return;
                        }
                        if chunk.windows(needle.len()).any(|w| w == needle) {
                            frozen.store(true, Ordering::SeqCst);
                        }
                    }
                });
                let down = tokio::spawn(async move {
                    let mut buf = vec![0u8; 64 * 1024];
                    loop {
                        let n = match server_read.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => n,
                        };
                        if client_write.write_all(&buf[..n]).await.is_err() {
                            return;
                        }
                    }
                });
                tasks2.lock().unwrap().extend([up, down]);
            }
        });
        tasks.lock().unwrap().push(accept);
        FreezingProxy {
            port,
            frozen,
            tasks,
        }
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Whether a command naming the needle went through.
    pub fn is_frozen(&self) -> bool {
        self.frozen.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Closes every connection and the listener: its clients reach Redis no more.
    pub fn cut(&self) {
        for task in self.tasks.lock().unwrap().drain(..) {
            task.abort();
        }
    }
}

/// How many entries the gateway's queue (`delayq-gateway`) holds pending in `redis`.
pub async fn pending_entries(redis: &TestRedis) -> i64 {
    let client = delayq::connect(&redis.url()).await.unwrap();
    let timeout = delayq::QueueKeys::new("delayq-gateway")
        .timeout()
        .to_owned();
    delayq::fred::interfaces::SortedSetsInterface::zcard(&client, &timeout)
        .await
        .unwrap()
}

/// Waits until the gateway's queue (`delayq-gateway`) in `redis` holds nothing to deliver: no
/// entry pending (its timeout zset), ready (its list), claimed or in flight (delayq's claim
/// lists and in-flight zset), read at once by one script, so that a value moving from one to
/// the next is never missed.
pub async fn wait_idle(redis: &TestRedis) {
    const HELD: &str = "local n = redis.call('ZCARD', KEYS[1]) + redis.call('LLEN', KEYS[2]) \
           + redis.call('ZCARD', KEYS[3]) \
         for _, claim in ipairs(redis.call('ZRANGE', KEYS[4], 0, -1)) do \
           n = n + redis.call('LLEN', claim) \
         end \
         return n";
    let client = delayq::connect(&redis.url()).await.unwrap();
    let keys = delayq::QueueKeys::new("delayq-gateway");
    let names: Vec<String> = [
        keys.timeout(),
        keys.target(),
        keys.inflight(),
        keys.claims(),
    ]
    .map(str::to_owned)
    .into();
    let deadline = Instant::now() + PATIENCE;
    loop {
        let held: i64 = delayq::fred::interfaces::LuaInterface::eval(
            &client,
            HELD,
            names.clone(),
            Vec::<String>::new(),
        )
        .await
        .unwrap();
        if held == 0 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the queue still holds {held} after {PATIENCE:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until `n` delayq workers serve the queue `name` in `redis`, as the queue's registry of
/// live processes says (a worker writes its record when it starts and takes it out when it has
/// stopped taking values).
pub async fn wait_workers(redis: &TestRedis, name: &str, n: usize) {
    let client = delayq::connect(&redis.url()).await.unwrap();
    let queue = delayq::DelayedQueue::builder(client, name, delayq::codec::ByteArrayCodec)
        .transfer(false)
        .build()
        .await
        .unwrap();
    let deadline = Instant::now() + PATIENCE;
    loop {
        let processes = queue.inspect().processes().await.unwrap();
        let workers = processes.iter().filter(|p| p.kind == "worker").count();
        if workers == n {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{name}: {workers} workers after {PATIENCE:?}, not {n}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
