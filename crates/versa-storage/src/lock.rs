//! The lock seam of leader election: where the [`LeaderElectionRecord`] lives and how it is
//! changed with compare-and-swap — client-go's `resourcelock.Interface`, written as the
//! [`LeaseLock`] trait. Beside it, the other record replicas keep alive with a lease: each
//! replica's [`ReplicaRecord`] (what it serves), kept by a [`Membership`].
//!
//! The election itself (who may take the record, when a holder has expired, renewing and losing)
//! is one algorithm, `versa-server`'s `leader.rs`; a lock only stores the record. Two locks
//! exist: a `coordination.k8s.io/v1` Lease in versa's namespace (cluster mode, `versa-server`)
//! and an etcd key bound to an etcd lease (etcd without a cluster, `versa-storage-etcd`). Like
//! the [`Store`](crate::Store) trait, this names no backend; the binary picks one.
//!
//! A [`Membership`] is the store's counterpart of kube's StorageVersion API and apiserver
//! identity leases, for storage migration (`versa-server`'s `replicas.rs`): every replica keeps
//! a record bound to a lease of its own — etcd deletes it when the replica stops renewing — saying
//! up to which revision of the stored definitions its writes follow; the leader reads them all.

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

/// What one replica says about itself to the others: which stored definitions its writes
/// follow (see `versa-server`'s `replicas.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaRecord {
    /// The replica's name (the same as its leader-election identity).
    pub identity: String,
    /// Every write this replica takes from now on, and every one it still has in flight, uses
    /// the definitions as stored at this revision or later.
    pub applied: i64,
    /// The oldest revision of the definitions any write since this record was created may have
    /// used: `applied` when a replica first publishes, the last `applied` it published when its
    /// record was lost (its lease ran out) and is written again.
    pub since: i64,
}

/// A live record as read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub record: ReplicaRecord,
    /// Which life of the record this is (etcd: the key's creation revision): a record lost and
    /// written again is another incarnation.
    pub incarnation: i64,
}

/// Where the replicas' records live: each bound to its replica's lease, so that a replica that
/// stops renewing disappears by itself.
pub trait Membership: Send + Sync + std::fmt::Debug {
    /// Writes this replica's record and renews its lease; if the record was gone (never written,
    /// or its lease ran out) it is created again, under a new lease. Returns whether the record
    /// was still there (false: this write began a new incarnation).
    fn publish<'a>(&'a self, record: &'a ReplicaRecord) -> BoxFuture<'a, Result<bool, LockError>>;

    /// Every live replica's record.
    fn members(&self) -> BoxFuture<'_, Result<Vec<Member>, LockError>>;

    /// Removes this replica's record and gives up its lease (on shutdown).
    fn withdraw(&self) -> BoxFuture<'_, Result<(), LockError>>;

    /// How long a record outlives its replica's last renewal.
    fn ttl(&self) -> std::time::Duration;

    /// Where the records are, for messages.
    fn describe(&self) -> String;
}
