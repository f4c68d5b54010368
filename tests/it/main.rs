//! delayq's integration tests: one test crate (one link step), grouped by area, one module per
//! behaviour, on real `redis-server` processes started by `tests/common` (standalone, Cluster,
//! Sentinel): `queue/`, `input/`, `scheduler/`, `reliable/`, `limit/` and `topology/`.
//!
//! Run them all with `cargo test --all-features --test it`, or one area or module with
//! `cargo test --all-features --test it -- scheduler::` (`-- queue::sharded::`). The codec
//! crate and the `delayq` command have test crates of their own (`crates/*/tests/`).

#[path = "../common/mod.rs"]
mod common;

mod harness;
mod logs;
mod observe;

mod input;
mod limit;
mod queue;
mod reliable;
mod schedule;
mod scheduler;
mod script_budget;
mod topology;
