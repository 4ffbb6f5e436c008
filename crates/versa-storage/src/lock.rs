//! The lock seam of leader election: where the [`LeaderElectionRecord`] lives and how it is
//! changed with compare-and-swap — client-go's `resourcelock.Interface`, written as the
//! [`LeaseLock`] trait.
//!
//! The election itself (who may take the record, when a holder has expired, renewing and losing)
//! is one algorithm, `versa-server`'s `leader.rs`; a lock only stores the record. Two locks
//! exist: a `coordination.k8s.io/v1` Lease in versa's namespace (cluster mode, `versa-server`)
//! and an etcd key bound to an etcd lease (etcd without a cluster, `versa-storage-etcd`). Like
//! the [`Store`](crate::Store) trait, this names no backend; the binary picks one.

use std::time::SystemTime;

use crate::BoxFuture;

/// What a lock holds: kube's `LeaderElectionRecord`, the spec of a Lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderElectionRecord {
    /// Who holds the lock; empty: nobody (released), anyone may take it.
    pub holder_identity: String,
    /// How long others wait, from the last change they saw, before they may take the lock.
    pub lease_duration_seconds: i64,
    /// When the current holder took the lock.
    pub acquire_time: SystemTime,
    /// When the current holder last renewed it.
    pub renew_time: SystemTime,
    /// How many times the lock changed hands.
    pub leader_transitions: i64,
}

/// A lock operation that failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LockError {
    /// Someone else changed (or created) the record since it was read.
    #[error("the lock {0} was changed by someone else")]
    Conflict(String),
    /// The backend did not answer, or answered with an error.
    #[error("{0}")]
    Unavailable(String),
}

/// Where the record is kept. `version` is the backend's optimistic-concurrency token (a Lease's
/// `resourceVersion`, an etcd key's modification revision); the elector passes back the one it
/// read or wrote last.
pub trait LeaseLock: Send + Sync + std::fmt::Debug {
    /// The record and its version, or `None` when there is none.
    fn get(&self) -> BoxFuture<'_, Result<Option<(LeaderElectionRecord, String)>, LockError>>;

    /// Creates the record; [`LockError::Conflict`] if one exists. Returns the new version.
    fn create<'a>(&'a self, record: &'a LeaderElectionRecord) -> BoxFuture<'a, Result<String, LockError>>;

    /// Replaces the record if it is still at `version`; [`LockError::Conflict`] if not (or if
    /// it is gone). Returns the new version.
    fn update<'a>(
        &'a self,
        record: &'a LeaderElectionRecord,
        version: &'a str,
    ) -> BoxFuture<'a, Result<String, LockError>>;

    /// The lock, for messages (`leases/versa-system/versa`, `etcd /registry/...`).
    fn describe(&self) -> String;
}
