//! The HTTP sides of the gateway phase, on hyper: [`Conn`], one keep-alive connection to the
//! gateway that publishes and cancels, and [`Receiver`], the loopback destination that answers
//! every delivery 200 and records when it came.
//!
//! A publish's body is `SENT_US DUE_US ` and padding: when it was sent and when it is due
//! (epoch µs, this machine's clock), which the receiver reads back.

use crate::redis::{now_us, BoxResult};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper::{header, Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};

/// One keep-alive HTTP/1.1 connection to the gateway, with its token. The connection's task
/// is aborted when the value is dropped.
pub(crate) struct Conn {
    send: SendRequest<Full<Bytes>>,
    driver: JoinHandle<()>,
    host: String,
    bearer: String,
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.driver.abort();
    }
}

/// What the gateway answered a publish.
pub(crate) struct Published {
    pub(crate) id: String,
}

impl Conn {
    pub(crate) async fn open(gateway: SocketAddr, token: &str) -> BoxResult<Conn> {
        let stream = TcpStream::connect(gateway).await?;
        stream.set_nodelay(true)?;
        let (send, connection) =
            hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
        let driver = tokio::spawn(async move {
            // Ends when the gateway closes the connection or the Conn is dropped.
            let _ = connection.await;
        });
        Ok(Conn {
            send,
            driver,
            host: gateway.to_string(),
            bearer: format!("Bearer {token}"),
        })
    }

    async fn request(
        &mut self,
        method: Method,
        path: &str,
        headers: &[(&str, String)],
        body: Bytes,
    ) -> BoxResult<(StatusCode, Bytes)> {
        let mut request = Request::builder()
            .method(method)
            .uri(path)
            .header(header::HOST, &self.host)
            .header(header::AUTHORIZATION, &self.bearer);
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        let request = request.body(Full::new(body))?;
        self.send.ready().await?;
        let response = self.send.send_request(request).await?;
        let status = response.status();
        let body = response.into_body().collect().await?.to_bytes();
        Ok((status, body))
    }

    /// `POST /v2/publish/{destination}` of `body` with `Upstash-Delay: delay_secs`; anything but
    /// 201 fails the phase.
    pub(crate) async fn publish(
        &mut self,
        destination: &str,
        delay_secs: u64,
        body: Bytes,
    ) -> BoxResult<Published> {
        let path = format!("/v2/publish/{destination}");
        let headers = [
            ("upstash-delay", format!("{delay_secs}s")),
            ("content-type", "text/plain".to_owned()),
        ];
        let (status, answer) = self.request(Method::POST, &path, &headers, body).await?;
        if status != StatusCode::CREATED {
            return Err(format!(
                "publish answered {status}: {}",
                String::from_utf8_lossy(&answer)
            )
            .into());
        }
        let answer: serde_json::Value = serde_json::from_slice(&answer)?;
        let id = answer["messageId"]
            .as_str()
            .ok_or_else(|| format!("publish answer without messageId: {answer}"))?;
        Ok(Published { id: id.to_owned() })
    }

    /// Whether `GET /healthz` answers 200.
    pub(crate) async fn healthy(&mut self) -> bool {
        let answer = self
            .request(Method::GET, "/healthz", &[], Bytes::new())
            .await;
        matches!(answer, Ok((StatusCode::OK, _)))
    }

    /// `DELETE /v2/messages/{id}`; anything but 200 fails the phase.
    pub(crate) async fn cancel(&mut self, id: &str) -> BoxResult<()> {
        let path = format!("/v2/messages/{id}");
        let (status, answer) = self
            .request(Method::DELETE, &path, &[], Bytes::new())
            .await?;
        if status != StatusCode::OK {
            return Err(format!(
                "cancel of {id} answered {status}: {}",
                String::from_utf8_lossy(&answer)
            )
            .into());
        }
        Ok(())
    }
}

/// A publish's body of `len` bytes (at least the two stamps): sent now, due `delay` later.
pub(crate) fn stamped_body(len: usize, delay: Duration) -> Bytes {
    let sent = now_us();
    let due = sent + delay.as_micros() as i64;
    let mut body = format!("{sent} {due} ").into_bytes();
    body.resize(len.max(body.len()), b'x');
    Bytes::from(body)
}

/// One delivery the receiver answered.
#[derive(Debug, Clone)]
pub(crate) struct Delivery {
    pub(crate) message_id: String,
    /// When it arrived (epoch µs).
    pub(crate) received_us: i64,
    /// When its publish was sent, and when it was due (epoch µs), from its body.
    pub(crate) sent_us: i64,
    pub(crate) due_us: i64,
}

#[derive(Default)]
struct Record {
    deliveries: Mutex<Vec<Delivery>>,
    count: AtomicU64,
    /// Requests that were not a signed delivery of a stamped body.
    malformed: AtomicU64,
}

/// The loopback destination: a hyper server answering every request 200 at once, recording
/// each delivery. Its tasks end with [`shutdown`](Self::shutdown) (or when dropped).
pub(crate) struct Receiver {
    pub(crate) addr: SocketAddr,
    record: Arc<Record>,
    tasks: JoinSet<()>,
}

impl Receiver {
    pub(crate) async fn start() -> BoxResult<Receiver> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let record = Arc::new(Record::default());
        let mut tasks = JoinSet::new();
        let accepting = record.clone();
        tasks.spawn(async move {
            // The connections are tasks of this task's own set: aborting it drops them all.
            let mut connections = JoinSet::new();
            while let Ok((stream, _)) = listener.accept().await {
                let _ = stream.set_nodelay(true);
                let record = accepting.clone();
                connections.spawn(async move {
                    let service = hyper::service::service_fn(move |request| {
                        let record = record.clone();
                        async move { Ok::<_, Infallible>(answer(&record, request).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .keep_alive(true)
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
                // Reap the connections that ended.
                while connections.try_join_next().is_some() {}
            }
        });
        Ok(Receiver {
            addr,
            record,
            tasks,
        })
    }

    /// The destination URL prefix (and the gateway's allow-list entry).
    pub(crate) fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    pub(crate) fn count(&self) -> u64 {
        self.record.count.load(Ordering::Relaxed)
    }

    pub(crate) fn malformed(&self) -> u64 {
        self.record.malformed.load(Ordering::Relaxed)
    }

    /// The deliveries so far, leaving none.
    pub(crate) fn take(&self) -> Vec<Delivery> {
        let mut deliveries = self
            .record
            .deliveries
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        self.record.count.store(0, Ordering::Relaxed);
        std::mem::take(&mut *deliveries)
    }

    pub(crate) async fn shutdown(mut self) {
        self.tasks.shutdown().await;
    }
}

async fn answer(record: &Record, request: Request<Incoming>) -> Response<Full<Bytes>> {
    let received_us = now_us();
    let message_id = request
        .headers()
        .get("upstash-message-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let signed = request.headers().contains_key("upstash-signature");
    let body = request.into_body().collect().await.map(|b| b.to_bytes());
    let stamps = body.ok().and_then(|body| {
        let text = std::str::from_utf8(body.get(..64.min(body.len()))?).ok()?;
        let mut words = text.split(' ');
        Some((words.next()?.parse().ok()?, words.next()?.parse().ok()?))
    });
    match (message_id, stamps, signed) {
        (Some(message_id), Some((sent_us, due_us)), true) => {
            let delivery = Delivery {
                message_id,
                received_us,
                sent_us,
                due_us,
            };
            // Counted under the lock, so that `take` never sees the count and the list apart.
            let mut deliveries = record.deliveries.lock().unwrap_or_else(|e| e.into_inner());
            deliveries.push(delivery);
            record.count.fetch_add(1, Ordering::Relaxed);
        }
        _ => {
            record.malformed.fetch_add(1, Ordering::Relaxed);
        }
    }
    Response::new(Full::new(Bytes::from_static(b"ok")))
}
