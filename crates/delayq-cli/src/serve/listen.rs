//! The HTTP listener every long-running command shares (`transfer --listen`, `work --listen`,
//! `ui`): where it may bind, which `Host` names it answers, how many connections it holds and
//! how long a client gets to send a request's headers. Past the cap, a few more connections are
//! kept for `/healthz` and `/metrics` only ([`RESERVED`]), so that clients that hold
//! connections open (half-sent requests) cannot make a healthy process look down: a connection
//! past the cap is first read up to the end of its request head ([`SORTING`] at a time, the
//! slowest dropped for a new one), and gets a kept place only as a whole probe request.

use super::head::{path_of, read_head, Replayed};
use crate::duration::parse_duration;
use anyhow::{bail, Context};
use axum::body::Body;
use axum::http::uri::Authority;
use axum::http::{header, HeaderValue, Request, Response, StatusCode, Version};
use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

/// How long a request still being answered at shutdown gets to finish.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(5);
/// The pause after a failed accept (out of file descriptors, say) before the next.
const ACCEPT_RETRY: Duration = Duration::from_millis(100);
/// The connections kept, past `--http-max-connections`, for `/healthz` and `/metrics`: each
/// answers one request whose head is in already.
const RESERVED: usize = 16;
/// The connections past the cap whose request heads are being read, to learn whether they are
/// probes: one more drops the one that has been at it longest (a probe sends its head at once,
/// a client that sends half a head never gets further than this).
const SORTING: usize = 32;
/// How long a connection past the cap may take to send its request's head.
const RESERVED_HEADER_WAIT: Duration = Duration::from_secs(2);
/// What a reserved connection answers to anything but `/healthz` and `/metrics`.
const BUSY: &str = "too many connections: only /healthz and /metrics are answered now\n";
/// What a connection over the cap gets before it is closed.
const OVER_CAP: &[u8] =
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

/// The options of every HTTP listener.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct ListenArgs {
    /// Allow a listen address other than loopback: anyone who reaches it reads the queues'
    /// names in /metrics (and, with `ui`, their values).
    #[arg(long, env = "DELAYQ_ALLOW_REMOTE")]
    pub(crate) allow_remote: bool,
    /// Also answer requests whose Host is NAME (repeatable), e.g. the name a proxy or
    /// Prometheus uses; without it only the listen address itself (and `localhost` on
    /// loopback) is answered, anything else gets 421. The dashboard takes writes from pages
    /// at http://NAME and https://NAME; NAME:PORT allows that port instead of the default.
    #[arg(
        long = "allow-host",
        env = "DELAYQ_ALLOW_HOST",
        value_delimiter = ',',
        value_name = "NAME[:PORT]",
        value_parser = AllowedHost::parse
    )]
    pub(crate) allow_hosts: Vec<AllowedHost>,
    /// /healthz answers 503 once no call to Redis has succeeded for this long.
    #[arg(long, env = "DELAYQ_UNHEALTHY_AFTER", value_name = "DURATION", value_parser = parse_duration, default_value = "30s")]
    pub(crate) unhealthy_after: Duration,
    /// The most HTTP connections held at once; one more is answered 503 and closed.
    #[arg(long, env = "DELAYQ_HTTP_MAX_CONNECTIONS", value_name = "N", default_value_t = 256,
          value_parser = clap::value_parser!(u32).range(1..=65_536))]
    pub(crate) http_max_connections: u32,
    /// How long a client gets to send a request's headers (and, to the dashboard, a body it
    /// reads); an idle keep-alive connection is closed after as long.
    #[arg(long, env = "DELAYQ_HTTP_HEADER_TIMEOUT", value_name = "DURATION", value_parser = parse_duration, default_value = "10s")]
    pub(crate) http_header_timeout: Duration,
    /// Which series /metrics shows: one per queue (labels `queue`, and `logical_queue` on a
    /// shard of a sharded queue), or sums over the queues without their labels, for thousands
    /// of queues.
    #[arg(
        long,
        env = "DELAYQ_METRICS",
        value_name = "MODE",
        value_enum,
        default_value = "per-queue"
    )]
    pub(crate) metrics: super::MetricsMode,
    /// Redis commands a second the gauges' reads may take (11.5 a queue on average: 8 counts,
    /// and its 14 keys' memory every fourth pass): with few queues, each is read every 2 s; with
    /// more, each less often, in turn. With `transfer`, the whole process's: the gauges get
    /// what its sweep and other periodic reads leave.
    #[arg(long, env = "DELAYQ_METRICS_READ_BUDGET", value_name = "N", default_value_t = 1_000, hide = true,
          value_parser = clap::value_parser!(u32).range(8..))]
    pub(crate) metrics_read_budget: u32,
}

/// A bound listener and the rules it serves by.
pub(crate) struct Bound {
    listener: TcpListener,
    pub(crate) addr: SocketAddr,
    hosts: Arc<Hosts>,
    max_connections: usize,
    header_timeout: Duration,
}

/// Binds `listen` for any of the commands: loopback unless `--allow-remote`. Called before the
/// command starts its work, so a refused or busy address stops it at once.
pub(crate) async fn bind(listen: SocketAddr, args: &ListenArgs) -> anyhow::Result<Bound> {
    if !listen.ip().is_loopback() && !args.allow_remote {
        bail!(
            "{listen} is not a loopback address: anyone who reaches it would read the queues \
             (their names in /metrics, their values in the dashboard); add --allow-remote to \
             mean it"
        );
    }
    if args.http_header_timeout.is_zero() {
        bail!("--http-header-timeout must be more than 0");
    }
    let listener = TcpListener::bind(listen)
        .await
        .with_context(|| format!("cannot listen on {listen}"))?;
    Ok(Bound {
        addr: listener.local_addr()?,
        listener,
        hosts: Arc::new(Hosts::new(&args.allow_hosts)),
        max_connections: args.http_max_connections as usize,
        header_timeout: args.http_header_timeout,
    })
}

impl Bound {
    /// Serves `router` until `stop`, then waits (briefly) for the requests being answered.
    pub(crate) async fn serve(self, router: Router, stop: CancellationToken) {
        let permits = Arc::new(Semaphore::new(self.max_connections));
        let reserved = Arc::new(Semaphore::new(RESERVED));
        // The connections past the cap being sorted, oldest first (each token is cancelled to
        // drop it, and by the sorting itself once done).
        let mut sorting: VecDeque<CancellationToken> = VecDeque::new();
        let mut connections = JoinSet::new();
        loop {
            let accepted = tokio::select! {
                _ = stop.cancelled() => break,
                Some(_) = connections.join_next(), if !connections.is_empty() => continue,
                accepted = self.listener.accept() => accepted,
            };
            let stream = match accepted {
                Ok((stream, _)) => stream,
                Err(err) => {
                    tracing::warn!(error = %err, "cannot accept an HTTP connection");
                    tokio::select! {
                        _ = stop.cancelled() => break,
                        _ = tokio::time::sleep(ACCEPT_RETRY) => continue,
                    }
                }
            };
            let Ok(permit) = permits.clone().try_acquire_owned() else {
                sorting.retain(|sorted| !sorted.is_cancelled());
                if sorting.len() >= SORTING {
                    if let Some(slowest) = sorting.pop_front() {
                        slowest.cancel();
                    }
                }
                let dropped = CancellationToken::new();
                sorting.push_back(dropped.clone());
                let sorter = Sorter {
                    hosts: self.hosts.clone(),
                    router: router.clone(),
                    reserved: reserved.clone(),
                    header_timeout: self.header_timeout.min(RESERVED_HEADER_WAIT),
                    dropped,
                };
                connections.spawn(sorter.sort(stream, stop.clone()));
                continue;
            };
            let connection = Connection {
                hosts: self.hosts.clone(),
                router: router.clone(),
                header_timeout: self.header_timeout,
                probes_only: false,
                _permit: permit,
            };
            connections.spawn(connection.serve(stream, stop.clone()));
        }
        while connections.join_next().await.is_some() {}
    }
}

/// A connection past the cap, read up to the end of its request head: a probe gets a reserved
/// place (if one is free), anything else 503.
struct Sorter {
    hosts: Arc<Hosts>,
    router: Router,
    reserved: Arc<Semaphore>,
    header_timeout: Duration,
    /// Cancelled to drop the connection (a newer one needs its place), and once it is sorted.
    dropped: CancellationToken,
}

impl Sorter {
    async fn sort(self, mut stream: TcpStream, stop: CancellationToken) {
        let sorted = self.dropped.clone().drop_guard();
        let head = tokio::select! {
            _ = self.dropped.cancelled() => {
                // Not waiting: a full write buffer must not hold a place.
                let _ = stream.try_write(OVER_CAP);
                return;
            }
            _ = stop.cancelled() => return,
            head = tokio::time::timeout(self.header_timeout, read_head(&mut stream)) => head,
        };
        // Its time is up, or it closed: dropped without an answer, as hyper drops them.
        let Ok(Ok(Some(head))) = head else {
            return;
        };
        drop(sorted);
        let permit = match path_of(&head).is_some_and(is_probe) {
            true => self.reserved.try_acquire_owned().ok(),
            false => None,
        };
        let Some(permit) = permit else {
            let _ = stream.try_write(OVER_CAP);
            return;
        };
        let connection = Connection {
            hosts: self.hosts,
            router: self.router,
            header_timeout: self.header_timeout,
            probes_only: true,
            _permit: permit,
        };
        connection.serve(Replayed::new(head, stream), stop).await;
    }
}

/// One accepted connection; it holds its place under the cap until it ends.
struct Connection {
    hosts: Arc<Hosts>,
    router: Router,
    header_timeout: Duration,
    /// A reserved connection, past the cap: it answers one `/healthz` or `/metrics` only.
    probes_only: bool,
    _permit: OwnedSemaphorePermit,
}

impl Connection {
    async fn serve<S: Local>(self, stream: S, stop: CancellationToken) {
        let Ok(local) = stream.local_addr() else {
            return;
        };
        let local = local.ip().to_canonical();
        let (hosts, router) = (self.hosts.clone(), self.router.clone());
        let probes_only = self.probes_only;
        let service = hyper::service::service_fn(move |request: Request<_>| {
            let (hosts, router) = (hosts.clone(), router.clone());
            async move {
                let request = request.map(Body::new);
                let mut response = match hosts.admits(local, &request) {
                    false => misdirected(),
                    true if probes_only && !is_probe(request.uri().path()) => busy(),
                    true => router.oneshot(request).await?,
                };
                harden(&mut response);
                Ok::<_, Infallible>(response)
            }
        });
        let mut builder = hyper::server::conn::http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(self.header_timeout)
            .keep_alive(!self.probes_only);
        let connection = builder.serve_connection(TokioIo::new(stream), service);
        tokio::pin!(connection);
        tokio::select! {
            served = connection.as_mut() => {
                if let Err(err) = served {
                    tracing::debug!(error = %err, "HTTP connection ended");
                }
                return;
            }
            _ = stop.cancelled() => connection.as_mut().graceful_shutdown(),
        }
        let _ = tokio::time::timeout(SHUTDOWN_WAIT, connection).await;
    }
}

/// A connection's stream, as hyper serves it, and the local address it came in on.
trait Local: AsyncRead + AsyncWrite + Unpin + Send + 'static {
    fn local_addr(&self) -> std::io::Result<SocketAddr>;
}

impl Local for TcpStream {
    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        TcpStream::local_addr(self)
    }
}

impl Local for Replayed {
    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.stream().local_addr()
    }
}

/// The host names a listener answers: besides these, the connection's own address, and
/// `localhost` when that is loopback. A page on another name (DNS rebinding makes one point
/// at 127.0.0.1) gets 421 and never a byte of the queues.
/// An `--allow-host` name: `NAME` or `NAME:PORT` (lower case, without the root's trailing
/// dot; an IPv6 address in brackets).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AllowedHost {
    name: String,
    port: Option<u16>,
}

impl AllowedHost {
    /// Parses `NAME` or `NAME:PORT`.
    pub(crate) fn parse(given: &str) -> Result<AllowedHost, String> {
        let (name, port) = host_and_port(given)
            .ok_or_else(|| format!("{given:?} is not a host name, NAME or NAME:PORT"))?;
        Ok(AllowedHost { name, port })
    }

    /// Whether a page of `origin` (an `Origin` header's value, `scheme://host[:port]`) is one
    /// this name allows: http or https, this host, and this port, or the scheme's default port
    /// when none was given. So another service on another port of the same host is not.
    pub(crate) fn allows_origin(&self, origin: &str) -> bool {
        let Some((scheme, authority)) = origin.split_once("://") else {
            return false;
        };
        let default_port = match scheme.to_ascii_lowercase().as_str() {
            "http" => 80,
            "https" => 443,
            _ => return false,
        };
        let Some((name, port)) = host_and_port(authority) else {
            return false;
        };
        name == self.name && port.unwrap_or(default_port) == self.port.unwrap_or(default_port)
    }
}

/// `host[:port]` as compared (see [`normalized`]), or `None` when it is anything else (user
/// info, an empty host, a port that is not a number).
fn host_and_port(authority: &str) -> Option<(String, Option<u16>)> {
    let parsed: Authority = authority.parse().ok()?;
    let host = parsed.host();
    let port = parsed.port_u16();
    let plain = parsed.as_str() == host;
    match !host.is_empty() && !parsed.as_str().contains('@') && (plain || port.is_some()) {
        true => Some((normalized(host), port)),
        false => None,
    }
}

struct Hosts {
    extra: Vec<String>,
}

impl Hosts {
    fn new(names: &[AllowedHost]) -> Hosts {
        let extra = names.iter().map(|allowed| allowed.name.clone()).collect();
        Hosts { extra }
    }

    /// Whether `request`, which came in on the local address `local`, names an allowed host:
    /// its Host header (one, required from HTTP/1.1 on) and the authority of an absolute URI.
    fn admits<B>(&self, local: IpAddr, request: &Request<B>) -> bool {
        let mut given = request.headers().get_all(header::HOST).iter();
        let host = given.next();
        if given.next().is_some() {
            return false;
        }
        let from_uri = request.uri().authority().map(|a| a.host().to_owned());
        let from_header = match host.map(|h| h.to_str().map(str::parse::<Authority>)) {
            Some(Ok(Ok(authority))) => Some(authority.host().to_owned()),
            Some(_) => return false,
            None => None,
        };
        if from_header.is_none() && from_uri.is_none() {
            return request.version() < Version::HTTP_11;
        }
        [from_uri, from_header]
            .iter()
            .flatten()
            .all(|name| self.allows(local, name))
    }

    fn allows(&self, local: IpAddr, name: &str) -> bool {
        let name = normalized(name);
        if let Ok(ip) = name.trim_matches(['[', ']']).parse::<IpAddr>() {
            return ip.to_canonical() == local;
        }
        (name == "localhost" && local.is_loopback()) || self.extra.contains(&name)
    }
}

/// A host name as compared: lower case, without the root's trailing dot.
fn normalized(name: &str) -> String {
    name.trim_end_matches('.').to_ascii_lowercase()
}

/// Whether `path` is `/healthz` or `/metrics` (under any base path).
fn is_probe(path: &str) -> bool {
    path.ends_with("/healthz") || path.ends_with("/metrics")
}

fn busy() -> Response<Body> {
    let mut response = Response::new(Body::from(BUSY));
    *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

fn misdirected() -> Response<Body> {
    let mut response = Response::new(Body::from(
        "this server does not answer for that host name; start it with --allow-host NAME to \
         add one\n",
    ));
    *response.status_mut() = StatusCode::MISDIRECTED_REQUEST;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// Every answer: no content sniffing, never inside a frame (added to a page's own policy).
fn harden(response: &mut Response<Body>) {
    const NO_FRAMES: &str = "frame-ancestors 'none'";
    let headers = response.headers_mut();
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    let policy = match headers
        .get(header::CONTENT_SECURITY_POLICY)
        .and_then(|v| v.to_str().ok())
    {
        Some(own) => format!("{own}; {NO_FRAMES}"),
        None => format!("default-src 'none'; {NO_FRAMES}"),
    };
    if let Ok(policy) = HeaderValue::from_str(&policy) {
        headers.insert(header::CONTENT_SECURITY_POLICY, policy);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(host: Option<&str>, version: Version) -> Request<()> {
        let mut builder = Request::builder().uri("/healthz").version(version);
        if let Some(host) = host {
            builder = builder.header(header::HOST, host);
        }
        builder.body(()).unwrap()
    }

    #[test]
    fn hosts_are_the_address_localhost_and_the_named() {
        let hosts = Hosts::new(&[AllowedHost::parse("Dash.Example.").unwrap()]);
        let loopback: IpAddr = "127.0.0.1".parse().unwrap();
        let admits = |host, local| hosts.admits(local, &request(host, Version::HTTP_11));
        assert!(admits(Some("127.0.0.1:8080"), loopback));
        assert!(admits(Some("localhost:8080"), loopback));
        assert!(admits(Some("LOCALHOST"), loopback));
        assert!(admits(Some("dash.example:80"), loopback));
        assert!(!admits(Some("rebind.example:8080"), loopback));
        assert!(!admits(Some("127.0.0.2:8080"), loopback));
        assert!(!admits(None, loopback));
        let v6: IpAddr = "::1".parse().unwrap();
        assert!(admits(Some("[::1]:8080"), v6));
        let lan: IpAddr = "10.0.0.5".parse().unwrap();
        assert!(admits(Some("10.0.0.5:9464"), lan));
        assert!(!admits(Some("localhost:9464"), lan));
        assert!(hosts.admits(loopback, &request(None, Version::HTTP_10)));
        // A port given with the name is the Origin's business; any port's Host is answered.
        let hosts = Hosts::new(&[AllowedHost::parse("dash.internal:8443").unwrap()]);
        let admits = |host| hosts.admits(loopback, &request(Some(host), Version::HTTP_11));
        assert!(admits("dash.internal:8443"));
        assert!(admits("dash.internal"));
    }

    #[test]
    fn an_allowed_name_allows_pages_of_its_scheme_default_port_or_its_own() {
        let name = AllowedHost::parse("Dash.Example.").unwrap();
        for origin in [
            "https://dash.example",
            "http://dash.example",
            "HTTPS://DASH.EXAMPLE",
            "https://dash.example:443",
            "http://dash.example:80",
            "https://dash.example.",
        ] {
            assert!(name.allows_origin(origin), "{origin}");
        }
        for origin in [
            "https://dash.example:8443",
            "http://dash.example:8080",
            "http://dash.example:443",
            "ftp://dash.example",
            "ws://dash.example",
            "https://evil.example",
            "https://dash.example.evil.example",
            "https://user@dash.example",
            "dash.example",
            "null",
            "https://",
            "https://dash.example:http",
            "https://dash.example:",
        ] {
            assert!(!name.allows_origin(origin), "{origin}");
        }
        let with_port = AllowedHost::parse("dash.internal:8443").unwrap();
        assert!(with_port.allows_origin("https://dash.internal:8443"));
        assert!(with_port.allows_origin("http://dash.internal:8443"));
        assert!(!with_port.allows_origin("https://dash.internal"));
        assert!(!with_port.allows_origin("https://dash.internal:9443"));
        let v6 = AllowedHost::parse("[::1]:8080").unwrap();
        assert!(v6.allows_origin("http://[::1]:8080"));
        assert!(!v6.allows_origin("http://[::1]"));
    }

    #[test]
    fn allowed_names_are_checked_when_given() {
        for bad in [
            "",
            "dash:",
            "dash:http",
            "dash:99999",
            "u@dash",
            "a b",
            "dash/x",
        ] {
            let err = AllowedHost::parse(bad).expect_err(bad);
            assert!(err.contains(&format!("{bad:?}")), "{bad}: {err}");
        }
    }
}
