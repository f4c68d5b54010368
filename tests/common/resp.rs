//! A tiny blocking RESP2 client for the harness's own polling and admin work.
//!
//! It opens one short-lived connection per call, which is plenty for readiness checks,
//! `CLUSTER` / `SENTINEL` bookkeeping and binary-safe `MIGRATE`. Tests talk to Redis through
//! fred (the code under test) or `cli()`, not through this module.

use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// One RESP2 reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// `+OK`
    Status(String),
    /// `-ERR ...`
    Error(String),
    /// `:42`
    Int(i64),
    /// `$n` bulk string; `None` for the nil bulk `$-1`.
    Bulk(Option<Vec<u8>>),
    /// `*n` array; `None` for the nil array `*-1`.
    Array(Option<Vec<Reply>>),
}

impl Reply {
    /// The reply as text (status, bulk or integer), or `None` for errors, nils and arrays.
    pub fn text(&self) -> Option<String> {
        match self {
            Reply::Status(s) => Some(s.clone()),
            Reply::Bulk(Some(b)) => Some(String::from_utf8_lossy(b).into_owned()),
            Reply::Int(i) => Some(i.to_string()),
            _ => None,
        }
    }

    /// The elements of an array reply (an empty slice for anything else).
    pub fn items(&self) -> &[Reply] {
        match self {
            Reply::Array(Some(items)) => items,
            _ => &[],
        }
    }
}

const IO_TIMEOUT: Duration = Duration::from_secs(5);

/// Passwords of harness-owned servers by (plaintext) port: calls to those ports send `AUTH`
/// first. Ports are unique within a test binary (see `process::pick_port`).
fn passwords() -> &'static Mutex<HashMap<u16, String>> {
    static PASSWORDS: OnceLock<Mutex<HashMap<u16, String>>> = OnceLock::new();
    PASSWORDS.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Makes [`call`] authenticate to `port` with `password` (or stop doing so, for `None`).
pub fn set_password(port: u16, password: Option<&str>) {
    let mut map = passwords().lock().unwrap_or_else(|e| e.into_inner());
    match password {
        Some(password) => map.insert(port, password.to_string()),
        None => map.remove(&port),
    };
}

/// The password [`call`] uses for `port`, if any.
pub fn password(port: u16) -> Option<String> {
    let map = passwords().lock().unwrap_or_else(|e| e.into_inner());
    map.get(&port).cloned()
}

fn encode<A: AsRef<[u8]>>(args: &[A], request: &mut Vec<u8>) {
    request.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for arg in args {
        let arg = arg.as_ref();
        request.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        request.extend_from_slice(arg);
        request.extend_from_slice(b"\r\n");
    }
}

/// Sends one command to `127.0.0.1:port` on a fresh connection and reads one reply.
/// Redis error replies come back as `Ok(Reply::Error(..))`; `Err` is for I/O and protocol trouble.
pub fn call<A: AsRef<[u8]>>(port: u16, args: &[A]) -> io::Result<Reply> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let stream = TcpStream::connect_timeout(&addr, IO_TIMEOUT)?;
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    stream.set_nodelay(true)?;

    let mut request = Vec::new();
    let password = password(port);
    if let Some(password) = &password {
        encode(&["AUTH", password.as_str()], &mut request);
    }
    encode(args, &mut request);
    (&stream).write_all(&request)?;
    let mut reader = BufReader::new(&stream);
    if password.is_some() {
        if let reply @ Reply::Error(_) = read_reply(&mut reader)? {
            return Ok(reply);
        }
    }
    read_reply(&mut reader)
}

/// Like [`call`], but any failure (I/O or a Redis error reply) becomes a message.
pub fn call_ok<A: AsRef<[u8]>>(port: u16, args: &[A]) -> Result<Reply, String> {
    match call(port, args) {
        Ok(Reply::Error(e)) => Err(format!("port {port}: {} -> {e}", describe(args))),
        Ok(reply) => Ok(reply),
        Err(e) => Err(format!("port {port}: {} -> I/O error: {e}", describe(args))),
    }
}

/// Runs a command whose reply is text (e.g. `INFO`, `CLUSTER NODES`) and returns that text.
pub fn call_text<A: AsRef<[u8]>>(port: u16, args: &[A]) -> Result<String, String> {
    let reply = call_ok(port, args)?;
    reply.text().ok_or_else(|| {
        format!(
            "port {port}: {} -> unexpected reply {reply:?}",
            describe(args)
        )
    })
}

/// Finds `field:value` in `INFO`-style text (`key:value` per line).
pub fn info_field(info: &str, field: &str) -> Option<String> {
    info.lines().find_map(|line| {
        let (key, value) = line.trim_end().split_once(':')?;
        (key == field).then(|| value.to_string())
    })
}

fn describe<A: AsRef<[u8]>>(args: &[A]) -> String {
    args.iter()
        .map(|a| String::from_utf8_lossy(a.as_ref()).into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

fn protocol_error(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

fn read_line<R: BufRead>(r: &mut R) -> io::Result<String> {
    let mut line = Vec::new();
    r.read_until(b'\n', &mut line)?;
    if !line.ends_with(b"\r\n") {
        return Err(protocol_error(format!(
            "connection closed or bad line: {:?}",
            String::from_utf8_lossy(&line)
        )));
    }
    line.truncate(line.len() - 2);
    String::from_utf8(line).map_err(|e| protocol_error(e.to_string()))
}

fn parse_len(s: &str) -> io::Result<i64> {
    s.parse::<i64>()
        .map_err(|_| protocol_error(format!("bad length {s:?}")))
}

fn read_reply<R: BufRead>(r: &mut R) -> io::Result<Reply> {
    let line = read_line(r)?;
    let (kind, rest) = line.split_at(line.len().min(1));
    match kind {
        "+" => Ok(Reply::Status(rest.to_string())),
        "-" => Ok(Reply::Error(rest.to_string())),
        ":" => Ok(Reply::Int(parse_len(rest)?)),
        "$" => {
            let len = parse_len(rest)?;
            if len < 0 {
                return Ok(Reply::Bulk(None));
            }
            let len = usize::try_from(len).map_err(|e| protocol_error(e.to_string()))?;
            let mut buf = vec![0; len + 2];
            r.read_exact(&mut buf)?;
            if !buf.ends_with(b"\r\n") {
                return Err(protocol_error("bulk string not terminated by CRLF".into()));
            }
            buf.truncate(len);
            Ok(Reply::Bulk(Some(buf)))
        }
        "*" => {
            let len = parse_len(rest)?;
            if len < 0 {
                return Ok(Reply::Array(None));
            }
            let items = (0..len)
                .map(|_| read_reply(r))
                .collect::<io::Result<Vec<_>>>()?;
            Ok(Reply::Array(Some(items)))
        }
        _ => Err(protocol_error(format!("unknown reply type in {line:?}"))),
    }
}
