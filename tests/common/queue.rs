//! Queue helpers of the tests: raw Redis access through fred (to see exactly what the queue
//! left on the server), small builders, the current time.

#![allow(dead_code, unreachable_pub)]

use bytes::Bytes;
use delayq::codec::{Codec, StringCodec};
use delayq::{DelayedQueue, EntryFormat};
use fred::clients::Client;
use fred::interfaces::{
    ClientLike, EventInterface, HashesInterface, ListInterface, LuaInterface, PubsubInterface,
};
use fred::prelude::Value;
use std::time::Duration;

/// `v` as an owned `String` (for lists of string values).
pub fn s(v: &str) -> String {
    v.to_owned()
}

/// A connected client (delayq's own connect, so the reconnect policy is the real one).
pub async fn connect(url: &str) -> Client {
    delayq::connect(url)
        .await
        .unwrap_or_else(|e| panic!("connect {url}: {e}"))
}

/// A string queue without a scheduler, so the test decides when transfers happen.
pub async fn manual_queue(client: &Client, name: &str) -> DelayedQueue<StringCodec> {
    manual_queue_with(client, name, StringCodec, EntryFormat::Current).await
}

/// A queue of any codec and format without a scheduler.
pub async fn manual_queue_with<C: Codec>(
    client: &Client,
    name: &str,
    codec: C,
    format: EntryFormat,
) -> DelayedQueue<C> {
    DelayedQueue::builder(client.clone(), name, codec)
        .options(delayq::QueueOptions::default().format(format))
        .transfer(false)
        .build()
        .await
        .expect("build queue")
}

/// Runs one raw command and returns its reply.
pub async fn cmd(client: &Client, name: &'static str, args: Vec<Value>) -> Value {
    try_cmd(client, name, args)
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Runs one raw command.
pub async fn try_cmd(
    client: &Client,
    name: &'static str,
    args: Vec<Value>,
) -> Result<Value, fred::error::Error> {
    client
        .custom::<Value, Value>(
            fred::types::CustomCommand::new_static(name, fred::types::ClusterHash::FirstKey, false),
            args,
        )
        .await
}

/// A string or byte argument.
pub fn arg(v: impl AsRef<[u8]>) -> Value {
    Value::Bytes(Bytes::copy_from_slice(v.as_ref()))
}

fn to_bytes(v: Value) -> Bytes {
    match v {
        Value::Bytes(b) => b,
        Value::String(s) => s.into_inner(),
        Value::Integer(i) => Bytes::from(i.to_string()),
        other => panic!("not a bulk string: {other:?}"),
    }
}

fn to_items(v: Value) -> Vec<Value> {
    match v {
        Value::Array(items) => items,
        Value::Null => Vec::new(),
        other => panic!("not an array: {other:?}"),
    }
}

/// LRANGE key 0 -1, raw bytes.
pub async fn list(client: &Client, key: &str) -> Vec<Bytes> {
    let reply = cmd(client, "LRANGE", vec![arg(key), arg("0"), arg("-1")]).await;
    to_items(reply).into_iter().map(to_bytes).collect()
}

/// LRANGE key 0 -1 as UTF-8 strings.
pub async fn list_str(client: &Client, key: &str) -> Vec<String> {
    list(client, key)
        .await
        .into_iter()
        .map(|b| String::from_utf8(b.to_vec()).expect("utf-8 list item"))
        .collect()
}

/// ZRANGE key 0 -1 WITHSCORES, raw members with integer scores.
pub async fn zset(client: &Client, key: &str) -> Vec<(Bytes, i64)> {
    let reply = cmd(
        client,
        "ZRANGE",
        vec![arg(key), arg("0"), arg("-1"), arg("WITHSCORES")],
    )
    .await;
    let mut out = Vec::new();
    let mut items = to_items(reply).into_iter();
    while let (Some(member), Some(score)) = (items.next(), items.next()) {
        let score = match score {
            Value::Double(f) => f as i64,
            other => {
                let text = String::from_utf8(to_bytes(other).to_vec()).expect("score text");
                text.parse::<f64>().expect("numeric score") as i64
            }
        };
        out.push((to_bytes(member), score));
    }
    out
}

/// An integer reply (LLEN, ZCARD, PTTL, EXISTS, ...).
pub async fn int(client: &Client, name: &'static str, key: &str) -> i64 {
    match cmd(client, name, vec![arg(key)]).await {
        Value::Integer(i) => i,
        other => panic!("{name} {key}: {other:?}"),
    }
}

/// `TYPE key` as text.
pub async fn key_type(client: &Client, key: &str) -> String {
    match cmd(client, "TYPE", vec![arg(key)]).await {
        Value::String(s) => s.to_string(),
        Value::Bytes(b) => String::from_utf8_lossy(&b).into_owned(),
        other => panic!("TYPE {key}: {other:?}"),
    }
}

/// ZADD + RPUSH of a raw entry, as a peer (Java or a broken one) would leave it.
pub async fn push_raw_entry(client: &Client, timeout: &str, order: &str, entry: &[u8], due: i64) {
    cmd(
        client,
        "ZADD",
        vec![arg(timeout), arg(due.to_string()), arg(entry)],
    )
    .await;
    cmd(client, "RPUSH", vec![arg(order), arg(entry)]).await;
}

/// Appends `entries` pending current-format entries in one script, due far in the future in
/// list order: entry i (numbered from `first`; its id is i in 8 decimal digits) carries
/// `filler-i`, or the value `marked` gives it.
pub async fn fill_pending(
    client: &Client,
    keys: &delayq::QueueKeys,
    (first, entries): (i64, i64),
    marked: &[(i64, &str)],
) {
    let script = r#"
        local first, n = tonumber(ARGV[1]), tonumber(ARGV[2])
        local marked = {}
        for i = 3, #ARGV, 2 do
            marked[tonumber(ARGV[i])] = ARGV[i + 1]
        end
        local batch, scores = {}, {}
        for i = first, first + n - 1 do
            local v = marked[i] or ('filler-' .. i)
            local entry = struct.pack('Bc0Lc0', 8, string.format('%08d', i), #v, v)
            batch[#batch + 1] = entry
            scores[#scores + 1] = 4000000000000 + i
            scores[#scores + 1] = entry
            if #batch == 500 or i == first + n - 1 then
                redis.call('rpush', KEYS[2], unpack(batch))
                redis.call('zadd', KEYS[1], unpack(scores))
                batch, scores = {}, {}
            end
        end
        return n
    "#;
    let mut args = vec![first.to_string(), entries.to_string()];
    for (at, value) in marked {
        args.push(at.to_string());
        args.push((*value).to_owned());
    }
    let _: i64 = client
        .eval(script, vec![keys.timeout(), keys.order()], args)
        .await
        .unwrap_or_else(|e| panic!("fill: {e}"));
}

/// Whether the value index covers the whole order list: its tail entry has a record.
pub async fn index_complete(client: &Client, keys: &delayq::QueueKeys) -> bool {
    let tail: Option<Vec<u8>> = client.lindex(keys.order(), -1).await.unwrap();
    let Some(tail) = tail else { return false };
    let mut field = b"i".to_vec();
    field.extend_from_slice(&tail[..9]);
    let record: Option<Vec<u8>> = client.hget(keys.values(), field.as_slice()).await.unwrap();
    record.is_some_and(|r| r.windows(tail.len()).any(|w| w == tail.as_slice()))
}

/// Looks values up until the index covers the whole order list.
pub async fn build_index(client: &Client, queue: &DelayedQueue<StringCodec>) {
    let keys = queue.keys().clone();
    let built = eventually(crate::common::PATIENCE, || async {
        queue.contains("nobody-has-this").await.unwrap();
        index_complete(client, &keys).await
    })
    .await;
    assert!(built, "the value index was never completed");
}

pub use delayq::time::now_ms;

/// Splits a current-format entry into (id, value), checking its layout byte by byte.
pub fn split_current(entry: &[u8]) -> (&[u8], &[u8]) {
    assert!(entry.len() >= 17, "entry too short: {entry:?}");
    assert_eq!(entry[0], 8, "id length byte");
    let len = u64::from_le_bytes(entry[9..17].try_into().expect("8 bytes"));
    assert_eq!(len as usize, entry.len() - 17, "length field of {entry:?}");
    (&entry[1..9], &entry[17..])
}

/// A separate subscriber on `channel`, collecting message payloads as text.
pub struct ChannelSpy {
    client: Client,
    channel: String,
    rx: tokio::sync::mpsc::UnboundedReceiver<String>,
}

impl ChannelSpy {
    /// Subscribes a new client (made from `like`'s config) to `channel`.
    pub async fn start(like: &Client, channel: &str) -> ChannelSpy {
        let client = like.clone_new();
        client.init().await.expect("spy init");
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let wanted = channel.to_owned();
        let mut messages = client.message_rx();
        tokio::spawn(async move {
            while let Ok(message) = messages.recv().await {
                if message.channel == wanted.as_str() {
                    let text = message.value.as_string().unwrap_or_default();
                    if tx.send(text).is_err() {
                        break;
                    }
                }
            }
        });
        client.subscribe(channel).await.expect("spy subscribe");
        ChannelSpy {
            client,
            channel: channel.to_owned(),
            rx,
        }
    }

    /// Every payload published on the channel before this call, and nothing published after:
    /// publishes a marker from `client` and collects until the marker arrives. The server
    /// delivers a channel's messages in the order they were published, so this tells "no
    /// message" from "a message still on its way" without guessing how long to wait.
    pub async fn settle(&mut self, client: &Client) -> Vec<String> {
        let marker = super::unique_name("spy-marker");
        let _: i64 = client
            .publish(self.channel.as_str(), marker.as_str())
            .await
            .expect("publish the marker");
        let mut out = Vec::new();
        loop {
            match tokio::time::timeout(super::PATIENCE, self.rx.recv()).await {
                Ok(Some(m)) if m == marker => return out,
                Ok(Some(m)) => out.push(m),
                other => panic!("the marker never came back on {}: {other:?}", self.channel),
            }
        }
    }

    /// Unsubscribes and closes the connection.
    pub async fn stop(self) {
        let _ = self.client.quit().await;
    }
}

/// Polls `check` every 20 ms until it is true or `timeout` passes; returns whether it became true.
pub async fn eventually<F, Fut>(timeout: Duration, mut check: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if check().await {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A queue of values as bytes, without a scheduler, for tests that fire its schedules
/// themselves (`queue.schedules().fire_due(..)`) by the instant they choose.
pub async fn bytes_queue(
    client: &Client,
    name: impl Into<String>,
    options: delayq::QueueOptions,
) -> DelayedQueue<delayq::codec::ByteArrayCodec> {
    DelayedQueue::builder(client.clone(), name, delayq::codec::ByteArrayCodec)
        .options(options)
        .transfer(false)
        .build()
        .await
        .expect("a queue without a scheduler builds")
}
