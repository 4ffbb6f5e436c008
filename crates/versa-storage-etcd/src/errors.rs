//! What a failed etcd call means for the store. etcd reports its conditions as gRPC statuses
//! whose messages are the stable `ErrGRPC…` texts of `etcdserver/api/v3rpc/rpctypes` (a code
//! alone is ambiguous: compacted and future revisions are both `OutOfRange`), so they are told
//! apart by message; everything else — refused connections, broken streams, timeouts, no
//! leader — is the cluster being unavailable.

use std::time::Duration;

use versa_storage::Error;

/// A failed etcd call: an error from etcd or the client, or no answer in time.
#[derive(Debug)]
pub(crate) enum CallError {
    Etcd(etcd_client::Error),
    TimedOut(Duration),
}

/// The etcd conditions that callers map to errors of their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Condition {
    /// "mvcc: required revision has been compacted".
    Compacted,
    /// "mvcc: required revision is a future revision".
    FutureRevision,
    /// "request is too large", or a gRPC message over the server's receive limit.
    TooLarge,
}

/// gRPC's `RESOURCE_EXHAUSTED`, which grpc-go answers for a message over its receive limit.
const RESOURCE_EXHAUSTED: i32 = 8;

impl CallError {
    /// The etcd condition behind the error, if it is one the store distinguishes.
    pub(crate) fn condition(&self) -> Option<Condition> {
        match self {
            CallError::Etcd(error) => condition(error),
            CallError::TimedOut(_) => None,
        }
    }

    /// `Unavailable`, naming the operation that failed.
    pub(crate) fn into_unavailable(self, what: impl std::fmt::Display) -> Error {
        match self {
            CallError::Etcd(error) => Error::unavailable(format!("etcd {what} failed"), error),
            CallError::TimedOut(timeout) => {
                Error::unavailable_msg(format!("etcd {what} did not answer within {timeout:?}"))
            }
        }
    }
}

/// The condition an etcd-client error reports, if the store distinguishes it.
pub(crate) fn condition(error: &etcd_client::Error) -> Option<Condition> {
    let etcd_client::Error::GRpcStatus(status) = error else { return None };
    let message = status.message();
    if message.contains("required revision has been compacted") {
        Some(Condition::Compacted)
    } else if message.contains("required revision is a future revision") {
        Some(Condition::FutureRevision)
    } else if message.contains("request is too large")
        || (i32::from(status.code()) == RESOURCE_EXHAUSTED && message.contains("larger than max"))
    {
        Some(Condition::TooLarge)
    } else {
        None
    }
}
