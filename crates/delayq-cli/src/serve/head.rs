//! A request head read before hyper sees the connection: past the connection cap, the listener
//! reads a whole head first to learn whether it is a probe (`/healthz`, `/metrics`), then hands
//! hyper a stream that replays those bytes ahead of the rest.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// The most bytes of a head read this way (a probe's head is a few hundred).
const HEAD_MOST: usize = 8 * 1024;

/// Reads from `stream` until a whole request head (up to the blank line) is in, or
/// [`HEAD_MOST`] bytes are; `None` when the client closed first.
pub(super) async fn read_head(stream: &mut TcpStream) -> io::Result<Option<Vec<u8>>> {
    let mut head = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < HEAD_MOST {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        head.extend_from_slice(&chunk[..n]);
    }
    Ok(Some(head))
}

/// The path of the request line at the start of `head` (`GET /healthz HTTP/1.1`), if it has
/// one.
pub(super) fn path_of(head: &[u8]) -> Option<&str> {
    let line = head.split(|&b| b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?;
    let mut words = line.split(' ');
    let (_method, target) = (words.next()?, words.next()?);
    // An absolute target (`http://host/healthz`) has its path after the authority.
    let path = match target.split_once("://") {
        Some((_, rest)) => rest.find('/').map_or("/", |at| &rest[at..]),
        None => target,
    };
    Some(path.split(['?', '#']).next().unwrap_or(path))
}

/// A connection whose first bytes were read already: they are read again first.
pub(super) struct Replayed {
    head: Vec<u8>,
    at: usize,
    stream: TcpStream,
}

impl Replayed {
    pub(super) fn new(head: Vec<u8>, stream: TcpStream) -> Replayed {
        Replayed {
            head,
            at: 0,
            stream,
        }
    }

    /// The connection under the replayed bytes.
    pub(super) fn stream(&self) -> &TcpStream {
        &self.stream
    }
}

impl AsyncRead for Replayed {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.at < this.head.len() {
            let left = &this.head[this.at..];
            let n = left.len().min(buf.remaining());
            buf.put_slice(&left[..n]);
            this.at += n;
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Replayed {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_path_of_a_request_line() {
        assert_eq!(path_of(b"GET /healthz HTTP/1.1\r\n"), Some("/healthz"));
        assert_eq!(
            path_of(b"GET /base/metrics?x=1 HTTP/1.1\r\n"),
            Some("/base/metrics")
        );
        assert_eq!(
            path_of(b"GET http://127.0.0.1:9/healthz HTTP/1.1\r\n"),
            Some("/healthz")
        );
        assert_eq!(path_of(b"GET"), None);
    }
}
