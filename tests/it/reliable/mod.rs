//! Beyond Redisson: the reliable consumer (acknowledged takes, visibility, dead letters) and
//! workers over one or several queues.

mod consumer;
mod worker;
mod worker_queues;
