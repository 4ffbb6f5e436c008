//! Leader election: which replica does the work that must happen once — definition status,
//! storage migration, cleanup of deleted definitions, APIService registration, standalone's
//! namespace controller. Every replica serves; only the leader runs those.
//!
//! The algorithm is client-go's `tools/leaderelection`, over a [`LeaseLock`] (a
//! `coordination.k8s.io/v1` Lease, `cluster/lease_lock.rs`, or an etcd key bound to an etcd lease,
//! `versa-storage-etcd`):
//!
//! - a candidate reads the record; it may take it when nobody holds it (`holderIdentity` empty,
//!   or no record) or when the record has not changed for `leaseDurationSeconds` *as measured
//!   on its own clock from when it saw the last change* — never by comparing its clock with the
//!   holder's `renewTime`, so clock offsets between replicas do not matter, only their rates;
//! - taking it writes `holderIdentity`, `leaseDurationSeconds`, `acquireTime` = `renewTime` =
//!   now and `leaderTransitions` + 1 with compare-and-swap, so of two candidates one wins;
//! - the leader renews every `--leader-elect-retry-period` (`renewTime` = now, the rest kept);
//!   attempts are retried every retry period, and if none has succeeded for
//!   `--leader-elect-renew-deadline` the leader gives up: its term ends and every task of the
//!   term is cancelled. Since the renew deadline is shorter than the lease duration, that
//!   happens before anyone else may take over. (client-go counts the deadline from the start of
//!   a renewal round, a retry period after the last success; versa counts it from the last
//!   success, which leaves the leader-only work a wider margin to stop.)
//! - candidates retry every retry period, jittered by up to [`JITTER_FACTOR`] of it;
//! - on shutdown the leader releases (`holderIdentity` empty, `leaseDurationSeconds` 1), as
//!   client-go does with `ReleaseOnCancel`, so a rolling update hands over at once;
//! - after losing, a replica becomes a candidate again (kube components exit instead; versa
//!   keeps serving, which needs no leadership).
//!
//! With an etcd lock the key also disappears when its holder's etcd lease runs out; a candidate
//! that then creates the record counts `leaderTransitions` on from the record it last saw.
//!
//! The rest of the server sees a [`Leadership`]: the current term (a [`CancellationToken`],
//! cancelled when the term ends) or none. Embedded storage is one process by construction (the
//! data directory is locked), so it uses [`Leadership::always`] and elects nobody.
//!
//! Time: record times come from a [`Clock`] (the system clock, or a fake one in tests);
//! durations are measured with tokio's monotonic clock, which tests pause and advance.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use versa_storage::lock::{LeaderElectionRecord, LeaseLock, LockError};

/// How much candidates' retries are spread: a retry waits between one and 1 + this many retry
/// periods (client-go's `JitterFactor`).
pub const JITTER_FACTOR: f64 = 1.2;

/// The timings of an election, as kube components take them from `--leader-elect-*`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElectionConfig {
    /// This replica's name in the record (`holderIdentity`); unique per process.
    pub identity: String,
    /// How long candidates wait, after the last change they saw, before taking the lock.
    pub lease_duration: Duration,
    /// How long the leader keeps trying to renew before it gives up leading.
    pub renew_deadline: Duration,
    /// How often candidates try to acquire and the leader renews.
    pub retry_period: Duration,
}

impl ElectionConfig {
    /// kube components' defaults (15 s, 10 s, 2 s) for `identity`.
    pub fn new(identity: impl Into<String>) -> ElectionConfig {
        ElectionConfig {
            identity: identity.into(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }

    /// The checks client-go's `NewLeaderElector` makes, with its messages.
    pub fn validate(&self) -> Result<(), ElectionConfigError> {
        use ElectionConfigError as E;
        if self.lease_duration <= self.renew_deadline {
            return Err(E::LeaseNotAfterRenew);
        }
        if self.renew_deadline.as_secs_f64() <= JITTER_FACTOR * self.retry_period.as_secs_f64() {
            return Err(E::RenewNotAfterRetry);
        }
        if self.lease_duration.is_zero() {
            return Err(E::ZeroLease);
        }
        if self.renew_deadline.is_zero() {
            return Err(E::ZeroRenew);
        }
        if self.retry_period.is_zero() {
            return Err(E::ZeroRetry);
        }
        if self.lease_duration.as_secs() < 1 {
            // The record counts whole seconds.
            return Err(E::LeaseUnderOneSecond);
        }
        if self.identity.is_empty() {
            return Err(E::EmptyIdentity);
        }
        Ok(())
    }
}

/// An [`ElectionConfig`] client-go would refuse, with its message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ElectionConfigError {
    #[error("leaseDuration must be greater than renewDeadline")]
    LeaseNotAfterRenew,
    #[error("renewDeadline must be greater than retryPeriod*JitterFactor")]
    RenewNotAfterRetry,
    #[error("leaseDuration must be greater than zero")]
    ZeroLease,
    #[error("renewDeadline must be greater than zero")]
    ZeroRenew,
    #[error("retryPeriod must be greater than zero")]
    ZeroRetry,
    /// Not client-go's: the Lease record counts whole seconds.
    #[error("leaseDuration must be at least one second")]
    LeaseUnderOneSecond,
    #[error("Lock identity is empty")]
    EmptyIdentity,
}

/// Where record times come from.
pub trait Clock: Send + Sync + std::fmt::Debug {
    fn now(&self) -> SystemTime;
}

/// The system's clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// What the server sees of the election: whether this replica leads now, the term's token, and
/// who holds the lock as last seen.
#[derive(Debug, Clone)]
pub struct Leadership {
    term: watch::Receiver<Option<CancellationToken>>,
    holder: Arc<Mutex<Option<String>>>,
    /// Whether there is an election at all (false: [`Leadership::always`]).
    elected: bool,
}

impl Leadership {
    /// No election: this process leads for as long as it runs (embedded storage, or
    /// `--leader-elect=false`).
    pub fn always() -> Leadership {
        let (tx, term) = watch::channel(Some(CancellationToken::new()));
        // Nobody ever changes the term; the receiver keeps its value after the sender is gone.
        drop(tx);
        Leadership { term, holder: Arc::new(Mutex::new(None)), elected: false }
    }

    /// Whether leadership is elected (false: this process always leads).
    pub fn is_elected(&self) -> bool {
        self.elected
    }

    /// The current term, if this replica leads.
    pub fn term(&self) -> Option<CancellationToken> {
        self.term.borrow().clone().filter(|t| !t.is_cancelled())
    }

    pub fn is_leader(&self) -> bool {
        self.term().is_some()
    }

    /// The holder of the lock as this replica last saw it (`None` without an election, or
    /// before the first read).
    pub fn holder(&self) -> Option<String> {
        match self.holder.lock() {
            Ok(g) => g.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Waits until this replica leads and returns the term; `None` once the election has ended
    /// (shutdown) without this replica leading.
    pub async fn next_term(&mut self) -> Option<CancellationToken> {
        loop {
            if let Some(term) = self.term() {
                return Some(term);
            }
            if self.term.changed().await.is_err() {
                return self.term();
            }
        }
    }

    /// Resolves when a term starts or ends (never, without an election).
    pub async fn changed(&mut self) {
        if self.term.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// Runs `work` in every term this replica leads, cancelling it when the term ends, until
/// `shutdown`.
pub async fn while_leading<F, Fut>(mut leadership: Leadership, shutdown: CancellationToken, mut work: F)
where
    F: FnMut(CancellationToken) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    loop {
        let term = tokio::select! {
            t = leadership.next_term() => t,
            () = shutdown.cancelled() => return,
        };
        let Some(term) = term else { return };
        tokio::select! {
            () = work(term.clone()) => {
                // The work ended on its own (it ends at shutdown): wait for the term to end
                // rather than start it again at once.
                tokio::select! {
                    () = term.cancelled() => {}
                    () = shutdown.cancelled() => return,
                }
            }
            () = term.cancelled() => {}
            () = shutdown.cancelled() => return,
        }
    }
}

/// Starts the election; it runs until `shutdown` (then releases the lock if it holds it).
pub fn start(
    lock: Arc<dyn LeaseLock>,
    config: ElectionConfig,
    clock: Arc<dyn Clock>,
    shutdown: CancellationToken,
) -> Leadership {
    let (leadership, campaign) = prepare(lock, config, clock);
    drop(campaign.spawn(shutdown));
    leadership
}

/// The election, not yet running: what the server shares at once, and the task to start with
/// it.
pub fn prepare(lock: Arc<dyn LeaseLock>, config: ElectionConfig, clock: Arc<dyn Clock>) -> (Leadership, Campaign) {
    let (tx, term) = watch::channel(None);
    let holder = Arc::new(Mutex::new(None));
    let elector =
        Elector { lock, config, clock, observed: None, observed_time: Instant::now(), holder: holder.clone() };
    (Leadership { term, holder, elected: true }, Campaign { elector, tx })
}

/// A prepared election ([`prepare`]).
#[derive(Debug)]
pub struct Campaign {
    elector: Elector,
    tx: watch::Sender<Option<CancellationToken>>,
}

impl Campaign {
    /// Runs the election until `shutdown`; the task ends once the lock is released.
    pub fn spawn(self, shutdown: CancellationToken) -> tokio::task::JoinHandle<()> {
        tokio::spawn(self.elector.run(self.tx, shutdown))
    }
}

/// The record as last read or written, with its version.
#[derive(Debug, Clone)]
struct Observed {
    record: LeaderElectionRecord,
    version: String,
}

#[derive(Debug)]
struct Elector {
    lock: Arc<dyn LeaseLock>,
    config: ElectionConfig,
    clock: Arc<dyn Clock>,
    observed: Option<Observed>,
    /// When the observed record last changed, on this replica's monotonic clock.
    observed_time: Instant,
    holder: Arc<Mutex<Option<String>>>,
}

impl Elector {
    async fn run(mut self, term_tx: watch::Sender<Option<CancellationToken>>, shutdown: CancellationToken) {
        let lock = self.lock.describe();
        let identity = self.config.identity.clone();
        loop {
            // Acquire.
            loop {
                if self.attempt(Instant::now() + self.config.renew_deadline).await {
                    break;
                }
                tokio::select! {
                    () = tokio::time::sleep(jittered(self.config.retry_period)) => {}
                    () = shutdown.cancelled() => return,
                }
            }
            tracing::info!(lock = %lock, identity = %identity, "successfully acquired lease; leading");
            let term = shutdown.child_token();
            term_tx.send_replace(Some(term.clone()));
            // Renew until a renewal deadline passes without success, or shutdown.
            let mut renewed = Instant::now();
            let lost = loop {
                tokio::select! {
                    () = tokio::time::sleep(self.config.retry_period) => {}
                    () = shutdown.cancelled() => break false,
                }
                let deadline = renewed + self.config.renew_deadline;
                if self.attempt(deadline).await {
                    renewed = Instant::now();
                } else if Instant::now() + self.config.retry_period >= deadline {
                    // The next attempt would come after the deadline.
                    break true;
                }
            };
            term.cancel();
            term_tx.send_replace(None);
            if !lost {
                self.release().await;
                return;
            }
            tracing::warn!(lock = %lock, identity = %identity, "failed to renew lease: leading ended");
        }
    }

    /// One [`Elector::try_acquire_or_renew`] that must finish by `deadline`.
    async fn attempt(&mut self, deadline: Instant) -> bool {
        match tokio::time::timeout_at(deadline, self.try_acquire_or_renew()).await {
            Ok(Ok(true)) => true,
            Ok(Ok(false)) => false,
            Ok(Err(e)) => {
                tracing::info!(lock = %self.lock.describe(), error = %e, "failed to acquire or renew lease");
                false
            }
            Err(_) => {
                tracing::info!(lock = %self.lock.describe(), "acquiring or renewing the lease timed out");
                false
            }
        }
    }

    fn is_leader(&self) -> bool {
        self.observed.as_ref().is_some_and(|o| o.record.holder_identity == self.config.identity)
    }

    /// Whether the observed record is still within its lease, by the local clock.
    fn lease_valid(&self, now: Instant) -> bool {
        let seconds = self.observed.as_ref().map_or(0, |o| o.record.lease_duration_seconds.max(0));
        self.observed_time + Duration::from_secs(seconds as u64) > now
    }

    fn set_observed(&mut self, record: LeaderElectionRecord, version: String, now: Instant) {
        let holder = Some(record.holder_identity.clone()).filter(|h| !h.is_empty());
        match self.holder.lock() {
            Ok(mut g) => *g = holder,
            Err(poisoned) => *poisoned.into_inner() = holder,
        }
        self.observed = Some(Observed { record, version });
        self.observed_time = now;
    }

    /// client-go's `tryAcquireOrRenew`: true when this replica holds the lock afterwards.
    async fn try_acquire_or_renew(&mut self) -> Result<bool, LockError> {
        let (wall, now) = (self.clock.now(), Instant::now());
        let mut record = LeaderElectionRecord {
            holder_identity: self.config.identity.clone(),
            lease_duration_seconds: self.config.lease_duration.as_secs() as i64,
            acquire_time: wall,
            renew_time: wall,
            leader_transitions: 0,
        };
        // The leader renews from what it wrote last, without reading first.
        if self.is_leader()
            && self.lease_valid(now)
            && let Some(old) = self.observed.clone()
        {
            record.acquire_time = old.record.acquire_time;
            record.leader_transitions = old.record.leader_transitions;
            match self.lock.update(&record, &old.version).await {
                Ok(version) => {
                    self.set_observed(record, version, now);
                    return Ok(true);
                }
                Err(e) => {
                    tracing::debug!(error = %e, "failed to update the lock optimistically; reading it");
                }
            }
        }
        let Some((old, version)) = self.lock.get().await? else {
            // No record (never created, or an etcd key whose lease ran out): transitions count
            // on from the last record seen.
            if let Some(seen) = &self.observed
                && !self.is_leader()
            {
                record.leader_transitions = seen.record.leader_transitions + 1;
            }
            return match self.lock.create(&record).await {
                Ok(version) => {
                    self.set_observed(record, version, now);
                    Ok(true)
                }
                Err(LockError::Conflict(_)) => Ok(false),
                Err(e) => Err(e),
            };
        };
        if self.observed.as_ref().is_none_or(|o| o.record != old) {
            self.set_observed(old.clone(), version.clone(), now);
        } else if let Some(o) = &mut self.observed {
            o.version = version.clone();
        }
        if !old.holder_identity.is_empty() && self.lease_valid(now) && !self.is_leader() {
            tracing::debug!(holder = %old.holder_identity, "lock is held and has not yet expired");
            return Ok(false);
        }
        if self.is_leader() {
            record.acquire_time = old.acquire_time;
            record.leader_transitions = old.leader_transitions;
        } else {
            record.leader_transitions = old.leader_transitions + 1;
        }
        match self.lock.update(&record, &version).await {
            Ok(version) => {
                self.set_observed(record, version, now);
                Ok(true)
            }
            Err(LockError::Conflict(_)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Gives the lock up (on shutdown), so that another replica need not wait a lease duration.
    async fn release(&mut self) {
        if !self.is_leader() {
            return;
        }
        let Some(old) = self.observed.clone() else { return };
        let wall = self.clock.now();
        let record = LeaderElectionRecord {
            holder_identity: String::new(),
            lease_duration_seconds: 1,
            acquire_time: wall,
            renew_time: wall,
            leader_transitions: old.record.leader_transitions,
        };
        let deadline = Instant::now() + self.config.renew_deadline;
        match tokio::time::timeout_at(deadline, self.lock.update(&record, &old.version)).await {
            Ok(Ok(version)) => {
                tracing::info!(lock = %self.lock.describe(), "released the lease");
                self.set_observed(record, version, Instant::now());
            }
            Ok(Err(e)) => tracing::warn!(lock = %self.lock.describe(), error = %e, "failed to release the lease"),
            Err(_) => tracing::warn!(lock = %self.lock.describe(), "releasing the lease timed out"),
        }
    }
}

/// `period` stretched by a random fraction of up to [`JITTER_FACTOR`] (client-go's
/// `wait.Jitter`).
fn jittered(period: Duration) -> Duration {
    let mut bytes = [0u8; 4];
    let fraction = match ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes) {
        Ok(()) => f64::from(u32::from_le_bytes(bytes)) / f64::from(u32::MAX),
        Err(_) => 0.5,
    };
    period.mul_f64(1.0 + JITTER_FACTOR * fraction)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "test code")]
mod tests {
    //! Every test runs on tokio's paused clock: time moves only when all tasks wait, straight
    //! to the next timer, so the sequences below are exact and take no real time.

    use std::sync::atomic::{AtomicBool, Ordering};

    use versa_storage::BoxFuture;

    use super::*;

    /// Record times follow the paused tokio clock from a fixed start.
    #[derive(Debug)]
    struct FakeClock {
        wall: SystemTime,
        start: Instant,
    }

    impl FakeClock {
        fn new() -> Arc<FakeClock> {
            Arc::new(FakeClock {
                wall: SystemTime::UNIX_EPOCH + Duration::from_secs(1_780_000_000),
                start: Instant::now(),
            })
        }
    }

    impl Clock for FakeClock {
        fn now(&self) -> SystemTime {
            self.wall + (Instant::now() - self.start)
        }
    }

    /// One record shared by every candidate's handle; a handle can be cut off (its calls fail,
    /// as when its replica loses the network).
    #[derive(Debug, Default)]
    struct Shared {
        record: Mutex<Option<(LeaderElectionRecord, u64)>>,
    }

    #[derive(Debug)]
    struct MemoryLock {
        shared: Arc<Shared>,
        cut_off: AtomicBool,
    }

    impl MemoryLock {
        fn new(shared: &Arc<Shared>) -> Arc<MemoryLock> {
            Arc::new(MemoryLock { shared: shared.clone(), cut_off: AtomicBool::new(false) })
        }

        fn check(&self) -> Result<(), LockError> {
            if self.cut_off.load(Ordering::SeqCst) { Err(LockError::Unavailable("cut off".into())) } else { Ok(()) }
        }
    }

    impl LeaseLock for MemoryLock {
        fn get(&self) -> BoxFuture<'_, Result<Option<(LeaderElectionRecord, String)>, LockError>> {
            Box::pin(async move {
                self.check()?;
                Ok(self.shared.record.lock().unwrap().clone().map(|(r, v)| (r, v.to_string())))
            })
        }

        fn create<'a>(&'a self, record: &'a LeaderElectionRecord) -> BoxFuture<'a, Result<String, LockError>> {
            Box::pin(async move {
                self.check()?;
                let mut slot = self.shared.record.lock().unwrap();
                if slot.is_some() {
                    return Err(LockError::Conflict("memory".into()));
                }
                *slot = Some((record.clone(), 1));
                Ok("1".into())
            })
        }

        fn update<'a>(
            &'a self,
            record: &'a LeaderElectionRecord,
            version: &'a str,
        ) -> BoxFuture<'a, Result<String, LockError>> {
            Box::pin(async move {
                self.check()?;
                let mut slot = self.shared.record.lock().unwrap();
                match slot.as_ref() {
                    Some((_, v)) if v.to_string() == version => {
                        let next = v + 1;
                        *slot = Some((record.clone(), next));
                        Ok(next.to_string())
                    }
                    _ => Err(LockError::Conflict("memory".into())),
                }
            })
        }

        fn describe(&self) -> String {
            "memory".into()
        }
    }

    fn record(shared: &Shared) -> LeaderElectionRecord {
        shared.record.lock().unwrap().clone().unwrap().0
    }

    fn candidate(
        shared: &Arc<Shared>,
        identity: &str,
        clock: &Arc<FakeClock>,
    ) -> (Leadership, Arc<MemoryLock>, CancellationToken) {
        let lock = MemoryLock::new(shared);
        let shutdown = CancellationToken::new();
        let leadership = start(lock.clone(), ElectionConfig::new(identity), clock.clone(), shutdown.clone());
        (leadership, lock, shutdown)
    }

    /// Lets the electors run until every one waits for a timer `d` ahead (or beyond).
    async fn advance(d: Duration) {
        tokio::time::sleep(d).await;
    }

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[tokio::test(start_paused = true)]
    async fn one_leader_holds_and_renews() {
        let (shared, clock) = (Arc::new(Shared::default()), FakeClock::new());
        let start = clock.now();
        let (mut a, _, _a_stop) = candidate(&shared, "a", &clock);
        let term = a.next_term().await.unwrap();
        let (b, _, _b_stop) = candidate(&shared, "b", &clock);
        advance(secs(1)).await;
        assert!(a.is_leader() && !b.is_leader());
        assert_eq!(b.holder().as_deref(), Some("a"), "the follower sees who leads");
        let r = record(&shared);
        assert_eq!((r.holder_identity.as_str(), r.lease_duration_seconds, r.leader_transitions), ("a", 15, 0));
        assert_eq!((r.acquire_time, r.renew_time), (start, start));

        // A minute of renewals every retry period: the follower never takes over.
        advance(secs(60)).await;
        assert!(!term.is_cancelled() && !b.is_leader());
        let r = record(&shared);
        assert_eq!(r.acquire_time, start, "acquireTime stays");
        assert!(r.renew_time >= start + secs(58), "renewTime moves with each renewal");
        assert_eq!(r.leader_transitions, 0);
    }

    #[tokio::test(start_paused = true)]
    async fn losing_the_lock_ends_the_term_before_anyone_takes_over() {
        let (shared, clock) = (Arc::new(Shared::default()), FakeClock::new());
        let (mut a, a_lock, _a_stop) = candidate(&shared, "a", &clock);
        let term = a.next_term().await.unwrap();
        let (mut b, _, _b_stop) = candidate(&shared, "b", &clock);
        advance(secs(3)).await;
        let last = record(&shared).renew_time;

        // a is cut off from the lock: its renewals fail.
        a_lock.cut_off.store(true, Ordering::SeqCst);
        let cut = Instant::now();
        term.cancelled().await;
        let ended = Instant::now();
        assert!(!a.is_leader());
        assert!(ended - cut <= secs(10), "the term ends within the renew deadline");
        assert!(!b.is_leader(), "b waits a whole lease duration from the last change it saw");

        let b_term = b.next_term().await.unwrap();
        assert!(term.is_cancelled(), "never two terms at once");
        let r = record(&shared);
        assert_eq!(r.holder_identity, "b");
        assert_eq!(r.leader_transitions, 1);
        assert!(r.acquire_time >= last + secs(15), "b took over only after the lease expired");
        assert_eq!(r.acquire_time, r.renew_time);

        // a's network returns: it sees b hold the lock and stays a follower.
        a_lock.cut_off.store(false, Ordering::SeqCst);
        advance(secs(30)).await;
        assert!(!a.is_leader() && !b_term.is_cancelled());
        assert_eq!(a.holder().as_deref(), Some("b"));
    }

    #[tokio::test(start_paused = true)]
    async fn release_on_shutdown_hands_over_without_waiting() {
        let (shared, clock) = (Arc::new(Shared::default()), FakeClock::new());
        let (mut a, _, a_stop) = candidate(&shared, "a", &clock);
        let term = a.next_term().await.unwrap();
        let (mut b, _, _b_stop) = candidate(&shared, "b", &clock);
        advance(secs(5)).await;
        a_stop.cancel();
        term.cancelled().await;
        let released = Instant::now();
        advance(Duration::from_millis(1)).await;
        let r = record(&shared);
        assert_eq!((r.holder_identity.as_str(), r.lease_duration_seconds), ("", 1));
        b.next_term().await.unwrap();
        assert!(Instant::now() - released <= secs(5), "b takes over at its next retry, not a lease duration later");
        let r = record(&shared);
        assert_eq!((r.holder_identity.as_str(), r.leader_transitions), ("b", 1));
    }

    #[tokio::test(start_paused = true)]
    async fn a_vanished_record_counts_transitions_on() {
        let (shared, clock) = (Arc::new(Shared::default()), FakeClock::new());
        let (mut a, a_lock, _a_stop) = candidate(&shared, "a", &clock);
        a.next_term().await.unwrap();
        let (mut b, _, _b_stop) = candidate(&shared, "b", &clock);
        advance(secs(3)).await;
        // a dies and its etcd lease deletes the key.
        a_lock.cut_off.store(true, Ordering::SeqCst);
        *shared.record.lock().unwrap() = None;
        b.next_term().await.unwrap();
        assert_eq!(record(&shared).leader_transitions, 1);
    }

    #[tokio::test(start_paused = true)]
    async fn while_leading_stops_the_work_with_the_term() {
        let (shared, clock) = (Arc::new(Shared::default()), FakeClock::new());
        let (a, a_lock, _a_stop) = candidate(&shared, "a", &clock);
        let runs = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let running = Arc::new(AtomicBool::new(false));
        let (r, g) = (runs.clone(), running.clone());
        let shutdown = CancellationToken::new();
        tokio::spawn(while_leading(a.clone(), shutdown.clone(), move |_term| {
            let (r, g) = (r.clone(), g.clone());
            async move {
                r.fetch_add(1, Ordering::SeqCst);
                g.store(true, Ordering::SeqCst);
                // Marks itself stopped when dropped (the term ended).
                struct Stop(Arc<AtomicBool>);
                impl Drop for Stop {
                    fn drop(&mut self) {
                        self.0.store(false, Ordering::SeqCst);
                    }
                }
                let _stop = Stop(g);
                std::future::pending::<()>().await;
            }
        }));
        advance(secs(1)).await;
        assert!(running.load(Ordering::SeqCst));
        a_lock.cut_off.store(true, Ordering::SeqCst);
        advance(secs(12)).await;
        assert!(!a.is_leader() && !running.load(Ordering::SeqCst), "losing leadership stops the work");
        a_lock.cut_off.store(false, Ordering::SeqCst);
        advance(secs(5)).await;
        assert!(a.is_leader(), "nobody else took the lock: a leads again");
        assert!(running.load(Ordering::SeqCst));
        assert_eq!(runs.load(Ordering::SeqCst), 2, "the work starts again in the new term");
        shutdown.cancel();
    }

    #[test]
    fn config_is_checked_as_client_go_checks_it() {
        let ok = ElectionConfig::new("a");
        assert_eq!(ok.validate(), Ok(()));
        let with = |f: fn(&mut ElectionConfig)| {
            let mut c = ok.clone();
            f(&mut c);
            c.validate().unwrap_err().to_string()
        };
        assert_eq!(with(|c| c.renew_deadline = secs(15)), "leaseDuration must be greater than renewDeadline");
        assert_eq!(with(|c| c.retry_period = secs(9)), "renewDeadline must be greater than retryPeriod*JitterFactor");
        assert_eq!(with(|c| c.identity.clear()), "Lock identity is empty");
    }

    #[test]
    fn always_leads() {
        let l = Leadership::always();
        assert!(l.is_leader() && !l.is_elected());
    }
}
