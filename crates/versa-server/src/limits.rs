//! Bounds on the requests being served, as kube-apiserver's generic filters set them:
//!
//! - **In flight** (`--max-requests-inflight`, `--max-mutating-requests-inflight`; kube's 400
//!   and 200; 0 = no limit): a request over the limit of its kind (mutating: create, update,
//!   patch, delete, deletecollection; everything else counts as read-only) is answered at once
//!   with 429 `TooManyRequests` and `Retry-After: 1`, and does no work. Long-running requests
//!   (watches) are not counted, and `system:masters` is never refused — kube's rule that the
//!   super-user always gets an answer. Health checks come before this and are not counted.
//! - **Duration** (`--request-timeout`, kube's 60 s; `?timeout=` may ask for less): a request
//!   still running then is answered 504 `Timeout`; watches end by their own `timeoutSeconds`.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::auth::UserInfo;
use crate::request_info::RequestInfo;
use crate::status::Status;

/// The limits chosen at start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestLimits {
    /// Read-only requests served at once (0: no limit).
    pub max_requests_inflight: usize,
    /// Mutating requests served at once (0: no limit).
    pub max_mutating_requests_inflight: usize,
    /// The longest a request may run (and the cap on `?timeout=`).
    pub request_timeout: Duration,
}

impl Default for RequestLimits {
    /// kube-apiserver's defaults.
    fn default() -> Self {
        RequestLimits {
            max_requests_inflight: 400,
            max_mutating_requests_inflight: 200,
            request_timeout: Duration::from_secs(60),
        }
    }
}

/// The in-flight counters.
#[derive(Debug)]
pub struct InFlight {
    read_only: Option<Arc<Semaphore>>,
    mutating: Option<Arc<Semaphore>>,
}

impl InFlight {
    pub fn new(limits: &RequestLimits) -> InFlight {
        let semaphore = |n: usize| (n > 0).then(|| Arc::new(Semaphore::new(n)));
        InFlight {
            read_only: semaphore(limits.max_requests_inflight),
            mutating: semaphore(limits.max_mutating_requests_inflight),
        }
    }

    /// A place for this request, held until it is answered; `None` when it is not counted;
    /// 429 when its kind is full.
    pub fn admit(&self, user: &UserInfo, info: &RequestInfo) -> Result<Option<OwnedSemaphorePermit>, Status> {
        if is_long_running(info) {
            return Ok(None);
        }
        let semaphore = if is_mutating(info) { &self.mutating } else { &self.read_only };
        let Some(semaphore) = semaphore else { return Ok(None) };
        match semaphore.clone().try_acquire_owned() {
            Ok(permit) => Ok(Some(permit)),
            Err(_) if user.groups.iter().any(|g| g == "system:masters") => Ok(None),
            Err(_) => Err(too_many_requests()),
        }
    }
}

/// kube's `tooManyRequests` answer.
pub fn too_many_requests() -> Status {
    Status {
        code: http::StatusCode::TOO_MANY_REQUESTS,
        reason: "TooManyRequests",
        message: "Too many requests, please try again later.".into(),
        details: Some(json!({"retryAfterSeconds": 1})),
    }
}

/// Watches run until their own `timeoutSeconds`.
pub fn is_long_running(info: &RequestInfo) -> bool {
    info.is_resource_request && info.verb == "watch"
}

pub(crate) fn is_mutating(info: &RequestInfo) -> bool {
    matches!(info.verb.as_str(), "create" | "update" | "patch" | "delete" | "deletecollection")
}

/// How long this request may run: `?timeout=` (Go's duration syntax) when given and positive,
/// at most `limits.request_timeout`; `None` for long-running requests. A `timeout` that does
/// not parse is kube's 400.
pub fn deadline(info: &RequestInfo, query: Option<&str>, limits: &RequestLimits) -> Result<Option<Duration>, Status> {
    if is_long_running(info) {
        return Ok(None);
    }
    let asked = query
        .into_iter()
        .flat_map(|q| q.split('&'))
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == "timeout")
        .map(|(_, v)| v);
    let mut timeout = limits.request_timeout;
    if let Some(asked) = asked.filter(|v| !v.is_empty()) {
        let nanos = versa_cel::time::parse_duration(asked).map_err(|_| {
            Status::bad_request(format!(
                "invalid timeout specified in the request URL - time: invalid duration {asked:?}"
            ))
        })?;
        if let Ok(nanos) = u64::try_from(nanos)
            && nanos > 0
        {
            timeout = timeout.min(Duration::from_nanos(nanos));
        }
    }
    Ok(Some(timeout))
}

/// kube's answer to a request that ran out of time.
pub fn timed_out() -> Status {
    Status {
        code: http::StatusCode::GATEWAY_TIMEOUT,
        reason: "Timeout",
        message: "Timeout: request did not complete within requested timeout - context deadline exceeded".into(),
        details: Some(json!({})),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(verb: &str) -> RequestInfo {
        RequestInfo { is_resource_request: true, verb: verb.into(), ..Default::default() }
    }

    fn user(groups: &[&str]) -> UserInfo {
        UserInfo { name: "u".into(), groups: groups.iter().map(|g| (*g).to_owned()).collect(), ..Default::default() }
    }

    #[test]
    fn in_flight_by_kind() {
        let limits =
            RequestLimits { max_requests_inflight: 1, max_mutating_requests_inflight: 1, ..Default::default() };
        let inflight = InFlight::new(&limits);
        let alice = user(&["devs"]);
        let read = inflight.admit(&alice, &request("get")).unwrap();
        assert!(read.is_some());
        assert_eq!(inflight.admit(&alice, &request("list")).unwrap_err().code, http::StatusCode::TOO_MANY_REQUESTS);
        let write = inflight.admit(&alice, &request("create")).unwrap();
        assert!(write.is_some(), "mutating requests have their own limit");
        assert!(inflight.admit(&alice, &request("patch")).is_err());
        assert!(inflight.admit(&alice, &request("watch")).unwrap().is_none(), "watches are not counted");
        assert!(
            inflight.admit(&user(&["system:masters"]), &request("get")).unwrap().is_none(),
            "masters always get an answer"
        );
        drop(read);
        assert!(inflight.admit(&alice, &request("get")).unwrap().is_some(), "a place is given back when answered");
        let unlimited = InFlight::new(&RequestLimits { max_requests_inflight: 0, ..Default::default() });
        assert!(unlimited.admit(&alice, &request("get")).unwrap().is_none());
    }

    #[test]
    fn deadlines() {
        let limits = RequestLimits::default();
        let get = request("get");
        let cases = [
            (None, Some(Duration::from_secs(60))),
            (Some("timeout=5s"), Some(Duration::from_secs(5))),
            (Some("limit=1&timeout=1m30s"), Some(Duration::from_secs(60))),
            (Some("timeout=0s"), Some(Duration::from_secs(60))),
            (Some("timeout=250ms"), Some(Duration::from_millis(250))),
        ];
        for (query, want) in cases {
            assert_eq!(deadline(&get, query, &limits).unwrap(), want, "{query:?}");
        }
        assert_eq!(deadline(&request("watch"), Some("timeout=5s"), &limits).unwrap(), None);
        let bad = deadline(&get, Some("timeout=soon"), &limits).unwrap_err();
        assert_eq!(bad.code, http::StatusCode::BAD_REQUEST);
        assert_eq!(too_many_requests().into_response().headers().get(http::header::RETRY_AFTER).unwrap(), "1");
    }
}
