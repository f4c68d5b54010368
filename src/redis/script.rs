//! The Lua scripts under `lua/`: how a script is assembled, and the one way to call it.
//!
//! Every script is sent as one source: the shared helpers of `lua/lib/` that it uses (time,
//! key-type guard, entry packing, adding entries, the value index, settling), then a guard call
//! that checks the type of every key the script declares before anything runs, then the script's
//! own file. A helper file is left out when neither the script nor another helper it includes
//! calls anything the file defines: Redis runs a script's whole source on every call, and the
//! unused helpers cost an offer about a quarter of its server time. Its keys are declared
//! once, in Rust, as [`KeyRole`]s next to the call that uses it (`src/redis/ops/<script>.rs`);
//! the guard's expected types and the KEYS list of every call are built from those roles, and a
//! unit test checks them against the `-- KEYS[i]` lines of the script's header.
//!
//! Calls go through EVALSHA; on NOSCRIPT (script cache flushed, new or failed-over node) the
//! script is loaded on every primary and sent exactly once more. Every call's first two
//! arguments are the current time ([`Now`]) and the queue's [`EntryFormat`](crate::EntryFormat); see `lua/README.md`.

use crate::error::{classify, ReplyKind};
use crate::keys::{KeyRole, QueueKeys};
use crate::options::QueueOptions;
use crate::{Error, Result};
use fred::interfaces::LuaInterface;
use fred::prelude::{Error as FredError, FromValue, Key, Value};
use tracing::Instrument;

/// The helpers a script may start with, in order: a file only calls helpers defined above it.
/// Each is named by its file's stem, as a script's `-- Helpers:` header line names it.
const PRELUDE: [(&str, &str); 13] = [
    ("time", include_str!("../../lua/lib/time.lua")),
    ("guard", include_str!("../../lua/lib/guard.lua")),
    ("entry", include_str!("../../lua/lib/entry.lua")),
    ("queue", include_str!("../../lua/lib/queue.lua")),
    ("position", include_str!("../../lua/lib/position.lua")),
    (
        "values_field",
        include_str!("../../lua/lib/values_field.lua"),
    ),
    (
        "values_record",
        include_str!("../../lua/lib/values_record.lua"),
    ),
    ("values_sync", include_str!("../../lua/lib/values_sync.lua")),
    (
        "values_lookup",
        include_str!("../../lua/lib/values_lookup.lua"),
    ),
    ("values_step", include_str!("../../lua/lib/values_step.lua")),
    ("settle", include_str!("../../lua/lib/settle.lua")),
    ("item", include_str!("../../lua/lib/item.lua")),
    ("limit", include_str!("../../lua/lib/limit.lua")),
];

/// What every call of one queue's scripts needs: its keys, and its options (the entry format it
/// writes and prefers to read, whose clock says what time it is).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct QueueSpec {
    pub(crate) keys: QueueKeys,
    pub(crate) options: QueueOptions,
}

impl QueueSpec {
    /// The queue `name` with `options`.
    pub(crate) fn new(name: impl Into<String>, options: QueueOptions) -> QueueSpec {
        QueueSpec {
            keys: QueueKeys::new(name),
            options,
        }
    }
}

/// The names a Lua text uses that start with `delayq_`, outside `--` comments and quoted
/// strings.
pub(crate) fn delayq_names(lua: &str) -> std::collections::BTreeSet<&str> {
    let mut names = std::collections::BTreeSet::new();
    let bytes = lua.as_bytes();
    let (mut i, mut word_start) = (0, None);
    while i <= bytes.len() {
        let c = bytes.get(i).copied().unwrap_or(b' ');
        if c.is_ascii_alphanumeric() || c == b'_' {
            word_start.get_or_insert(i);
            i += 1;
            continue;
        }
        if let Some(start) = word_start.take() {
            if lua[start..i].starts_with("delayq_") {
                names.insert(&lua[start..i]);
            }
        }
        match c {
            b'-' if bytes.get(i + 1) == Some(&b'-') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'\'' | b'"' => {
                i += 1;
                while i < bytes.len() && bytes[i] != c {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            _ => i += 1,
        }
    }
    names
}

/// The names a helper file defines (`local function delayq_x`, `local delayq_x =`).
pub(crate) fn delayq_definitions(lua: &str) -> Vec<&str> {
    lua.lines()
        .filter_map(|line| {
            let rest = line
                .strip_prefix("local function ")
                .or_else(|| line.strip_prefix("local "))?;
            let name = rest
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .next()?;
            name.starts_with("delayq_").then_some(name)
        })
        .collect()
}

/// The helper files (in [`PRELUDE`] order, as name and text) that `body` needs: the guard, every
/// file defining a name the body uses, and, in turn, every file defining a name those use.
pub(crate) fn helpers_used_by(body: &str) -> Vec<(&'static str, &'static str)> {
    let mut wanted = delayq_names(body);
    wanted.insert("delayq_check_keys");
    let mut included = [false; PRELUDE.len()];
    loop {
        let mut grew = false;
        for (i, (_, file)) in PRELUDE.iter().enumerate() {
            if !included[i] && delayq_definitions(file).iter().any(|d| wanted.contains(d)) {
                included[i] = true;
                wanted.extend(delayq_names(file));
                grew = true;
            }
        }
        if !grew {
            break;
        }
    }
    PRELUDE
        .iter()
        .zip(included)
        .filter_map(|(file, yes)| yes.then_some(*file))
        .collect()
}

/// One script: its file name, the keys it declares (and which of them it leaves untouched,
/// declared only to route the call to the queue's slot), its full source and SHA-1.
#[derive(Debug)]
pub(crate) struct LuaScript {
    name: &'static str,
    keys: &'static [KeyRole],
    untouched: &'static [KeyRole],
    source: String,
    sha1: String,
}

impl LuaScript {
    /// Assembles `lua/lib/*` + the key guard + `body`, the file `name` declaring `keys`, of
    /// which the guard leaves `untouched` alone.
    pub(crate) fn new(
        name: &'static str,
        body: &str,
        keys: &'static [KeyRole],
        untouched: &'static [KeyRole],
    ) -> LuaScript {
        let kinds: Vec<String> = keys
            .iter()
            .map(|role| match untouched.contains(role) {
                true => "'any'".to_owned(),
                false => format!("'{}'", role.kind().redis_type()),
            })
            .collect();
        let mut source: String = helpers_used_by(body)
            .into_iter()
            .map(|(_, text)| text)
            .collect();
        source.push_str(&format!(
            "do local refused = delayq_check_keys({{ {} }}) if refused then return refused end end\n",
            kinds.join(", ")
        ));
        source.push_str(body);
        let sha1 = fred::util::sha1_hash(&source);
        LuaScript {
            name,
            keys,
            untouched,
            source,
            sha1,
        }
    }

    /// The file name under `lua/`.
    pub(crate) fn name(&self) -> &'static str {
        self.name
    }

    /// The keys the script declares, in KEYS order.
    pub(crate) fn keys(&self) -> &'static [KeyRole] {
        self.keys
    }

    /// The keys declared only to route the call to the queue's slot.
    pub(crate) fn untouched(&self) -> &'static [KeyRole] {
        self.untouched
    }

    /// The full source sent to Redis.
    pub(crate) fn source(&self) -> &str {
        &self.source
    }

    /// The script's SHA-1, as EVALSHA wants it.
    #[cfg(test)]
    pub(crate) fn sha1(&self) -> &str {
        &self.sha1
    }

    /// Starts a call for the queue `queue`: ARGV[1] is now by the queue's clock, ARGV[2] its
    /// entry format.
    pub(crate) fn call<'a>(&'static self, queue: &'a QueueSpec) -> ScriptCall<'a> {
        ScriptCall {
            script: self,
            queue,
            given: Vec::new(),
            args: vec![
                queue.options.clock.now().to_arg(),
                queue.options.format.to_arg(),
            ],
            rest_arg: None,
        }
    }

    /// One EVALSHA (plus the NOSCRIPT reload); keys and arguments are copied per command sent.
    async fn evalsha<R, C>(&self, client: &C, keys: &[Key], args: &[Value]) -> Result<R, FredError>
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
                Err(err) if classify(&err) == ReplyKind::NoScript => {
                    tracing::debug!(script = self.name, "NOSCRIPT; loading the script");
                    let _: Value = client.script_load_cluster(self.source.as_str()).await?;
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

/// One call being built: the keys given per call (in role order) and the arguments after
/// ARGV[2].
#[derive(Debug)]
#[must_use]
pub(crate) struct ScriptCall<'a> {
    script: &'static LuaScript,
    queue: &'a QueueSpec,
    given: Vec<&'a str>,
    args: Vec<Value>,
    /// Where the argument of [`ScriptCall::value_index`] that bounds the reading of the
    /// unindexed rest sits in `args`.
    rest_arg: Option<usize>,
}

impl<'a> ScriptCall<'a> {
    /// The key for the next role that is given per call ([`KeyRole::Claim`],
    /// [`KeyRole::Destination`], [`KeyRole::OwnList`]).
    pub(crate) fn key(mut self, key: &'a str) -> Self {
        self.given.push(key);
        self
    }

    /// The limit keys ([`LimitKeys`](crate::keys::LimitKeys)) the script declares, as its next
    /// keys given per call.
    pub(crate) fn limit_keys(mut self, keys: &'a crate::keys::LimitKeys) -> Self {
        let roles = self.script.keys.iter();
        self.given.extend(roles.filter_map(|role| keys.of(*role)));
        self
    }

    /// Goes by `now` instead of the time the call was built at (calls that share one instant).
    pub(crate) fn at(mut self, now: crate::time::Now) -> Self {
        self.args[0] = now.to_arg();
        self
    }

    /// The next argument.
    pub(crate) fn arg(mut self, arg: impl Into<Value>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// The next two arguments of a script that looks entries up in the value index
    /// (`lua/lib/values_sync.lua`): the most order-list entries it indexes ([`VALUE_INDEX_CHUNK`]),
    /// and the most elements the index does not cover that it may read instead (set per call by
    /// [`ScriptCall::run_indexed`]).
    pub(crate) fn value_index(mut self) -> Self {
        self.args.push((VALUE_INDEX_CHUNK as i64).into());
        self.rest_arg = Some(self.args.len());
        self.args.push(0.into());
        self
    }

    /// The next arguments.
    pub(crate) fn args(mut self, args: impl IntoIterator<Item = Value>) -> Self {
        self.args.extend(args);
        self
    }

    /// The KEYS list, built from the script's roles.
    fn keys(&self) -> Result<Vec<Key>> {
        let mut given = self.given.iter();
        let keys: Option<Vec<Key>> = self
            .script
            .keys
            .iter()
            .map(|role| self.queue.keys.of(*role).or_else(|| given.next().copied()))
            .map(|key| key.map(Key::from))
            .collect();
        match keys {
            Some(keys) if given.next().is_none() => Ok(keys),
            _ => Err(Error::InvalidConfig(format!(
                "{} declares {} keys given per call, {} were given",
                self.script.name,
                self.script
                    .keys
                    .iter()
                    .filter(|r| self.queue.keys.of(**r).is_none())
                    .count(),
                self.given.len()
            ))),
        }
    }

    /// Sends the call, with the crate's error mapping (`WRONGTYPE` as [`Error::WrongType`]
    /// naming the key, script errors named after the file).
    ///
    /// While a Cluster slot migrates, Redis refuses a call it did not run (`MOVED`/`ASK`
    /// redirections beyond the client's limit, `TRYAGAIN` when the keys are split between the
    /// two nodes); such a call is sent again after a short wait, for up to ~5 s. Clients from
    /// [`crate::connect`] do not follow redirections themselves (see there), so every redirection
    /// lands here.
    pub(crate) async fn run<R, C>(self, client: &C) -> Result<R>
    where
        R: FromValue,
        C: LuaInterface + Sync,
    {
        self.send(client).await
    }

    async fn send<R, C>(&self, client: &C) -> Result<R>
    where
        R: FromValue,
        C: LuaInterface + Sync,
    {
        let keys = self.keys()?;
        let script = self.script;
        super::resend_refused(script.name, || script.evalsha(client, &keys, &self.args))
            .await
            .map_err(|e| Error::from_script(script.name, self.queue.keys.target(), e))
    }

    /// Sends a call of a script that looks entries up in the value index (its arguments from
    /// [`ScriptCall::value_index`]) until it answers, and returns the script's result.
    ///
    /// Such a script first indexes at most [`VALUE_INDEX_CHUNK`] order-list entries, for a few
    /// ms of the server's time at most (`lua/lib/values_sync.lua`); when the index then still does
    /// not cover the whole list, it answers `{ 0, elements not covered }` having done nothing
    /// else, and is sent again (with a fresh `now`); otherwise it answers `{ 1, result... }`.
    /// Only once a call made no headway (others append as fast as it indexes) may the next
    /// ones read up to [`REST_READ_CHEAP`] uncovered elements instead. So no call holds Redis
    /// long whatever the index's state, and what a lookup waits for is indexed for good: once a
    /// queue's index is complete, a lookup is one call. The queue's scheduler keeps the
    /// index up to date ahead of lookups (`redis::ops::index_values`); without one (a Java
    /// scheduler, or one-shot CLI processes), the first lookup on a long queue completes it.
    ///
    /// The caller waits in bounded steps, never Redis. A lookup gives up with an error when
    /// [`LOOKUP_STALLED_CALLS`] calls in a row each left the uncovered part no lower than the
    /// call before (others append faster than a call indexes, or keep invalidating the index).
    pub(crate) async fn run_indexed<C>(mut self, client: &C) -> Result<Vec<Value>>
    where
        C: LuaInterface + Sync,
    {
        let Some(rest_arg) = self.rest_arg else {
            return Err(Error::InvalidConfig(format!(
                "{} is sent without its value-index arguments",
                self.script.name
            )));
        };
        self.args[rest_arg] = 0.into();
        let span = tracing::debug_span!("lookup", script = self.script.name, calls = 1_u64);
        let (mut last_uncovered, mut stalled) = (i64::MAX, 0);
        async {
            for call in 1_u64.. {
                if call > 1 {
                    self.args[0] = self.queue.options.clock.now().to_arg();
                    tracing::Span::current().record("calls", call);
                }
                let reply: Value = self.send(client).await?;
                let mut items = match reply {
                    Value::Array(items) if !items.is_empty() => items,
                    other => {
                        return Err(Error::UnexpectedReply {
                            context: self.script.name,
                            detail: format!("{other:?}"),
                        })
                    }
                };
                if items[0].as_i64() == Some(1) {
                    items.remove(0);
                    if call > 1 {
                        tracing::debug!(calls = call, "value index behind: indexed over several calls");
                    }
                    return Ok(items);
                }
                let uncovered = items.get(1).and_then(Value::as_i64).unwrap_or(i64::MAX);
                // Headway is against the call before (an index rebuilt from the head, after
                // others removed entries behind delayq's back, starts over).
                let headway = uncovered < last_uncovered;
                last_uncovered = uncovered;
                if headway {
                    stalled = 0;
                } else {
                    // Others append as fast as a call indexes: the next calls may read a short
                    // rest instead of waiting for it to be indexed.
                    self.args[rest_arg] = (REST_READ_CHEAP as i64).into();
                    stalled += 1;
                    if stalled >= LOOKUP_STALLED_CALLS {
                        break;
                    }
                }
            }
            Err(Error::UnexpectedReply {
                context: self.script.name,
                detail: format!(
                    "the value index of {} stopped catching up with its order list ({last_uncovered} elements not indexed after {LOOKUP_STALLED_CALLS} calls in a row without headway); nothing was changed",
                    self.queue.keys.target()
                ),
            })
        }
        .instrument(span)
        .await
    }
}

/// Most order-list entries a call indexes before it does its own work (see
/// [`ScriptCall::run_indexed`]); a call also stops indexing after 3 ms of the server's time.
pub(crate) const VALUE_INDEX_CHUNK: usize = 5_000;

/// Order-list elements the value index does not cover that a lookup reads in a call rather than
/// wait for them to be indexed: a pass over them takes a few ms (0.2 µs an element).
pub(crate) const REST_READ_CHEAP: usize = 10_000;

/// Calls in a row that do not bring a lookup's uncovered part lower, after which it gives up.
pub(crate) const LOOKUP_STALLED_CALLS: u32 = 200;

/// Declares a script: `script!(NAME, "file.lua", [Role, ...])` makes a static [`LuaScript`]
/// for `lua/file.lua` whose KEYS are the given [`KeyRole`]s, in that order;
/// `script!(NAME, "file.lua", [Role, ...], untouched [Role, ...])` names the keys declared only
/// to route the call (the key guard leaves them alone).
macro_rules! script {
    ($ident:ident, $file:literal, [$($role:ident),* $(,)?]) => {
        $crate::redis::script::script!($ident, $file, [$($role),*], untouched []);
    };
    ($ident:ident, $file:literal, [$($role:ident),* $(,)?], untouched [$($skip:ident),* $(,)?]) => {
        pub(crate) static $ident: std::sync::LazyLock<$crate::redis::script::LuaScript> =
            std::sync::LazyLock::new(|| {
                $crate::redis::script::LuaScript::new(
                    $file,
                    include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/lua/", $file)),
                    &[$($crate::keys::KeyRole::$role),*],
                    &[$($crate::keys::KeyRole::$skip),*],
                )
            });
    };
}
pub(crate) use script;

/// A yes/no argument, as the scripts read it (`'1'` is yes).
pub(crate) fn lua_bool(yes: bool) -> Value {
    if yes { "1" } else { "0" }.into()
}
