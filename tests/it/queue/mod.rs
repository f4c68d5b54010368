//! The producer side: every queue operation and what it leaves in the keys, entry bytes, the
//! keys' lifetime, deduplicated offers, rescheduling, the at-most-once consumer, the value
//! index, sharded queues and their recorded shard count.

mod consumer;
mod dedup;
mod lifecycle;
mod offer_keys;
mod operations;
mod reschedule;
mod shard_count;
mod sharded;
mod sharded_doors;
mod value_index;
mod value_index_lookups;
