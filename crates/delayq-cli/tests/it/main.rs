//! Tests of the `delayq` command: each drives the real binary (`CARGO_BIN_EXE_delayq`) against
//! real `redis-server` processes started by the workspace's one harness (`tests/common`).
//!
//! Run them with `cargo test -p delayq-cli`, one module with
//! `cargo test -p delayq-cli --test it -- observe::`.

#[path = "../../../../tests/common/mod.rs"]
mod common;

mod access;
mod budgets;
mod check;
mod cli;
mod cli_connect;
mod cli_edges;
mod cli_values;
mod clock;
mod codec_per_queue;
mod daemon_env;
mod daemon_notices;
mod dashboard;
mod dashboard_gateway;
mod dashboard_guard;
mod dashboard_schedules;
mod dashboard_search;
mod dedup;
mod exit_codes;
mod gateway;
mod grafana;
mod handler_output;
mod json_shape;
mod limit_cli;
mod limit_workers;
mod list_commands;
mod listen;
mod metrics;
mod monitoring;
mod observe;
#[cfg(feature = "otel")]
mod otel;
mod overview;
mod processes;
mod queues;
mod schedule;
mod shard_count;
mod sharded_doors;
mod take_handoff;
mod transfer_stop;
mod units;
mod wait_replicas_all;
mod work;
mod work_lifecycle;
mod worker_kill;
mod workers;
