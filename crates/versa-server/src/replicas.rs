//! What this replica serves, told to the others, so that a storage migration never walks while a
//! replica still writes at the old storage version (issue 22).
//!
//! Replicas learn definitions from the store's watch, each at its own pace. When a definition's
//! storage version changes, a replica that has not yet seen the change still writes objects at
//! the old version; if the leader's migration walk has already passed those objects' keys, they
//! stay at the old version and the trim of `storedVersions` would be a lie. Kubernetes closes
//! this with the StorageVersion API: every kube-apiserver publishes the encoding version it
//! writes, bound to its identity lease, and the storage version migrator starts only once all
//! of them agree. versa does the same with one number per replica:
//!
//! - **A record per replica**, bound to a lease of its own (a [`Membership`]: etcd keys
//!   `<prefix>/versa.dev/replicas/<identity>`, `versa-storage-etcd`), saying up to which revision of
//!   the stored definitions its writes follow (`applied`). A replica that dies stops renewing and
//!   its record disappears with its lease (the leader-election lease duration); a replica that
//!   only lags keeps it, and is waited for.
//! - **`applied` means writes, not just the registry.** The definitions controller calls
//!   [`Replicas::applied`] once it has served everything up to a revision; but a write that
//!   looked up its resource a moment before still uses the old one. So every mutating resource
//!   request is counted from before it looks the resource up until it is answered
//!   ([`Replicas::admit_write`], in `handler.rs`), by epoch, and a revision is published only
//!   once no write of an earlier epoch is in flight — kube's crdHandler waits for the old
//!   storage's in-flight requests in the same way before it publishes a new storage version.
//!   Requests are bounded by the request timeout, so this wait is too; watches write nothing and
//!   are not counted.
//! - **The leader waits** (`controllers/migration.rs`): a migration of a definition stored at
//!   revision R starts its walk only once every live record says `applied >= R`; meanwhile the
//!   definition's `StorageMigrating` condition names the replicas it waits for
//!   (`WaitingForReplicas`, then `ReplicasNotFollowing` once that has lasted a minute). There is
//!   no deadline after which it migrates anyway: a live replica that still writes the old
//!   version would undo the migration; only a dead replica's record expiring ends its wait.
//! - **Joining during a walk.** A replica that starts (or comes back after losing its record)
//!   during a walk was not among those waited for. Its record carries `since`, the oldest
//!   revision its writes since the record was created may have used; before trimming, the leader
//!   reads the records again, and one it had not seen with `since < R` means writes behind the
//!   walk may be at the old version: it waits again and walks everything again.
//! - **A replica without a live record takes no writes** (503 with `Retry-After`): before its
//!   first record (start-up; `/readyz` fails until then), and when no renewal has succeeded for
//!   the renew deadline (as a leader stops leading before its lease can run out) — for instance
//!   after the process was stopped, until it has written its record again.
//!
//! What remains: a write admitted just before its process freezes (or loses etcd's lease service
//! but not its key-value service) for longer than the record's lease, and stored after the walk
//! has passed its key — the fencing problem every lease-based scheme has without fencing
//! tokens in the write itself.
//!
//! Embedded storage is one process ([`Replicas::single`]): nothing to publish, nothing to wait
//! for, no counting.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{Notify, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use versa_storage::lock::{LockError, Member, Membership, ReplicaRecord};

use crate::status::Status;

/// How long the leader waits for lagging replicas before it says they are not following.
pub const NOT_FOLLOWING_AFTER: Duration = Duration::from_secs(60);

/// This replica's side of the agreement on definitions (see the module documentation).
#[derive(Debug)]
pub struct Replicas {
    identity: String,
    /// `None`: one process (embedded storage); everything here is then a no-op.
    membership: Option<Arc<dyn Membership>>,
    /// How often the record is renewed.
    renew_period: Duration,
    /// How long after the last successful renewal writes are still taken.
    renew_deadline: Duration,
    shared: Arc<Shared>,
    registered: watch::Sender<bool>,
}

/// What writes in flight and the publisher share.
#[derive(Debug, Default)]
struct Shared {
    gate: Mutex<Gate>,
    /// Something the publisher waits for changed: a revision applied or drained.
    changed: Notify,
}

#[derive(Debug, Default)]
struct Gate {
    /// Counts [`Replicas::applied`] calls; a write belongs to the epoch it entered in.
    epoch: u64,
    /// Writes in flight per epoch.
    in_flight: BTreeMap<u64, usize>,
    /// Revisions applied whose older writes are still in flight, with the epoch each began.
    pending: VecDeque<(i64, u64)>,
    /// The newest revision applied.
    applied: i64,
    /// The newest revision applied with no write of an earlier epoch in flight: what the record
    /// may say.
    drained: i64,
    /// Until when this replica's record is known to be alive (`None`: never written).
    live_until: Option<Instant>,
}

impl Gate {
    /// Moves `drained` past every pending revision no write in flight is older than.
    fn drain(&mut self) -> bool {
        let oldest = self.in_flight.keys().next().copied().unwrap_or(u64::MAX);
        let mut moved = false;
        while let Some(&(revision, epoch)) = self.pending.front() {
            if epoch > oldest {
                break;
            }
            self.pending.pop_front();
            self.drained = self.drained.max(revision);
            moved = true;
        }
        moved
    }
}

/// A mutating request in flight (see [`Replicas::admit_write`]); dropping it ends it.
#[derive(Debug)]
pub struct WriteGuard {
    shared: Arc<Shared>,
    epoch: u64,
}

impl Drop for WriteGuard {
    fn drop(&mut self) {
        let mut gate = lock(&self.shared.gate);
        if let Some(count) = gate.in_flight.get_mut(&self.epoch) {
            *count -= 1;
            if *count == 0 {
                gate.in_flight.remove(&self.epoch);
                if gate.drain() {
                    self.shared.changed.notify_one();
                }
            }
        }
    }
}

fn lock(gate: &Mutex<Gate>) -> MutexGuard<'_, Gate> {
    match gate.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// The leader's view of the replicas for one revision of a definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Followers {
    /// Every live record.
    pub members: Vec<Member>,
    /// The identities of those whose writes do not follow the revision yet.
    pub behind: Vec<String>,
}

impl Replicas {
    /// One process: no records, no waiting, nothing counted.
    pub fn single() -> Replicas {
        let (registered, _) = watch::channel(true);
        Replicas {
            identity: String::new(),
            membership: None,
            renew_period: Duration::from_secs(2),
            renew_deadline: Duration::from_secs(10),
            shared: Arc::default(),
            registered,
        }
    }

    /// Several replicas: this one's record is kept in `membership` under `identity`, renewed
    /// every `renew_period`; writes stop being taken `renew_deadline` after the last renewal
    /// that succeeded (shorter than the record's lease, as for leader election).
    pub fn new(
        identity: impl Into<String>,
        membership: Arc<dyn Membership>,
        renew_period: Duration,
        renew_deadline: Duration,
    ) -> Replicas {
        let (registered, _) = watch::channel(false);
        Replicas {
            identity: identity.into(),
            membership: Some(membership),
            renew_period,
            renew_deadline,
            shared: Arc::default(),
            registered,
        }
    }

    /// Whether there are other replicas to agree with.
    pub fn is_shared(&self) -> bool {
        self.membership.is_some()
    }

    /// How long a record outlives its replica (`None` with one process).
    pub fn record_ttl(&self) -> Option<Duration> {
        self.membership.as_ref().map(|m| m.ttl())
    }

    /// Admits a request: a mutating one (`mutating`) is counted until the guard is dropped —
    /// take it before looking up the served resource — and refused (503) while this replica
    /// has no live record. Reads pass uncounted.
    pub fn admit_write(&self, mutating: bool) -> Result<Option<WriteGuard>, Status> {
        if !mutating || self.membership.is_none() {
            return Ok(None);
        }
        let mut gate = lock(&self.shared.gate);
        if gate.live_until.is_none_or(|until| Instant::now() >= until) {
            let why = match gate.live_until {
                None => "this replica has not yet told the others which definitions it serves",
                Some(_) => "this replica could not renew its record of which definitions it serves",
            };
            return Err(Status::storage_unavailable(format!("{why}; try again (or another replica)")));
        }
        let epoch = gate.epoch;
        *gate.in_flight.entry(epoch).or_default() += 1;
        Ok(Some(WriteGuard { shared: self.shared.clone(), epoch }))
    }

    /// The definitions controller has served every definition change up to `revision`.
    pub fn applied(&self, revision: i64) {
        if self.membership.is_none() {
            return;
        }
        let mut gate = lock(&self.shared.gate);
        if revision <= gate.applied {
            return;
        }
        gate.applied = revision;
        gate.epoch += 1;
        let epoch = gate.epoch;
        gate.pending.push_back((revision, epoch));
        gate.drain();
        self.shared.changed.notify_one();
    }

    /// Resolves once this replica's record has been written (at once with one process).
    pub async fn registered(&self) {
        let mut rx = self.registered.subscribe();
        let _ = rx.wait_for(|r| *r).await;
    }

    /// Every live record, and which of them do not follow `revision` yet (none, with one
    /// process).
    pub async fn followers(&self, revision: i64) -> Result<Followers, LockError> {
        let Some(membership) = &self.membership else {
            return Ok(Followers { members: Vec::new(), behind: Vec::new() });
        };
        let members = membership.members().await?;
        let behind =
            members.iter().filter(|m| m.record.applied < revision).map(|m| m.record.identity.clone()).collect();
        Ok(Followers { members, behind })
    }

    /// Records alive now that are not in `seen` (by incarnation) and whose writes may have
    /// used a definition older than `revision`: replicas that joined during a walk behind it.
    pub async fn joined_behind(&self, seen: &[Member], revision: i64) -> Result<Vec<String>, LockError> {
        let Some(membership) = &self.membership else { return Ok(Vec::new()) };
        let now = membership.members().await?;
        Ok(now
            .into_iter()
            .filter(|m| {
                m.record.since < revision
                    && !seen.iter().any(|s| s.record.identity == m.record.identity && s.incarnation == m.incarnation)
            })
            .map(|m| m.record.identity)
            .collect())
    }

    /// Keeps this replica's record until `shutdown`, then withdraws it. Returns at once with
    /// one process.
    pub async fn run(self: Arc<Self>, shutdown: CancellationToken) {
        let Some(membership) = self.membership.clone() else { return };
        // The last record written, if any.
        let mut last: Option<ReplicaRecord> = None;
        loop {
            let notified = self.shared.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let drained = lock(&self.shared.gate).drained;
            // Nothing to say before the definitions have been loaded once.
            if drained > 0 && (last.as_ref().is_none_or(|r| r.applied < drained) || self.due(&last)) {
                self.publish(&*membership, &mut last, drained).await;
            }
            tokio::select! {
                () = tokio::time::sleep(self.renew_period) => {}
                () = &mut notified => {}
                () = shutdown.cancelled() => break,
            }
        }
        if last.is_some() {
            match membership.withdraw().await {
                Ok(()) => tracing::info!(records = %membership.describe(), "withdrew this replica's record"),
                Err(e) => tracing::warn!(error = %e, "withdrawing this replica's record"),
            }
        }
    }

    /// Whether a renewal is due (the record is renewed every renew period even when nothing
    /// changed).
    fn due(&self, last: &Option<ReplicaRecord>) -> bool {
        let gate = lock(&self.shared.gate);
        match (last, gate.live_until) {
            (Some(_), Some(until)) => until - self.renew_deadline + self.renew_period <= Instant::now(),
            _ => true,
        }
    }

    async fn publish(&self, membership: &dyn Membership, last: &mut Option<ReplicaRecord>, applied: i64) {
        // `since` belongs to the record's incarnation: its first `applied`, or — once a record
        // was lost and written again — the last `applied` of the lost one (every write since
        // then used that revision or a later one).
        let since = last.as_ref().map_or(applied, |r| r.since);
        let record = ReplicaRecord { identity: self.identity.clone(), applied, since };
        let started = Instant::now();
        match membership.publish(&record).await {
            Ok(existed) => {
                let record = match (&*last, existed) {
                    (Some(lost), false) => {
                        tracing::warn!(
                            records = %membership.describe(),
                            "this replica's record had expired and has been written again"
                        );
                        ReplicaRecord { since: lost.applied, ..record }
                    }
                    _ => record,
                };
                tracing::debug!(applied = record.applied, since = record.since, "published this replica's record");
                *last = Some(record);
                lock(&self.shared.gate).live_until = Some(started + self.renew_deadline);
                self.registered.send_replace(true);
            }
            Err(e) => tracing::warn!(error = %e, "cannot write this replica's record"),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "test code")]
mod tests {
    //! The publisher against an in-memory [`Membership`], on tokio's paused clock.

    use super::*;
    use versa_storage::BoxFuture;

    /// Records in memory; `alive` false makes the next publish find the record gone.
    #[derive(Debug, Default)]
    struct MemoryMembership {
        records: Mutex<BTreeMap<String, Member>>,
        next_incarnation: Mutex<i64>,
        fail: std::sync::atomic::AtomicBool,
    }

    impl MemoryMembership {
        fn expire(&self, identity: &str) {
            self.records.lock().unwrap().remove(identity);
        }

        fn record(&self, identity: &str) -> Option<Member> {
            self.records.lock().unwrap().get(identity).cloned()
        }
    }

    impl Membership for MemoryMembership {
        fn publish<'a>(&'a self, record: &'a ReplicaRecord) -> BoxFuture<'a, Result<bool, LockError>> {
            Box::pin(async move {
                if self.fail.load(std::sync::atomic::Ordering::SeqCst) {
                    return Err(LockError::Unavailable("down".into()));
                }
                let mut records = self.records.lock().unwrap();
                let existed = records.contains_key(&record.identity);
                let incarnation = match records.get(&record.identity) {
                    Some(m) => m.incarnation,
                    None => {
                        let mut n = self.next_incarnation.lock().unwrap();
                        *n += 1;
                        *n
                    }
                };
                records.insert(record.identity.clone(), Member { record: record.clone(), incarnation });
                Ok(existed)
            })
        }

        fn members(&self) -> BoxFuture<'_, Result<Vec<Member>, LockError>> {
            Box::pin(async move { Ok(self.records.lock().unwrap().values().cloned().collect()) })
        }

        fn withdraw(&self) -> BoxFuture<'_, Result<(), LockError>> {
            Box::pin(async move {
                self.records.lock().unwrap().clear();
                Ok(())
            })
        }

        fn ttl(&self) -> Duration {
            Duration::from_secs(3)
        }

        fn describe(&self) -> String {
            "memory".into()
        }
    }

    fn replicas(membership: &Arc<MemoryMembership>) -> Arc<Replicas> {
        Arc::new(Replicas::new("a", membership.clone(), Duration::from_millis(500), Duration::from_secs(2)))
    }

    /// Lets the publisher run until it waits again.
    async fn settle() {
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }

    #[tokio::test(start_paused = true)]
    async fn a_revision_is_published_once_no_older_write_is_in_flight() {
        let membership = Arc::new(MemoryMembership::default());
        let replicas = replicas(&membership);
        let shutdown = CancellationToken::new();
        let task = tokio::spawn(replicas.clone().run(shutdown.clone()));

        // Before the first record: writes are refused, reads pass.
        assert!(replicas.admit_write(true).is_err());
        assert!(replicas.admit_write(false).unwrap().is_none());
        replicas.applied(10);
        replicas.registered().await;
        assert_eq!(
            membership.record("a").unwrap().record,
            ReplicaRecord { identity: "a".into(), applied: 10, since: 10 }
        );

        // A write that began before revision 20 was applied holds the record at 10; one that
        // began after does not.
        let old = replicas.admit_write(true).unwrap().expect("counted");
        replicas.applied(20);
        let new = replicas.admit_write(true).unwrap().expect("counted");
        settle().await;
        assert_eq!(membership.record("a").unwrap().record.applied, 10);
        drop(old);
        settle().await;
        assert_eq!(membership.record("a").unwrap().record.applied, 20);
        drop(new);

        // The leader's view.
        let followers = replicas.followers(20).await.unwrap();
        assert!(followers.behind.is_empty());
        assert_eq!(replicas.followers(21).await.unwrap().behind, vec!["a".to_owned()]);

        shutdown.cancel();
        task.await.unwrap();
        assert!(membership.record("a").is_none(), "withdrawn on shutdown");
    }

    #[tokio::test(start_paused = true)]
    async fn a_lost_record_stops_writes_and_comes_back_as_another_incarnation() {
        let membership = Arc::new(MemoryMembership::default());
        let replicas = replicas(&membership);
        let shutdown = CancellationToken::new();
        let task = tokio::spawn(replicas.clone().run(shutdown.clone()));
        replicas.applied(10);
        replicas.registered().await;
        replicas.applied(15);
        settle().await;
        let seen = replicas.followers(15).await.unwrap().members;
        assert_eq!(seen[0].record.since, 10);

        // Renewals fail past the renew deadline: writes are refused.
        membership.fail.store(true, std::sync::atomic::Ordering::SeqCst);
        tokio::time::sleep(Duration::from_secs(3)).await;
        assert!(replicas.admit_write(true).is_err());

        // The record expired meanwhile; once etcd answers it is written again, a new
        // incarnation whose writes followed revision 15 at least — not behind a walk at 15,
        // behind one at 16.
        membership.expire("a");
        membership.fail.store(false, std::sync::atomic::Ordering::SeqCst);
        tokio::time::sleep(Duration::from_secs(1)).await;
        settle().await;
        assert!(replicas.admit_write(true).unwrap().is_some());
        tokio::time::sleep(Duration::from_secs(1)).await;
        let again = membership.record("a").unwrap();
        assert_ne!(again.incarnation, seen[0].incarnation);
        assert_eq!(again.record.since, 15);
        assert!(replicas.joined_behind(&seen, 15).await.unwrap().is_empty());
        assert_eq!(replicas.joined_behind(&seen, 16).await.unwrap(), vec!["a".to_owned()]);
        assert!(replicas.joined_behind(&[again], 16).await.unwrap().is_empty(), "seen: not joined");

        shutdown.cancel();
        task.await.unwrap();
    }

    #[tokio::test]
    async fn one_process_agrees_with_itself() {
        let replicas = Replicas::single();
        replicas.registered().await;
        assert!(replicas.admit_write(true).unwrap().is_none());
        replicas.applied(5);
        assert!(replicas.followers(100).await.unwrap().behind.is_empty());
        assert!(replicas.joined_behind(&[], 100).await.unwrap().is_empty());
    }
}
