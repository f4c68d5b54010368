//! Where Redis runs and how delayq reaches it: Cluster and Sentinel, TLS, passwords and ACL
//! users, connection settings, calls resent after a dropped connection, durable offers on a
//! master and its replica.

mod auth;
mod cluster_sentinel;
mod connect_options;
mod durable;
mod retried_calls;
#[cfg(feature = "tls")]
mod tls;
