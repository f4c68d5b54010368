//! The gateway's Lua scripts (`lua/*.lua`, see `lua/README.md`), each hashed once and called
//! as EVALSHA: Redis compiles a script's source once, not on every call as EVAL makes it do.
//! On NOSCRIPT (the script cache flushed, a restarted or failed-over server) the script is
//! loaded and the call sent once more.

use delayq::fred::clients::Client;
use delayq::fred::prelude::{FromValue, Key, Value};
use delayq::fred::types::scripts::Script;
use std::sync::LazyLock;
use tracing::Instrument;

type RedisResult<T> = Result<T, delayq::fred::error::Error>;

/// One script: its file name under `lua/` and its source, hashed.
#[derive(Debug)]
pub(crate) struct GatewayScript {
    name: &'static str,
    script: Script,
}

impl GatewayScript {
    fn new(name: &'static str, source: &'static str) -> GatewayScript {
        GatewayScript {
            name,
            script: Script::from_lua(source),
        }
    }

    /// Runs the script with `keys` and `args` (EVALSHA, loading it on NOSCRIPT).
    pub(crate) async fn run<R: FromValue>(
        &self,
        client: &Client,
        keys: Vec<Key>,
        args: Vec<Value>,
    ) -> RedisResult<R> {
        let span = tracing::debug_span!("gateway_script", name = self.name);
        self.script
            .evalsha_with_reload(client, keys, args)
            .instrument(span)
            .await
    }
}

macro_rules! gateway_script {
    ($ident:ident, $file:literal) => {
        pub(crate) static $ident: LazyLock<GatewayScript> = LazyLock::new(|| {
            GatewayScript::new(
                $file,
                include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/lua/", $file)),
            )
        });
    };
}

gateway_script!(STORE_PUT, "store_put.lua");
gateway_script!(STORE_RETRY, "store_retry.lua");
gateway_script!(CANCEL_BEGIN, "cancel_begin.lua");
gateway_script!(STORE_UPDATE, "store_update.lua");
gateway_script!(DEDUP_CLAIM, "dedup_claim.lua");
gateway_script!(DEDUP_RELEASE, "dedup_release.lua");
gateway_script!(KEPT_MOVE, "kept_move.lua");
gateway_script!(KEYS_SEED, "keys_seed.lua");
gateway_script!(KEYS_ROTATE, "keys_rotate.lua");
gateway_script!(EVENTS_RECORD, "events_record.lua");
gateway_script!(EVENTS_READ, "events_read.lua");

/// Loads every script (on every primary), so that the first call of each is one EVALSHA.
pub(crate) async fn load_all(client: &Client) -> RedisResult<()> {
    for script in all() {
        script.script.load(client).await?;
    }
    Ok(())
}

/// Every script.
fn all() -> Vec<&'static GatewayScript> {
    vec![
        &STORE_PUT,
        &STORE_RETRY,
        &CANCEL_BEGIN,
        &STORE_UPDATE,
        &DEDUP_CLAIM,
        &DEDUP_RELEASE,
        &KEPT_MOVE,
        &KEYS_SEED,
        &KEYS_ROTATE,
        &EVENTS_RECORD,
        &EVENTS_READ,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each file opens with the header convention of `lua/README.md`, and its hash is the
    /// SHA-1 of the file as sent.
    #[test]
    fn headers_and_hashes() {
        for script in all() {
            let source = script.script.lua().map(|s| s.to_string()).unwrap();
            assert!(
                source.starts_with("-- delayq-gateway: "),
                "{}: no header",
                script.name
            );
            for line in ["-- Not in Redisson.", "-- KEYS[1]: ", "-- Returns: "] {
                assert!(source.contains(line), "{}: no {line:?}", script.name);
            }
            let used = source.matches("KEYS[").count();
            assert!(used > 1, "{}: KEYS declared but unused", script.name);
            assert_eq!(
                script.script.sha1().to_string(),
                delayq::fred::util::sha1_hash(&source),
                "{}",
                script.name
            );
        }
    }
}
