//! [`Ctx`]: what every command works with, and how it reads values and prints records.

use crate::cli::{Global, ValueArgs};
use crate::codec_choice::Codecs;
use crate::exit::Usage;
use crate::text_codec::{TextCodec, AUTO_WRITES};
use anyhow::Context;
use delayq::fred::clients::Client;
use delayq::{DelayedQueue, ShardedQueue};
use std::io::{Read, Write};

/// What every command works with: the connection, the codecs and the global options.
pub(crate) struct Ctx {
    pub(crate) client: Client,
    pub(crate) codecs: Codecs,
    pub(crate) global: Global,
}

impl Ctx {
    /// The codec of the queue `name` (`--codec-for`, else `--codec`): every command that opens
    /// a queue by name reads and writes its values with this one.
    pub(crate) fn codec(&self, name: &str) -> &TextCodec {
        self.codecs.of(name)
    }

    /// The queue `name` with the global options and no scheduler of its own.
    pub(crate) async fn queue(&self, name: &str) -> delayq::Result<DelayedQueue<TextCodec>> {
        self.queue_builder(name).transfer(false).build().await
    }

    /// The values a command was given for the queue `queue`: the argument, or the content of
    /// --value-file / stdin (`-`), split at NUL bytes with --null-data. A usage error when the
    /// queue's codec is `auto`, which cannot write them.
    pub(crate) fn values(&self, args: &ValueArgs, queue: &str) -> anyhow::Result<Vec<String>> {
        let codec = self.codec(queue);
        if codec.reads_only() {
            return Err(Usage(format!("the queue {queue}: {AUTO_WRITES}")).into());
        }
        let from_stdin = |()| -> anyhow::Result<Vec<u8>> {
            let mut buf = Vec::new();
            std::io::stdin()
                .lock()
                .read_to_end(&mut buf)
                .context("cannot read the value from stdin")?;
            Ok(buf)
        };
        let raw = match (&args.value, &args.value_file) {
            (Some(v), None) if v != "-" => return Ok(vec![v.clone()]),
            (Some(_), None) => from_stdin(())?,
            (None, Some(path)) if path.as_os_str() == "-" => from_stdin(())?,
            (None, Some(path)) => std::fs::read(path)
                .with_context(|| format!("cannot read the value from {}", path.display()))?,
            _ => anyhow::bail!("give the value as an argument or with --value-file"),
        };
        let chunks: Vec<Vec<u8>> = if self.global.null_data {
            let mut parts: Vec<Vec<u8>> = raw.split(|&b| b == 0).map(<[u8]>::to_vec).collect();
            if raw.last() == Some(&0) {
                parts.pop();
            }
            parts
        } else {
            vec![raw]
        };
        chunks
            .into_iter()
            .map(|c| codec.text_of_input(c).map_err(anyhow::Error::from))
            .collect()
    }

    /// Prints one record: `text` and a line break (a NUL with --null-data), or with --json the
    /// JSON object `json` on a line of its own: every command prints objects, never a bare
    /// value (the convention under "JSON output" in docs/cli.md).
    pub(crate) fn print(
        &self,
        out: &mut impl Write,
        text: &str,
        json: impl FnOnce() -> serde_json::Value,
    ) -> std::io::Result<()> {
        if self.global.json {
            let record = json();
            debug_assert!(record.is_object(), "a JSON record is an object: {record}");
            return writeln!(out, "{record}");
        }
        out.write_all(text.as_bytes())?;
        out.write_all(if self.global.null_data { b"\0" } else { b"\n" })
    }

    /// Prints a command's one answer about `queue` (true/false, a count, a handle): the bare
    /// answer as text, `{"queue": QUEUE, FIELD: ANSWER}` with --json.
    pub(crate) fn print_answer<A>(
        &self,
        out: &mut impl Write,
        queue: &str,
        field: &str,
        answer: A,
    ) -> std::io::Result<()>
    where
        A: std::fmt::Display + Into<serde_json::Value>,
    {
        let text = answer.to_string();
        self.print(out, &text, || {
            let mut record = serde_json::json!({ "queue": queue });
            record[field] = answer.into();
            record
        })
    }

    /// The JSON record of a value of `queue`: `{"queue": QUEUE, "value": ...}` with the value in
    /// its JSON form, or `"value_base64"` for the raw bytes of --codec bytes; with --codec auto
    /// also the `codec` and Java `class` recognised.
    pub(crate) fn value_record(&self, queue: &str, value: &str) -> serde_json::Value {
        let mut record = serde_json::json!({ "queue": queue });
        for (field, json) in self.codec(queue).json_fields(value) {
            record[field] = json;
        }
        record
    }

    /// Prints a value taken from `queue` (see [`Ctx::print`]).
    pub(crate) fn print_value(
        &self,
        out: &mut impl Write,
        queue: &str,
        value: &str,
    ) -> std::io::Result<()> {
        self.print(out, value, || self.value_record(queue, value))
    }

    /// The sharded queue `name` of `shards` shards (`previous` before, while that changes)
    /// with the global options and no scheduler.
    pub(crate) async fn sharded(
        &self,
        name: &str,
        shards: usize,
        previous: Option<usize>,
    ) -> delayq::Result<ShardedQueue<TextCodec>> {
        self.sharded_builder(name, shards, previous)
            .transfer(false)
            .build()
            .await
    }

    /// A builder for the sharded queue `name` of `shards` shards (`previous` before, while
    /// that changes) with the global options.
    pub(crate) fn sharded_builder(
        &self,
        name: &str,
        shards: usize,
        previous: Option<usize>,
    ) -> delayq::ShardedQueueBuilder<TextCodec> {
        let builder =
            ShardedQueue::builder(self.client.clone(), name, shards, self.codec(name).clone())
                .options(self.global.options());
        match previous {
            Some(previous) => builder.previous_shards(previous),
            None => builder,
        }
    }

    /// A builder for the queue `name` with the global options (entry format, clock).
    pub(crate) fn queue_builder(&self, name: &str) -> delayq::DelayedQueueBuilder<TextCodec> {
        DelayedQueue::builder(self.client.clone(), name, self.codec(name).clone())
            .options(self.global.options())
    }
}
