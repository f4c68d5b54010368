//! [`Inspect::check`]: what an operator should know about the server a queue lives on, and
//! the queue's counters (the `delayq check NAME` command).

use super::DelayedQueue;
use crate::codec::Codec;
use crate::error::{classify, ReplyKind};
use crate::inspect::{AccessCheck, CheckReport, Inspect};
use crate::keys::KeyRole;
use crate::redis::ops::{reliable_stats, stats};
use crate::redis::server;
use crate::{Refusal, Result};
use fred::clients::Client;
use fred::interfaces::{ClientLike, LuaInterface};
use fred::prelude::Value;
use fred::types::{ClusterHash, CustomCommand};

/// The script the access probe loads and calls with every key of the queue: it does nothing,
/// so only the rights to run it on those keys are tested.
const NOOP_SCRIPT: &str = "return 1";

/// One command the queue runs, with the key (or channel) it runs on.
struct Need {
    command: &'static str,
    args: Vec<String>,
}

impl<C: Codec> Inspect<'_, DelayedQueue<C>> {
    /// Reads what matters about the server and the queue: the server's version, whether it may
    /// evict keys (`maxmemory-policy`), whether it persists, whether this client's ACL user may
    /// run every command on every key and channel the queue needs, and the counters. Reads only;
    /// a check that Redis refuses is reported as unknown, not as an error.
    ///
    /// # Errors
    ///
    /// None today (everything Redis refuses is reported in the report); kept fallible for
    /// checks to come.
    pub async fn check(self) -> Result<CheckReport> {
        let client = self.queue.client();
        if let Err(err) = command_result(client, "PING", Vec::new()).await {
            if classify(&err) == ReplyKind::Refused(Refusal::Busy) {
                return Ok(CheckReport::of_busy_server(err.details().to_owned()));
            }
        }
        let server_info = server::info(client, "server").await;
        let field = |name: &str| {
            server_info
                .as_ref()
                .and_then(|f| f.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()))
        };
        let server = match (
            field("server_name"),
            field("valkey_version"),
            field("redis_version"),
        ) {
            (Some(name), Some(version), _) => Some(format!("{name} {version}")),
            (_, _, Some(version)) => Some(format!("redis {version}")),
            _ => None,
        };
        let user = command(client, "ACL", vec!["WHOAMI".into()])
            .await
            .and_then(|v| v.as_string());
        let (access, denied) = self.denied(user.as_deref()).await;
        let aof = match config_get(client, "appendonly").await {
            Some(on) => Some(on == "yes"),
            None => server::info_field(client, "persistence", "aof_enabled")
                .await
                .map(|on| on == "1"),
        };
        Ok(CheckReport {
            busy: None,
            server,
            maxmemory_policy: server::maxmemory_policy(client).await,
            aof,
            rdb_save: config_get(client, "save").await,
            user,
            access,
            denied,
            stats: stats::run(client, self.queue.spec())
                .await
                .map(Into::into)
                .map_err(|e| e.to_string()),
            reliable: reliable_stats::run(client, self.queue.spec())
                .await
                .map(Into::into)
                .map_err(|e| e.to_string()),
            paused: self.is_paused().await.map_err(|e| e.to_string()),
        })
    }

    /// What the queue runs, command by command, on which key or channel.
    fn needs(&self) -> Vec<Need> {
        let keys = self.queue.keys();
        let claim = keys.claim("check");
        // What workers and schedulers keep about the queue (any bucket's name will do).
        let (activity, processes) = (keys.activity(0), keys.processes());
        let activity_days = keys.activity_days(0);
        let schedule = keys.schedule("check");
        let dedup = keys.dedup("check");
        let limit = crate::keys::LimitKeys::new(keys, "check");
        let need = |command: &'static str, args: &[&str]| Need {
            command,
            args: args.iter().map(|a| (*a).to_owned()).collect(),
        };
        let mut all_keys: Vec<&str> = KeyRole::QUEUE
            .into_iter()
            .filter_map(|role| keys.of(role))
            .collect();
        all_keys.extend([
            claim.as_str(),
            &activity,
            &activity_days,
            &processes,
            keys.schedules(),
            &schedule,
            &dedup,
        ]);
        all_keys.extend(limit_key_names(&limit));
        let mut evalsha = vec!["0".repeat(40), all_keys.len().to_string()];
        evalsha.extend(all_keys.iter().map(|k| (*k).to_owned()));
        let mut needs = vec![
            Need {
                command: "EVALSHA",
                args: evalsha,
            },
            need("SCRIPT", &["LOAD", NOOP_SCRIPT]),
            need("TIME", &[]),
            need("ZADD", &[keys.timeout(), "0", "m"]),
            need("ZRANGEBYSCORE", &[keys.timeout(), "-inf", "0"]),
            need("RPUSH", &[keys.order(), "e"]),
            need("LREM", &[keys.order(), "1", "e"]),
            need("LSET", &[keys.order(), "0", "e"]),
            need("LRANGE", &[keys.order(), "0", "-1"]),
            need("LLEN", &[keys.order()]),
            need("RPUSH", &[keys.target(), "v"]),
            need("BLPOP", &[keys.target(), "1"]),
            need("LPOP", &[keys.target()]),
            need("BLMOVE", &[keys.target(), &claim, "LEFT", "RIGHT", "1"]),
            need("LMOVE", &[&claim, keys.target(), "RIGHT", "LEFT"]),
            need("PUBLISH", &[keys.channel(), "0"]),
            need("SUBSCRIBE", &[keys.channel()]),
            need("ZADD", &[keys.index(), "0", "m"]),
            need("HSET", &[keys.values(), "v", "e"]),
            need("SET", &[keys.paused(), "1"]),
            need("SET", &[&dedup, "e", "PX", "1"]),
            need("DEL", &[keys.paused()]),
            need("UNLINK", &[keys.index()]),
            need("RPUSH", &[keys.quarantine(), "e"]),
            need("HSET", &[keys.inflight_data(), "id", "v"]),
            need("HINCRBY", &[keys.attempts(), "v", "1"]),
            need("ZADD", &[keys.inflight(), "0", "id"]),
            need("PEXPIRE", &[keys.settled(), "60000"]),
            need("RPUSH", &[keys.dead(), "r"]),
            need("ZADD", &[keys.claims(), "0", &claim]),
            need("HINCRBY", &[&activity, "0:taken", "1"]),
            need("PEXPIRE", &[&activity, "60000"]),
            need("HINCRBY", &[&activity_days, "0:taken", "1"]),
            need("ZADD", &[&processes, "0", "r"]),
            need("ZREMRANGEBYSCORE", &[&processes, "-inf", "0"]),
            need("ZRANGEBYSCORE", &[keys.schedules(), "-inf", "0"]),
            need("HGETALL", &[&schedule]),
        ];
        needs.extend(limit_needs(&limit));
        needs
    }

    /// The needs the user may not use, by `ACL DRYRUN`, or (when that is refused) only the
    /// keys, by an `EVALSHA` of a loaded script that declares every key and does nothing: the
    /// way delayq runs its own scripts, so the probe needs no right they do not.
    async fn denied(&self, user: Option<&str>) -> (AccessCheck, Vec<String>) {
        let client = self.queue.client();
        let mut denied = Vec::new();
        if let Some(user) = user {
            let mut refused_dry_run = false;
            for need in self.needs() {
                let mut args = vec![
                    "DRYRUN".to_owned(),
                    user.to_owned(),
                    need.command.to_owned(),
                ];
                args.extend(need.args.iter().cloned());
                match command_result(client, "ACL", args).await {
                    Ok(Value::String(s)) if s == "OK" => {}
                    Ok(other) => denied.push(format!(
                        "{} {} ({})",
                        need.command,
                        need.args.join(" "),
                        other.as_string().unwrap_or_default()
                    )),
                    Err(_) => {
                        refused_dry_run = true;
                        break;
                    }
                }
            }
            if !refused_dry_run {
                return (AccessCheck::DryRun, denied);
            }
        }
        let keys: Vec<String> = self.needs().swap_remove(0).args.split_off(2);
        let sha = match client.script_load_cluster::<String, _>(NOOP_SCRIPT).await {
            Ok(sha) => sha,
            Err(_) => return (AccessCheck::NotChecked, denied),
        };
        match client.evalsha::<Value, _, _, _>(sha, keys, ()).await {
            Ok(_) => {}
            // Refused for a key, not for the command itself.
            Err(err) if err.details().starts_with("NOPERM") && !err.details().contains("run") => {
                denied.push(format!("the queue's keys ({})", err.details()));
            }
            Err(_) => return (AccessCheck::NotChecked, denied),
        }
        (AccessCheck::KeysOnly, denied)
    }
}

async fn command_result(
    client: &Client,
    name: &'static str,
    args: Vec<String>,
) -> std::result::Result<Value, fred::error::Error> {
    client
        .custom(
            CustomCommand::new_static(name, ClusterHash::Random, false),
            args,
        )
        .await
}

async fn command(client: &Client, name: &'static str, args: Vec<String>) -> Option<Value> {
    command_result(client, name, args).await.ok()
}

/// `CONFIG GET name`, or `None` when refused.
async fn config_get(client: &Client, name: &str) -> Option<String> {
    match command(client, "CONFIG", vec!["GET".into(), name.into()]).await? {
        Value::Array(items) => items.get(1).and_then(Value::as_string),
        Value::Map(map) => map.inner().values().next().and_then(Value::as_string),
        _ => None,
    }
}

/// The names of the limit keys of a queue (for one limit key).
fn limit_key_names(limit: &crate::keys::LimitKeys) -> [&str; 7] {
    [
        &limit.limits,
        &limit.slots,
        &limit.tat,
        &limit.held,
        &limit.busy,
        &limit.key_slots,
        &limit.parked,
    ]
    .map(String::as_str)
}

/// The commands the limit scripts send on a queue's limit keys.
fn limit_needs(limit: &crate::keys::LimitKeys) -> Vec<Need> {
    let need = |command: &'static str, args: &[&str]| Need {
        command,
        args: args.iter().map(|a| (*a).to_owned()).collect(),
    };
    vec![
        need("HGETALL", &[&limit.limits]),
        need("ZADD", &[&limit.slots, "0", "id"]),
        need("ZADD", &[&limit.tat, "0", "q"]),
        need("ZADD", &[&limit.held, "0", "k"]),
        need("ZADD", &[&limit.busy, "0", "k"]),
        need("ZADD", &[&limit.key_slots, "0", "id"]),
        need("RPUSH", &[&limit.parked, "v"]),
    ]
}
