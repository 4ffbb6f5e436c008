//! [`KubeLeaseLock`]: leader election's lock as a `coordination.k8s.io/v1` Lease in versa's
//! namespace (cluster mode), through kube-rs's typed `Api<Lease>` — client-go's `LeaseLock`.
//!
//! The record is the Lease's spec (`holderIdentity`, `leaseDurationSeconds`, `acquireTime`,
//! `renewTime`, `leaseTransitions`); the version is the Lease's `resourceVersion`, sent back on
//! every replace, so kube-apiserver refuses a write based on a stale read with 409. The chart's
//! Role grants `get`, `create` and `update` on `leases` for this.

use std::time::SystemTime;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{Api, PostParams};
use versa_storage::BoxFuture;
use versa_storage::lock::{LeaderElectionRecord, LeaseLock, LockError};

/// A Lease `namespace/name` holding the leader-election record.
#[derive(Clone)]
pub struct KubeLeaseLock {
    api: Api<Lease>,
    namespace: String,
    name: String,
}

impl std::fmt::Debug for KubeLeaseLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

impl KubeLeaseLock {
    pub fn new(client: kube::Client, namespace: &str, name: &str) -> KubeLeaseLock {
        KubeLeaseLock { api: Api::namespaced(client, namespace), namespace: namespace.into(), name: name.into() }
    }

    fn error(&self, what: &str, e: kube::Error) -> LockError {
        match &e {
            kube::Error::Api(status) if status.is_conflict() || status.is_already_exists() || status.is_not_found() => {
                LockError::Conflict(self.describe())
            }
            _ => LockError::Unavailable(format!("{what} {}: {e}", self.describe())),
        }
    }

    fn lease(&self, record: &LeaderElectionRecord, resource_version: Option<String>) -> Lease {
        Lease {
            metadata: ObjectMeta {
                name: Some(self.name.clone()),
                namespace: Some(self.namespace.clone()),
                resource_version,
                ..Default::default()
            },
            spec: Some(to_spec(record)),
        }
    }
}

impl LeaseLock for KubeLeaseLock {
    fn get(&self) -> BoxFuture<'_, Result<Option<(LeaderElectionRecord, String)>, LockError>> {
        Box::pin(async move {
            let Some(lease) = self.api.get_opt(&self.name).await.map_err(|e| self.error("reading", e))? else {
                return Ok(None);
            };
            let version = lease.metadata.resource_version.clone().unwrap_or_default();
            Ok(Some((from_spec(lease.spec.unwrap_or_default()), version)))
        })
    }

    fn create<'a>(&'a self, record: &'a LeaderElectionRecord) -> BoxFuture<'a, Result<String, LockError>> {
        Box::pin(async move {
            let created = self
                .api
                .create(&PostParams::default(), &self.lease(record, None))
                .await
                .map_err(|e| self.error("creating", e))?;
            Ok(created.metadata.resource_version.unwrap_or_default())
        })
    }

    fn update<'a>(
        &'a self,
        record: &'a LeaderElectionRecord,
        version: &'a str,
    ) -> BoxFuture<'a, Result<String, LockError>> {
        Box::pin(async move {
            let lease = self.lease(record, Some(version.to_owned()));
            let replaced = self
                .api
                .replace(&self.name, &PostParams::default(), &lease)
                .await
                .map_err(|e| self.error("updating", e))?;
            Ok(replaced.metadata.resource_version.unwrap_or_default())
        })
    }

    fn describe(&self) -> String {
        format!("leases/{}/{}", self.namespace, self.name)
    }
}

fn micro(t: SystemTime) -> Option<MicroTime> {
    k8s_openapi::jiff::Timestamp::try_from(t).ok().map(MicroTime)
}

/// client-go's `LeaderElectionRecordToLeaseSpec`.
fn to_spec(record: &LeaderElectionRecord) -> LeaseSpec {
    LeaseSpec {
        holder_identity: Some(record.holder_identity.clone()),
        lease_duration_seconds: Some(record.lease_duration_seconds as i32),
        acquire_time: micro(record.acquire_time),
        renew_time: micro(record.renew_time),
        lease_transitions: Some(record.leader_transitions as i32),
        ..Default::default()
    }
}

/// client-go's `LeaseSpecToLeaderElectionRecord` (absent fields are zero).
fn from_spec(spec: LeaseSpec) -> LeaderElectionRecord {
    let time = |t: Option<MicroTime>| t.map_or(SystemTime::UNIX_EPOCH, |t| SystemTime::from(t.0));
    LeaderElectionRecord {
        holder_identity: spec.holder_identity.unwrap_or_default(),
        lease_duration_seconds: spec.lease_duration_seconds.map_or(0, i64::from),
        acquire_time: time(spec.acquire_time),
        renew_time: time(spec.renew_time),
        leader_transitions: spec.lease_transitions.map_or(0, i64::from),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "test code")]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn spec_round_trip() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_micros(1_780_000_000_123_456);
        let record = LeaderElectionRecord {
            holder_identity: "versa-0_abc".into(),
            lease_duration_seconds: 15,
            acquire_time: t,
            renew_time: t + Duration::from_secs(4),
            leader_transitions: 2,
        };
        let spec = to_spec(&record);
        let json = serde_json::to_value(&spec).unwrap();
        assert_eq!(json["holderIdentity"], "versa-0_abc");
        assert_eq!(json["leaseTransitions"], 2);
        assert_eq!(json["acquireTime"], "2026-05-28T20:26:40.123456Z");
        assert_eq!(from_spec(spec), record);
    }
}
