//! delayq's integration tests: one test crate (one link step), one module per behaviour, on
//! real `redis-server` processes started by `tests/common` (standalone, Cluster, Sentinel).
//!
//! Run them all with `cargo test --all-features --test it`, or one module with
//! `cargo test --all-features --test it -- scheduler::`. The codec crate and the `delayq` command
//! have test crates of their own (`crates/*/tests/`).

#[path = "../common/mod.rs"]
mod common;

mod auth;
mod bad_input;
mod connect_options;
mod consumer;
mod entry_fixtures;
mod fuzz_decode;
mod fuzz_live;
mod groups;
mod harness;
mod lifecycle;
mod logs;
mod long_scripts;
mod offer_keys;
mod operations;
mod reliable;
mod reschedule;
mod retried_calls;
mod scheduler;
mod sharded;
#[cfg(feature = "tls")]
mod tls;
mod topologies;
mod transfer;
mod transfer_head;
mod transfer_index;
mod value_index;
mod worker;
mod worker_queues;
