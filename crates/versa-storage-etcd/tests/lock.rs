//! [`EtcdLeaseLock`] against a real etcd: creates and updates are compare-and-swap (of two
//! candidates one wins), a holder's key is bound to an etcd lease that etcd deletes once the
//! holder stops renewing, and a release leaves a record with no holder and no lease.

#![allow(clippy::unwrap_used, clippy::panic, reason = "helpers of tests fail loudly")]

mod support;

use std::time::{Duration, SystemTime};

use support::EtcdServer;
use versa_storage::lock::{LeaderElectionRecord, LeaseLock, LockError};
use versa_storage_etcd::EtcdLeaseLock;

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
