//! [`EtcdLeaseLock`]: leader election's lock as an etcd key bound to an etcd lease — what
//! replicas on one etcd use when there is no cluster to hold a `coordination.k8s.io` Lease.
//!
//! The key holds the [`LeaderElectionRecord`] as JSON, in the Lease spec's field names and
//! RFC 3339 times (so `etcdctl get` reads like `kubectl get lease -o yaml`). Every write is one
//! transaction whose compare is the version the elector read (the key's modification
//! revision; for a create, that the key does not exist), so two candidates never both win.
//!
//! The holder's writes attach the key to an etcd lease whose TTL is the record's
//! `leaseDurationSeconds`, kept alive on every renewal: if the holder dies, etcd itself deletes
//! the key once the TTL runs out, and no stale record outlives it. (The elector still waits a
//! lease duration from the last change it saw, as kube's does; etcd's TTL is the second,
//! server-side clock.) A release writes the record with no holder and no lease, then revokes
//! the lease.

use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use etcd_client::{
    Client, Compare, CompareOp, ConnectOptions, GetOptions, KvClient, LeaseClient, PutOptions, Txn, TxnOp,
};
use serde_json::{Value, json};
use versa_storage::BoxFuture;
use versa_storage::lock::{LeaderElectionRecord, LeaseLock, LockError};

use crate::config::EtcdConfig;

/// A leader-election lock on one etcd key (see the module documentation).
pub struct EtcdLeaseLock {
    kv: KvClient,
    lease: LeaseClient,
    key: String,
    request_timeout: Duration,
    /// The etcd lease this process's record is bound to, with its TTL; `None` until it holds
    /// the lock.
    held: Mutex<Option<(i64, i64)>>,
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
        let mut options = ConnectOptions::new().with_connect_timeout(config.connect_timeout);
        if let Some(tls) = &config.tls {
            options = options.with_tls(crate::store::tls_options(tls)?);
        }
        let endpoints = config.endpoints.join(", ");
        let client = Client::connect(&config.endpoints, Some(options))
            .await
            .map_err(|e| versa_storage::Error::unavailable(format!("connecting to etcd at {endpoints}"), e))?;
        Ok(EtcdLeaseLock {
            kv: client.kv_client(),
            lease: client.lease_client(),
            key: key.into(),
            request_timeout: config.request_timeout,
            held: Mutex::new(None),
        })
    }

    async fn call<T>(
        &self,
        what: &str,
        request: impl Future<Output = Result<T, etcd_client::Error>>,
    ) -> Result<T, LockError> {
        match tokio::time::timeout(self.request_timeout, request).await {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(e)) => Err(LockError::Unavailable(format!("etcd {what} of {}: {e}", self.key))),
            Err(_) => Err(LockError::Unavailable(format!(
                "etcd {what} of {}: no answer within {:?}",
                self.key, self.request_timeout
            ))),
        }
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

    /// The etcd lease a holder's record is bound to: the current one, kept alive, or a fresh one
    /// (when none is held, it expired, or the duration changed). Whether it is fresh.
    async fn live_lease(&self, ttl: i64) -> Result<(i64, bool), LockError> {
        if let Some((id, held_ttl)) = self.held()
            && held_ttl == ttl
        {
            let mut client = self.lease.clone();
            let kept = self
                .call("lease keep-alive", async move {
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
        let mut client = self.lease.clone();
        let granted = self.call("lease grant", client.grant(ttl.max(1), None)).await?;
        self.set_held(Some((granted.id(), ttl)));
        Ok((granted.id(), true))
    }

    async fn revoke(&self, id: i64) {
        self.set_held(None);
        let mut client = self.lease.clone();
        // If the revoke fails, the lease just runs out.
        let _ = self.call("lease revoke", client.revoke(id)).await;
    }

    /// Writes `record` under `compare`; the new modification revision, or `Conflict`.
    async fn write(&self, compare: Compare, record: &LeaderElectionRecord) -> Result<String, LockError> {
        let value = encode(record);
        let releasing = record.holder_identity.is_empty();
        let lease = if releasing { None } else { Some(self.live_lease(record.lease_duration_seconds).await?) };
        let options = lease.map(|(id, _)| PutOptions::new().with_lease(id));
        let txn = Txn::new().when(vec![compare]).and_then(vec![TxnOp::put(self.key.as_str(), value, options)]);
        let mut kv = self.kv.clone();
        let response = self.call("transaction", kv.txn(txn)).await?;
        if !response.succeeded() {
            // A lease granted for a record that was not written would only linger.
            if let Some((id, true)) = lease {
                self.revoke(id).await;
            }
            return Err(LockError::Conflict(self.describe()));
        }
        if releasing && let Some((id, _)) = self.held() {
            self.revoke(id).await;
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
}
