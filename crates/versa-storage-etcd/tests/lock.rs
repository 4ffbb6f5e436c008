//! [`EtcdLeaseLock`] against a real etcd: creates and updates are compare-and-swap (of two
//! candidates one wins), a holder's key is bound to an etcd lease that etcd deletes once the
//! holder stops renewing, and a release leaves a record with no holder and no lease.
//! [`EtcdMembership`]: each replica's record is bound to its own lease, read back by all, gone
//! when its replica stops renewing, and a new incarnation when written again.

#![allow(clippy::unwrap_used, clippy::panic, reason = "helpers of tests fail loudly")]

mod support;

use std::time::{Duration, SystemTime};

use support::EtcdServer;
use versa_storage::lock::{LeaderElectionRecord, LeaseLock, LockError, Membership, ReplicaRecord};
use versa_storage_etcd::{EtcdLeaseLock, EtcdMembership};

fn record(holder: &str, seconds: i64) -> LeaderElectionRecord {
    let now = SystemTime::now();
    LeaderElectionRecord {
        holder_identity: holder.into(),
        lease_duration_seconds: seconds,
        acquire_time: now,
        renew_time: now,
        leader_transitions: 0,
    }
}

#[tokio::test]
async fn compare_and_swap_and_the_etcd_lease() {
    let etcd = EtcdServer::start().await;
    let key = "/registry/versa.dev/leaderelection/versa";
    let a = EtcdLeaseLock::connect(&etcd.config(), key).await.unwrap();
    let b = EtcdLeaseLock::connect(&etcd.config(), key).await.unwrap();
    assert_eq!(a.get().await.unwrap(), None);

    let v1 = a.create(&record("a", 2)).await.unwrap();
    assert!(matches!(b.create(&record("b", 2)).await, Err(LockError::Conflict(_))), "one create wins");
    let (seen, version) = b.get().await.unwrap().unwrap();
    assert_eq!((seen.holder_identity.as_str(), version.as_str()), ("a", v1.as_str()));

    // Renewals keep the key (and its lease) alive past the TTL.
    let mut version = v1.clone();
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(1000)).await;
        version = a.update(&record("a", 2), &version).await.unwrap();
    }
    let stale = b.update(&record("b", 2), &v1).await;
    assert!(matches!(stale, Err(LockError::Conflict(_))), "a stale version loses: {stale:?}");
    assert!(b.get().await.unwrap().is_some());

    // The holder stops renewing: etcd deletes the key when the lease runs out (a bound, not a
    // timing claim).
    let mut gone = false;
    for _ in 0..100 {
        if b.get().await.unwrap().is_none() {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(gone, "the key outlived its holder's lease");

    // b takes it and releases it: the record stays, with no holder.
    let v = b.create(&record("b", 2)).await.unwrap();
    let v = b.update(&record("", 1), &v).await.unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (released, after) = a.get().await.unwrap().unwrap();
    assert_eq!((released.holder_identity.as_str(), after), ("", v));
}

#[tokio::test]
async fn replica_records_live_with_their_leases() {
    let etcd = EtcdServer::start().await;
    let prefix = "/registry/versa.dev/replicas";
    let ttl = Duration::from_secs(2);
    let a = EtcdMembership::connect(&etcd.config(), prefix, "a", ttl).await.unwrap();
    let b = EtcdMembership::connect(&etcd.config(), prefix, "b", ttl).await.unwrap();
    let record = |identity: &str, applied: i64, since: i64| ReplicaRecord { identity: identity.into(), applied, since };

    assert!(!a.publish(&record("a", 10, 10)).await.unwrap(), "a first write is a new incarnation");
    assert!(!b.publish(&record("b", 12, 12)).await.unwrap());
    assert!(a.publish(&record("a", 15, 10)).await.unwrap(), "then the record is still there");
    let members = b.members().await.unwrap();
    let records: Vec<_> = members.iter().map(|m| m.record.clone()).collect();
    assert_eq!(records, vec![record("a", 15, 10), record("b", 12, 12)]);
    let first = members[0].incarnation;

    // b keeps renewing, a stops: a's record goes with its lease (a bound, not a timing claim).
    let mut gone = false;
    for _ in 0..100 {
        b.publish(&record("b", 12, 12)).await.unwrap();
        if b.members().await.unwrap().iter().all(|m| m.record.identity != "a") {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(gone, "a's record outlived its lease");

    // Written again: another incarnation.
    assert!(!a.publish(&record("a", 15, 15)).await.unwrap());
    let again = b.members().await.unwrap().into_iter().find(|m| m.record.identity == "a").unwrap();
    assert_ne!(again.incarnation, first);

    a.withdraw().await.unwrap();
    let left: Vec<_> = b.members().await.unwrap().into_iter().map(|m| m.record.identity).collect();
    assert_eq!(left, vec!["b".to_owned()]);
}
