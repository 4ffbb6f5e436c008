//! Leases kept in etcd: [`EtcdLeaseLock`], leader election's lock as an etcd key bound to an
//! etcd lease — what replicas on one etcd use when there is no cluster to hold a
//! `coordination.k8s.io` Lease — and [`EtcdMembership`], each replica's [`ReplicaRecord`] bound
//! to a lease of its own. Both hold their lease through one [`KeptLease`]: granted when first
//! needed (or again after it ran out), kept alive on every write, revoked when given up.
//!
//! The lock's key holds the [`LeaderElectionRecord`] as JSON, in the Lease spec's field names
//! and RFC 3339 times (so `etcdctl get` reads like `kubectl get lease -o yaml`). Every write is
//! one transaction whose compare is the version the elector read (the key's modification
//! revision; for a create, that the key does not exist), so two candidates never both win.
//!
//! The holder's writes attach the key to an etcd lease whose TTL is the record's
//! `leaseDurationSeconds`, kept alive on every renewal: if the holder dies, etcd itself deletes
//! the key once the TTL runs out, and no stale record outlives it. (The elector still waits a
//! lease duration from the last change it saw, as kube's does; etcd's TTL is the second,
//! server-side clock.) A release writes the record with no holder and no lease, then revokes
//! the lease.
//!
//! A replica's record is one key per replica under a common prefix
//! (`<prefix>/versa.dev/replicas/<identity>`), JSON, written with a plain put bound to the
//! replica's lease (only its replica writes it); the key's creation revision tells one life of
//! a record from the next.

use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use etcd_client::{
    Client, Compare, CompareOp, ConnectOptions, GetOptions, KvClient, LeaseClient, PutOptions, Txn, TxnOp,
};
use serde_json::{Value, json};
use versa_storage::BoxFuture;
use versa_storage::lock::{LeaderElectionRecord, LeaseLock, LockError, Member, Membership, ReplicaRecord};

use crate::config::EtcdConfig;

/// A connection of its own (renewals do not queue behind the store's traffic).
async fn connect(config: &EtcdConfig) -> versa_storage::Result<Client> {
    let mut options = ConnectOptions::new().with_connect_timeout(config.connect_timeout);
    if let Some(tls) = &config.tls {
        options = options.with_tls(tls.client_options()?);
    }
    let endpoints = config.endpoints.join(", ");
    Client::connect(&config.endpoints, Some(options))
        .await
        .map_err(|e| versa_storage::Error::unavailable(format!("connecting to etcd at {endpoints}"), e))
}

/// One etcd request about `key`, bounded by `timeout`; errors say what and where.
async fn call<T>(
    timeout: Duration,
    key: &str,
    what: &str,
    request: impl Future<Output = Result<T, etcd_client::Error>>,
) -> Result<T, LockError> {
    match tokio::time::timeout(timeout, request).await {
        Ok(Ok(response)) => Ok(response),
        Ok(Err(e)) => Err(LockError::Unavailable(format!("etcd {what} of {key}: {e}"))),
        Err(_) => Err(LockError::Unavailable(format!("etcd {what} of {key}: no answer within {timeout:?}"))),
    }
}

/// The etcd lease a key of this process is bound to: the one place leases are granted, kept
/// alive and revoked.
struct KeptLease {
    client: LeaseClient,
    /// The key bound to it, for messages.
    key: String,
    request_timeout: Duration,
    /// The lease, with its TTL; `None` until one is needed.
    held: Mutex<Option<(i64, i64)>>,
}

impl KeptLease {
    fn new(client: LeaseClient, key: &str, request_timeout: Duration) -> KeptLease {
        KeptLease { client, key: key.to_owned(), request_timeout, held: Mutex::new(None) }
    }

    fn held(&self) -> Option<(i64, i64)> {
        match self.held.lock() {
            Ok(g) => *g,
            Err(poisoned) => *poisoned.into_inner(),
        }
    }

    fn set_held(&self, lease: Option<(i64, i64)>) {
        match self.held.lock() {
            Ok(mut g) => *g = lease,
            Err(poisoned) => *poisoned.into_inner() = lease,
        }
    }

    /// The lease: the current one, kept alive, or a fresh one (when none is held, it expired,
    /// or the TTL changed). Whether it is fresh — a key bound to the old one is gone.
    async fn live(&self, ttl: i64) -> Result<(i64, bool), LockError> {
        if let Some((id, held_ttl)) = self.held()
            && held_ttl == ttl
        {
            let mut client = self.client.clone();
            let kept = call(self.request_timeout, &self.key, "lease keep-alive", async move {
                let (mut keeper, mut stream) = client.keep_alive(id).await?;
                keeper.keep_alive().await?;
                stream.message().await
            })
            .await;
            // A TTL of 0, or "lease not found", means it has expired (and its key is gone); if
            // etcd is unreachable, the grant below fails too.
            if kept.is_ok_and(|k| k.is_some_and(|k| k.ttl() > 0)) {
                return Ok((id, false));
            }
        }
        let mut client = self.client.clone();
        let granted = call(self.request_timeout, &self.key, "lease grant", client.grant(ttl.max(1), None)).await?;
        self.set_held(Some((granted.id(), ttl)));
        Ok((granted.id(), true))
    }

    /// Gives the lease up (its keys go with it); if the revoke fails, the lease just runs out.
    async fn revoke(&self) {
        let Some((id, _)) = self.held() else { return };
        self.set_held(None);
        let mut client = self.client.clone();
        let _ = call(self.request_timeout, &self.key, "lease revoke", client.revoke(id)).await;
    }
}

/// A leader-election lock on one etcd key (see the module documentation).
pub struct EtcdLeaseLock {
    kv: KvClient,
    lease: KeptLease,
    key: String,
    request_timeout: Duration,
}

impl std::fmt::Debug for EtcdLeaseLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdLeaseLock").field("key", &self.key).finish_non_exhaustive()
    }
}

impl EtcdLeaseLock {
    /// Connects (a connection of its own: renewals do not queue behind the store's traffic) to
    /// keep the record at `key`.
    pub async fn connect(config: &EtcdConfig, key: impl Into<String>) -> versa_storage::Result<EtcdLeaseLock> {
        let client = connect(config).await?;
        let key = key.into();
        Ok(EtcdLeaseLock {
            kv: client.kv_client(),
            lease: KeptLease::new(client.lease_client(), &key, config.request_timeout),
            key,
            request_timeout: config.request_timeout,
        })
    }

    async fn call<T>(
        &self,
        what: &str,
        request: impl Future<Output = Result<T, etcd_client::Error>>,
    ) -> Result<T, LockError> {
        call(self.request_timeout, &self.key, what, request).await
    }

    /// Writes `record` under `compare`; the new modification revision, or `Conflict`.
    async fn write(&self, compare: Compare, record: &LeaderElectionRecord) -> Result<String, LockError> {
        let value = encode(record);
        let releasing = record.holder_identity.is_empty();
        let lease = if releasing { None } else { Some(self.lease.live(record.lease_duration_seconds).await?) };
        let options = lease.map(|(id, _)| PutOptions::new().with_lease(id));
        let txn = Txn::new().when(vec![compare]).and_then(vec![TxnOp::put(self.key.as_str(), value, options)]);
        let mut kv = self.kv.clone();
        let response = self.call("transaction", kv.txn(txn)).await?;
        if !response.succeeded() {
            // A lease granted for a record that was not written would only linger.
            if let Some((_, true)) = lease {
                self.lease.revoke().await;
            }
            return Err(LockError::Conflict(self.describe()));
        }
        if releasing {
            self.lease.revoke().await;
        }
        let revision = response.header().map_or(0, |h| h.revision());
        Ok(revision.to_string())
    }
}

impl LeaseLock for EtcdLeaseLock {
    fn get(&self) -> BoxFuture<'_, Result<Option<(LeaderElectionRecord, String)>, LockError>> {
        Box::pin(async move {
            let mut kv = self.kv.clone();
            let response = self.call("read", kv.get(self.key.as_str(), None::<GetOptions>)).await?;
            let Some(kv) = response.kvs().first() else { return Ok(None) };
            let record = decode(kv.value())
                .map_err(|e| LockError::Unavailable(format!("{}: not a leader election record: {e}", self.key)))?;
            Ok(Some((record, kv.mod_revision().to_string())))
        })
    }

    fn create<'a>(&'a self, record: &'a LeaderElectionRecord) -> BoxFuture<'a, Result<String, LockError>> {
        Box::pin(
            async move { self.write(Compare::create_revision(self.key.as_str(), CompareOp::Equal, 0), record).await },
        )
    }

    fn update<'a>(
        &'a self,
        record: &'a LeaderElectionRecord,
        version: &'a str,
    ) -> BoxFuture<'a, Result<String, LockError>> {
        Box::pin(async move {
            let revision: i64 = version.parse().map_err(|_| LockError::Conflict(self.describe()))?;
            self.write(Compare::mod_revision(self.key.as_str(), CompareOp::Equal, revision), record).await
        })
    }

    fn describe(&self) -> String {
        format!("etcd key {}", self.key)
    }
}

/// The replicas' records, one etcd key each under a prefix, each bound to its replica's lease
/// (see the module documentation).
pub struct EtcdMembership {
    kv: KvClient,
    lease: KeptLease,
    /// Where every replica's record is, ending in `/`.
    prefix: String,
    /// This replica's record.
    key: String,
    ttl: Duration,
    request_timeout: Duration,
}

impl std::fmt::Debug for EtcdMembership {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdMembership").field("key", &self.key).finish_non_exhaustive()
    }
}

impl EtcdMembership {
    /// Connects (a connection of its own) to keep `identity`'s record under `prefix`, bound to a
    /// lease of `ttl` (whole seconds, at least one).
    pub async fn connect(
        config: &EtcdConfig,
        prefix: &str,
        identity: &str,
        ttl: Duration,
    ) -> versa_storage::Result<EtcdMembership> {
        let client = connect(config).await?;
        let prefix = format!("{}/", prefix.trim_end_matches('/'));
        let key = format!("{prefix}{identity}");
        Ok(EtcdMembership {
            kv: client.kv_client(),
            lease: KeptLease::new(client.lease_client(), &key, config.request_timeout),
            prefix,
            key,
            ttl: Duration::from_secs(ttl.as_secs().max(1)),
            request_timeout: config.request_timeout,
        })
    }
}

impl Membership for EtcdMembership {
    fn publish<'a>(&'a self, record: &'a ReplicaRecord) -> BoxFuture<'a, Result<bool, LockError>> {
        Box::pin(async move {
            let (id, fresh) = self.lease.live(self.ttl.as_secs() as i64).await?;
            let options = PutOptions::new().with_lease(id).with_prev_key();
            let mut kv = self.kv.clone();
            let put = kv.put(self.key.as_str(), encode_replica(record), Some(options));
            let response = call(self.request_timeout, &self.key, "put", put).await?;
            // Still there only if it was bound to the lease that is still alive.
            Ok(!fresh && response.prev_key().is_some_and(|prev| prev.lease() == id))
        })
    }

    fn members(&self) -> BoxFuture<'_, Result<Vec<Member>, LockError>> {
        Box::pin(async move {
            let mut kv = self.kv.clone();
            let range = kv.get(self.prefix.as_str(), Some(GetOptions::new().with_prefix()));
            let response = call(self.request_timeout, &self.prefix, "range", range).await?;
            let mut members = Vec::new();
            for kv in response.kvs() {
                let record = decode_replica(kv.value()).map_err(|e| {
                    LockError::Unavailable(format!("{}: not a replica record: {e}", String::from_utf8_lossy(kv.key())))
                })?;
                members.push(Member { record, incarnation: kv.create_revision() });
            }
            Ok(members)
        })
    }

    fn withdraw(&self) -> BoxFuture<'_, Result<(), LockError>> {
        Box::pin(async move {
            let mut kv = self.kv.clone();
            let deleted = call(self.request_timeout, &self.key, "delete", kv.delete(self.key.as_str(), None)).await;
            self.lease.revoke().await;
            deleted.map(|_| ())
        })
    }

    fn ttl(&self) -> Duration {
        self.ttl
    }

    fn describe(&self) -> String {
        format!("etcd keys {}*", self.prefix)
    }
}

fn encode_replica(record: &ReplicaRecord) -> String {
    json!({"identity": record.identity, "appliedRevision": record.applied, "sinceRevision": record.since}).to_string()
}

fn decode_replica(bytes: &[u8]) -> Result<ReplicaRecord, String> {
    let doc: Value = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    let number = |field: &str| doc[field].as_i64().ok_or_else(|| format!("no {field}"));
    Ok(ReplicaRecord {
        identity: doc["identity"].as_str().ok_or("no identity")?.to_owned(),
        applied: number("appliedRevision")?,
        since: number("sinceRevision")?,
    })
}

fn time(t: SystemTime) -> String {
    jiff::Timestamp::try_from(t).map(|t| format!("{t:.6}")).unwrap_or_default()
}

fn encode(record: &LeaderElectionRecord) -> String {
    json!({
        "holderIdentity": record.holder_identity,
        "leaseDurationSeconds": record.lease_duration_seconds,
        "acquireTime": time(record.acquire_time),
        "renewTime": time(record.renew_time),
        "leaderTransitions": record.leader_transitions,
    })
    .to_string()
}

fn decode(bytes: &[u8]) -> Result<LeaderElectionRecord, String> {
    let doc: Value = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    let time = |field: &str| -> Result<SystemTime, String> {
        let text = doc[field].as_str().ok_or_else(|| format!("no {field}"))?;
        let t: jiff::Timestamp = text.parse().map_err(|e| format!("{field}: {e}"))?;
        Ok(SystemTime::from(t))
    };
    Ok(LeaderElectionRecord {
        holder_identity: doc["holderIdentity"].as_str().unwrap_or_default().to_owned(),
        lease_duration_seconds: doc["leaseDurationSeconds"].as_i64().unwrap_or_default(),
        acquire_time: time("acquireTime")?,
        renew_time: time("renewTime")?,
        leader_transitions: doc["leaderTransitions"].as_i64().unwrap_or_default(),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "test code")]
mod tests {
    use super::*;

    #[test]
    fn record_round_trip() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_micros(1_780_000_000_123_456);
        let record = LeaderElectionRecord {
            holder_identity: "a".into(),
            lease_duration_seconds: 15,
            acquire_time: t,
            renew_time: t + Duration::from_secs(2),
            leader_transitions: 3,
        };
        let text = encode(&record);
        assert!(text.contains(r#""acquireTime":"2026-05-28T"#), "{text}");
        assert_eq!(decode(text.as_bytes()).unwrap(), record);
    }

    #[test]
    fn replica_record_round_trip() {
        let record = ReplicaRecord { identity: "host_1".into(), applied: 57, since: 41 };
        let text = encode_replica(&record);
        assert_eq!(text, r#"{"appliedRevision":57,"identity":"host_1","sinceRevision":41}"#);
        assert_eq!(decode_replica(text.as_bytes()).unwrap(), record);
        assert_eq!(decode_replica(b"{}").unwrap_err(), "no identity");
    }
}
