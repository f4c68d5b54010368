//! delayq's integration tests: one test crate (one link step), one module per behaviour, on
//! real `redis-server` processes started by `tests/common` (standalone, Cluster, Sentinel).
//!
//! Run them all with `cargo test --all-features --test it`, or one module with
//! `cargo test --all-features --test it -- scheduler::`. Modules that drive the `delayq` binary
//! need the `cli` feature.

#[path = "../common/mod.rs"]
mod common;
#[path = "../common/java_payloads.rs"]
mod java_payloads;

mod auth;
mod bad_input;
#[cfg(feature = "cli")]
mod cli;
#[cfg(feature = "cli")]
mod cli_connect;
#[cfg(feature = "cli")]
mod cli_values;
#[cfg(feature = "cli")]
mod clock;
mod codec_jackson;
mod codec_jackson_java;
mod codec_kryo;
mod codec_kryo_java;
mod connect_options;
mod consumer;
mod exact_numbers;
mod fuzz_decode;
mod fuzz_live;
mod golden_fixtures;
mod groups;
mod harness;
mod lifecycle;
mod logs;
mod long_scripts;
#[cfg(feature = "cli")]
mod observe;
mod offer_keys;
mod operations;
#[cfg(feature = "cli")]
mod processes;
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
#[cfg(feature = "cli")]
mod worker_kill;
mod worker_queues;
