//! versa's etcd backend: the [`versa_storage::Store`] trait over etcd v3, for installations
//! that run several replicas against one etcd cluster.
//!
//! Every `Store` operation is one etcd request: reads are ranges, writes are transactions whose
//! compare is the store's precondition (absent for a create, the expected modification revision
//! for an update or delete), so etcd's revision is the store's revision and an object's
//! `resourceVersion` is its etcd `mod_revision`. Keys are the caller's full paths; there is no
//! extra prefix. A watch is one etcd watch stream served by a task that re-creates it after the
//! connection breaks, from the last delivered revision, so consumers see each event once.
//!
//! Progress notifications need care on older servers: etcd before 3.4.31/3.5.13 answers
//! progress requests out of order with its events, so on those the store passes on only etcd's
//! own periodic notifications (see `progress.rs`); run them with
//! `--experimental-watch-progress-notify-interval` set to a few seconds.
//!
//! [`EtcdStore::connect`] takes an [`EtcdConfig`]. [`EtcdLeaseLock`] is leader election's lock
//! on the same cluster (`lock.rs`), for replicas without a kube cluster; [`EtcdMembership`] the
//! replicas' records of what they serve, which storage migration waits on.

mod config;
mod errors;
mod lock;
mod progress;
mod rpc;
mod store;
mod watch;

pub use config::{EtcdConfig, EtcdTls};
pub use lock::{EtcdLeaseLock, EtcdMembership};
pub use store::EtcdStore;
