//! The Lua scripts under `lua/`, run by EVALSHA with one NOSCRIPT fallback.

use fred::interfaces::LuaInterface;
use fred::prelude::{Error as FredError, FromValue, Key, Value};
use std::sync::LazyLock;
use tracing::Instrument;

/// One script: its file name, full source and SHA-1.
#[derive(Debug)]
pub(crate) struct LuaScript {
    name: &'static str,
    source: &'static str,
    sha1: String,
}

impl LuaScript {
    fn new(name: &'static str, source: &'static str) -> LuaScript {
        LuaScript {
            name,
            source,
            sha1: fred::util::sha1_hash(source),
        }
    }

    /// The file name under `lua/`.
    pub(crate) fn name(&self) -> &'static str {
        self.name
    }

    /// The script's SHA-1, as EVALSHA wants it.
    #[cfg(test)]
    pub(crate) fn sha1(&self) -> &str {
        &self.sha1
    }

    /// Runs the script: EVALSHA, and on NOSCRIPT (script cache flushed, new or failed-over node)
    /// SCRIPT LOAD on every primary, then EVALSHA exactly once more.
    ///
    /// While a Cluster slot migrates, Redis refuses a call it did not run (`MOVED`/`ASK`
    /// redirections beyond the client's limit, `TRYAGAIN` when the keys are split between the
    /// two nodes); such a call is sent again after a short wait, for up to ~5 s. Clients from
    /// [`crate::connect`] do not follow redirections themselves (see there), so every redirection
    /// lands here.
    pub(crate) async fn run<R, C>(
        &self,
        client: &C,
        keys: Vec<Key>,
        args: Vec<Value>,
    ) -> Result<R, FredError>
    where
        R: FromValue,
        C: LuaInterface + Sync,
    {
        crate::connect::resend_refused(self.name, || self.run_once(client, &keys, &args)).await
    }

    /// One EVALSHA (plus the NOSCRIPT reload); keys and arguments are copied per command sent.
    async fn run_once<R, C>(&self, client: &C, keys: &[Key], args: &[Value]) -> Result<R, FredError>
    where
        R: FromValue,
        C: LuaInterface + Sync,
    {
        let span = tracing::debug_span!("script", name = self.name, keys = keys.len());
        async {
            match client
                .evalsha::<R, _, _, _>(self.sha1.as_str(), keys.to_vec(), args.to_vec())
                .await
            {
                Err(err) if is_noscript(&err) => {
                    tracing::debug!(script = self.name, "NOSCRIPT; loading the script");
                    let _: Value = client.script_load_cluster(self.source).await?;
                    client
                        .evalsha(self.sha1.as_str(), keys.to_vec(), args.to_vec())
                        .await
                }
                other => other,
            }
        }
        .instrument(span)
        .await
    }
}

impl LuaScript {
    /// Runs the script for the queue `queue` on `keys`, with the crate's error mapping
    /// (`WRONGTYPE` as [`crate::Error::WrongType`], script errors named after the file).
    pub(crate) async fn call<R, C>(
        &self,
        client: &C,
        queue: &str,
        keys: &[&str],
        args: Vec<Value>,
    ) -> crate::Result<R>
    where
        R: FromValue,
        C: LuaInterface + Sync,
    {
        let keys = keys.iter().map(|k| (*k).into()).collect();
        self.run(client, keys, args)
            .await
            .map_err(|e| crate::Error::from_script(self.name, queue, e))
    }
}

/// fred has no NOSCRIPT error kind; Redis's reply starts with the code.
fn is_noscript(err: &FredError) -> bool {
    err.details().starts_with("NOSCRIPT")
}

macro_rules! script {
    ($ident:ident, $file:literal) => {
        pub(crate) static $ident: LazyLock<LuaScript> =
            LazyLock::new(|| LuaScript::new($file, include_str!(concat!("../lua/", $file))));
    };
    ($ident:ident, $file:literal, with_entry_prelude) => {
        pub(crate) static $ident: LazyLock<LuaScript> = LazyLock::new(|| {
            LuaScript::new(
                $file,
                concat!(
                    include_str!("../lua/lib/entry.lua"),
                    include_str!(concat!("../lua/", $file))
                ),
            )
        });
    };
    ($ident:ident, $file:literal, with_reliable_prelude) => {
        pub(crate) static $ident: LazyLock<LuaScript> = LazyLock::new(|| {
            LuaScript::new(
                $file,
                concat!(
                    include_str!("../lua/lib/entry.lua"),
                    include_str!("../lua/lib/reliable.lua"),
                    include_str!(concat!("../lua/", $file))
                ),
            )
        });
    };
}

script!(OFFER, "offer.lua", with_entry_prelude);
script!(TRANSFER, "transfer.lua", with_entry_prelude);
script!(REMOVE, "remove.lua", with_entry_prelude);
script!(CONTAINS, "contains.lua", with_entry_prelude);
script!(POLL, "poll.lua", with_entry_prelude);
script!(
    POLL_LAST_OFFER_FIRST,
    "poll_last_offer_first.lua",
    with_entry_prelude
);
script!(EXPIRE, "expire.lua");
script!(PENDING, "pending.lua");
script!(STATS, "stats.lua");

// The reliable consumer, retries, dead letters and reschedule (src/reliable).
script!(TAKE, "take.lua", with_reliable_prelude);
script!(ACK, "ack.lua", with_reliable_prelude);
script!(NACK, "nack.lua", with_reliable_prelude);
script!(DEAD, "dead.lua", with_reliable_prelude);
script!(EXTEND, "extend.lua", with_reliable_prelude);
script!(REAP, "reap.lua", with_reliable_prelude);
script!(RESCHEDULE, "reschedule.lua", with_reliable_prelude);
script!(OFFER_UNIQUE, "offer_unique.lua", with_reliable_prelude);
script!(DEAD_REPLAY, "dead_replay.lua", with_reliable_prelude);
script!(RELIABLE_STATS, "reliable_stats.lua", with_reliable_prelude);
script!(PURGE_LIST, "purge_list.lua");
script!(UNCLAIM, "unclaim.lua", with_reliable_prelude);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_script_is_hashed_from_its_full_source() {
        for script in [
            &*OFFER,
            &*TRANSFER,
            &*REMOVE,
            &*CONTAINS,
            &*POLL,
            &*POLL_LAST_OFFER_FIRST,
            &*EXPIRE,
            &*PENDING,
            &*STATS,
            &*TAKE,
            &*ACK,
            &*NACK,
            &*DEAD,
            &*EXTEND,
            &*REAP,
            &*RESCHEDULE,
            &*OFFER_UNIQUE,
            &*DEAD_REPLAY,
            &*RELIABLE_STATS,
            &*PURGE_LIST,
            &*UNCLAIM,
        ] {
            assert_eq!(script.sha1().len(), 40, "{}", script.name());
            assert_eq!(script.sha1(), fred::util::sha1_hash(script.source));
            assert!(script.source.contains("-- KEYS[1]"), "{}", script.name());
        }
        assert!(TRANSFER.source.starts_with("-- delayq: shared prelude"));
    }
}
