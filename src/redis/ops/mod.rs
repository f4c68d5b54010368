//! One file per Lua script: the keys it declares (as [`KeyRole`](crate::keys::KeyRole)s, in
//! the order of the script's `-- KEYS[i]` header), its typed arguments after the two every
//! script takes (now, entry format), and its reply read into a named outcome. The `.lua` file of
//! the same name under `lua/` is the other half; nothing else calls a script.

pub(crate) mod ack;
pub(crate) mod cancel;
pub(crate) mod contains;
pub(crate) mod dead;
pub(crate) mod dead_replay;
pub(crate) mod expire;
pub(crate) mod extend;
pub(crate) mod index_values;
pub(crate) mod limit_ack;
pub(crate) mod limit_acquire;
pub(crate) mod limit_admit;
pub(crate) mod limit_extend;
pub(crate) mod limit_lease;
pub(crate) mod limit_reserve;
pub(crate) mod limit_set;
pub(crate) mod limit_take;
pub(crate) mod limit_unpark;
pub(crate) mod limit_usage;
pub(crate) mod nack;
pub(crate) mod offer;
pub(crate) mod offer_dedup;
pub(crate) mod offer_unique;
pub(crate) mod pending;
pub(crate) mod poll;
pub(crate) mod poll_last_offer_first;
pub(crate) mod purge_list;
pub(crate) mod reap;
pub(crate) mod reliable_stats;
pub(crate) mod remove;
pub(crate) mod reschedule;
pub(crate) mod schedule_adopt;
pub(crate) mod schedule_fire;
pub(crate) mod schedule_remove;
pub(crate) mod schedule_set;
pub(crate) mod stats;
pub(crate) mod take;
pub(crate) mod tidy;
pub(crate) mod transfer;
pub(crate) mod unclaim;

use crate::keys::QueueKeys;
use crate::redis::script::LuaScript;

/// Every script.
pub(crate) fn all() -> Vec<&'static LuaScript> {
    vec![
        &ack::ACK,
        &cancel::CANCEL,
        &contains::CONTAINS,
        &dead::DEAD,
        &dead_replay::DEAD_REPLAY,
        &expire::EXPIRE,
        &extend::EXTEND,
        &index_values::INDEX_VALUES,
        &limit_ack::LIMIT_ACK,
        &limit_admit::LIMIT_ADMIT,
        &limit_acquire::LIMIT_ACQUIRE,
        &limit_extend::LIMIT_EXTEND,
        &limit_lease::LIMIT_LEASE,
        &limit_reserve::LIMIT_RESERVE,
        &limit_set::LIMIT_SET,
        &limit_take::LIMIT_TAKE,
        &limit_unpark::LIMIT_UNPARK,
        &limit_usage::LIMIT_USAGE,
        &nack::NACK,
        &offer::OFFER,
        &offer_dedup::OFFER_DEDUP,
        &offer_unique::OFFER_UNIQUE,
        &pending::PENDING,
        &poll::POLL,
        &poll_last_offer_first::POLL_LAST_OFFER_FIRST,
        &purge_list::PURGE_LIST,
        &reap::REAP,
        &reliable_stats::RELIABLE_STATS,
        &remove::REMOVE,
        &reschedule::RESCHEDULE,
        &schedule_adopt::SCHEDULE_ADOPT,
        &schedule_fire::SCHEDULE_FIRE,
        &schedule_remove::SCHEDULE_REMOVE,
        &schedule_set::SCHEDULE_SET,
        &stats::STATS,
        &take::TAKE,
        &tidy::TIDY,
        &transfer::TRANSFER,
        &unclaim::UNCLAIM,
    ]
}

fn by_name(name: &str) -> Option<&'static LuaScript> {
    all().into_iter().find(|s| s.name() == name)
}

/// The full source delayq sends for the script file `name` (e.g. `"offer.lua"`): the shared
/// helpers, the key guard, the script. For delayq's own tests and benchmarks, which run
/// scripts by hand (twice, as a retry would; pipelined, as `redis-benchmark` does).
pub fn script_source(name: &str) -> Option<String> {
    by_name(name).map(|s| s.source().to_owned())
}

/// The KEYS of the script file `name` for the queue with `keys`, with `given` for the keys given
/// per call (a claim list, a destination list), in order; for delayq's own tests.
pub fn script_keys(name: &str, keys: &QueueKeys, given: &[&str]) -> Option<Vec<String>> {
    let mut given = given.iter();
    by_name(name)?
        .keys()
        .iter()
        .map(|role| {
            keys.of(*role)
                .or_else(|| given.next().copied())
                .map(str::to_owned)
        })
        .collect()
}

/// The Redis type each key of the script file `name` must have, in KEYS order (`"list"`,
/// `"zset"`, `"hash"`), as its key guard checks them: `"channel"` for the channel (no key) and
/// `"any"` for a key declared only to route the call; for delayq's own tests.
pub fn script_key_types(name: &str) -> Option<Vec<&'static str>> {
    let script = by_name(name)?;
    Some(
        script
            .keys()
            .iter()
            .map(|role| match script.untouched().contains(role) {
                true => "any",
                false => role.kind().redis_type(),
            })
            .collect(),
    )
}

/// Every script file's name.
pub fn script_names() -> Vec<&'static str> {
    all().iter().map(|s| s.name()).collect()
}

#[cfg(test)]
mod tests {
    use super::all;
    use crate::keys::KeyRole;
    use std::collections::BTreeSet;

    fn body(name: &str) -> String {
        let path = format!("{}/lua/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    #[test]
    fn every_lua_file_has_exactly_one_op() {
        let dir = format!("{}/lua", env!("CARGO_MANIFEST_DIR"));
        let files: BTreeSet<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".lua"))
            .collect();
        let ops: Vec<&str> = all().iter().map(|s| s.name()).collect();
        let distinct: BTreeSet<String> = ops.iter().map(|s| s.to_string()).collect();
        assert_eq!(distinct.len(), ops.len(), "an op is listed twice");
        assert_eq!(files, distinct);
    }

    #[test]
    fn every_script_is_hashed_from_its_full_source() {
        for script in all() {
            assert_eq!(script.sha1().len(), 40, "{}", script.name());
            assert_eq!(script.sha1(), fred::util::sha1_hash(script.source()));
            assert!(script.source().starts_with("-- delayq lib/"));
            assert!(script.source().ends_with(&body(script.name())));
            assert!(script.source().contains("delayq_check_keys({ '"));
        }
    }

    /// A script's source defines every `delayq_` helper it uses, and leaves out the helper
    /// files it does not use (the offer has no value-index or settling code).
    #[test]
    fn every_script_carries_the_helpers_it_uses_and_no_others() {
        use crate::redis::script::{delayq_definitions, delayq_names};
        for script in all() {
            let defined: BTreeSet<&str> = delayq_definitions(script.source()).into_iter().collect();
            let used = delayq_names(script.source());
            let missing: Vec<&&str> = used.difference(&defined).collect();
            assert!(
                missing.is_empty(),
                "{}: {missing:?} undefined",
                script.name()
            );
        }
        let offer = all().into_iter().find(|s| s.name() == "offer.lua").unwrap();
        assert!(!offer.source().contains("lib/values_sync.lua"));
        assert!(!offer.source().contains("lib/settle.lua"));
        let lib = format!("{}/lua/lib", env!("CARGO_MANIFEST_DIR"));
        for file in std::fs::read_dir(&lib).unwrap() {
            let name = file.unwrap().file_name().to_string_lossy().into_owned();
            let header = format!("-- delayq lib/{name}");
            assert!(
                all().iter().any(|s| s.source().contains(&header)),
                "no script includes lib/{name}"
            );
        }
    }

    /// Each script's header names, on its `-- Helpers:` line, the helper files of `lua/lib/` it
    /// is sent with (by their stems, in the order they are included), so a reader sees what a
    /// script runs without working out the inclusion.
    #[test]
    fn headers_name_the_helpers_each_script_includes() {
        use crate::redis::script::helpers_used_by;
        let mut wrong = Vec::new();
        for script in all() {
            let text = body(script.name());
            let included: Vec<&str> = helpers_used_by(&text).iter().map(|(n, _)| *n).collect();
            let header: Vec<&str> = text.lines().take_while(|l| l.starts_with("--")).collect();
            // The line, and the lines indented under it that continue it.
            let named: Vec<&str> = header
                .iter()
                .skip_while(|l| !l.starts_with("-- Helpers:"))
                .enumerate()
                .take_while(|(i, l)| *i == 0 || l.starts_with("--          "))
                .flat_map(|(_, l)| {
                    l.trim_start_matches("-- Helpers:")
                        .trim_start_matches('-')
                        .split(',')
                })
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .collect();
            if named != included {
                let expected = format!("-- Helpers: {}", included.join(", "));
                wrong.push(format!("{}: {expected}", script.name()));
            }
        }
        assert!(wrong.is_empty(), "headers to fix:\n{}", wrong.join("\n"));
    }

    /// No Lua file is over 400 lines: a helper file per concern (`lua/README.md`).
    #[test]
    fn every_lua_file_is_at_most_400_lines() {
        let root = format!("{}/lua", env!("CARGO_MANIFEST_DIR"));
        for dir in [root.clone(), format!("{root}/lib")] {
            for file in std::fs::read_dir(&dir).unwrap() {
                let path = file.unwrap().path();
                if path.extension().is_some_and(|e| e == "lua") {
                    let lines = std::fs::read_to_string(&path).unwrap().lines().count();
                    assert!(lines <= 400, "{}: {lines} lines", path.display());
                }
            }
        }
    }

    /// The header's `-- KEYS[i]: description  PATTERN ...` lines name, in order, the patterns of the
    /// roles the op declares; KEYS[1] is the target list; roles are in the crate's one order;
    /// ARGV[1] and ARGV[2] are now and the entry format; the script says what it mirrors.
    #[test]
    fn headers_agree_with_the_declared_keys() {
        for script in all() {
            let name = script.name();
            let text = body(name);
            let header: Vec<&str> = text.lines().take_while(|l| l.starts_with("--")).collect();
            let keys: Vec<String> = header
                .iter()
                .filter_map(|l| l.strip_prefix("-- KEYS["))
                .map(|l| {
                    l.split_whitespace()
                        .find(|w| {
                            w.contains(":{NAME}") || ["NAME", "DESTINATION", "LIST"].contains(w)
                        })
                        .unwrap_or("")
                        .to_owned()
                })
                .collect();
            let roles: Vec<&str> = script.keys().iter().map(|r| r.pattern()).collect();
            assert_eq!(keys, roles, "{name}: KEYS lines against the declared roles");
            let lines: Vec<&&str> = header
                .iter()
                .filter(|l| l.starts_with("-- KEYS["))
                .collect();
            for (i, (line, role)) in lines.iter().zip(script.keys()).enumerate() {
                assert!(
                    line.starts_with(&format!("-- KEYS[{}]: ", i + 1)),
                    "{name}: {line}"
                );
                assert_eq!(
                    line.contains("(untouched"),
                    script.untouched().contains(role),
                    "{name}: {line}: untouched in the header and in Rust"
                );
            }
            assert_eq!(script.keys()[0], KeyRole::Target, "{name}: KEYS[1]");
            let mut sorted = script.keys().to_vec();
            sorted.sort();
            assert_eq!(sorted, script.keys(), "{name}: roles out of order");
            assert!(
                header.iter().any(|l| l.starts_with("-- ARGV[1]: now")),
                "{name}: ARGV[1]"
            );
            assert!(
                header
                    .iter()
                    .any(|l| l.starts_with("-- ARGV[2]: entry format")),
                "{name}: ARGV[2]"
            );
            assert!(
                header
                    .iter()
                    .any(|l| l.contains("Mirrors: Redisson") || l.contains("Not in Redisson")),
                "{name}: what it mirrors"
            );
            assert!(
                header.iter().any(|l| l.starts_with("-- Returns:")),
                "{name}"
            );
        }
    }
}
