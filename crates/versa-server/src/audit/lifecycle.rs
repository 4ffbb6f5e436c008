//! A request's life in the audit log. [`Auditor::begin`] asks the policy how much to record and
//! starts the event (its metadata: user, verb, URI, source IPs, user agent, object reference)
//! when the request arrives; [`AuditedRequest`] then writes its stages: `RequestReceived`
//! before any work, `ResponseStarted` only for watches (when the stream starts), then
//! `ResponseComplete` (when a watch's stream ends) with the answer's code, the whole `Status`
//! when the answer is one, and the answered object at `RequestResponse`; `Panic` if serving the
//! request panicked ([`catch_panic`]). A request that failed authentication is recorded the way
//! kube records it ([`Auditor::failed`]): one `ResponseStarted` event with an empty user.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use http::{HeaderMap, Response};
use http_body_util::BodyExt as _;
use serde_json::Value;

use super::completing_body::CompletingBody;
use super::error::Result;
use super::event::{
    Event, ObjectRef, ResponseStatus, User, drop_managed_fields, micro_time, panic_status, source_ips, user_agent,
};
use super::policy::{Level, Policy, Stage};
use super::record::{Record, RecordInner};
use super::writer::{self, LogConfig, Sink};
use crate::auth::UserInfo;
use crate::body::{Body, full};
use crate::request_info::RequestInfo;

/// The request as it arrived, for the event's metadata.
#[derive(Debug, Clone, Copy)]
pub struct Arrival<'a> {
    pub audit_id: &'a str,
    pub received: SystemTime,
    pub uri: &'a http::Uri,
    pub headers: &'a HeaderMap,
    pub peer: Option<IpAddr>,
}

/// Auditing as configured at start: the policy and the writer.
#[derive(Debug)]
pub struct Auditor {
    policy: Policy,
    sink: Sink,
}

/// What `versa serve`'s audit flags chose.
#[derive(Debug, Clone)]
pub struct AuditConfig {
    pub policy: Policy,
    pub log: LogConfig,
}

impl Auditor {
    /// Opens (creates) the log and starts its writer thread.
    pub fn start(config: AuditConfig) -> Result<Auditor> {
        let sink = writer::start(&config.log)?;
        Ok(Auditor { policy: config.policy, sink })
    }

    /// `None`. `long_running`: a watch (it gets a `ResponseStarted` stage).
    pub fn begin(
        &self,
        arrival: Arrival<'_>,
        user: &UserInfo,
        info: &RequestInfo,
        long_running: bool,
    ) -> Option<AuditedRequest> {
        self.start_event(arrival, Some(user), info, long_running, false)
    }

    /// Records a request that failed before it had a user (authentication failed, or kube's
    /// request-deadline filter refused its `timeout`): kube writes one `ResponseStarted` event
    /// with an empty user when the answer is written.
    pub async fn failed(&self, arrival: Arrival<'_>, info: &RequestInfo, response: Response<Body>) -> Response<Body> {
        match self.start_event(arrival, None, info, false, true) {
            Some(audit) => audit.respond(response).await,
            None => response,
        }
    }

    fn start_event(
        &self,
        arrival: Arrival<'_>,
        user: Option<&UserInfo>,
        info: &RequestInfo,
        long_running: bool,
        failed: bool,
    ) -> Option<AuditedRequest> {
        let config = self.policy.evaluate(user, info);
        if config.level == Level::None {
            return None;
        }
        let received = micro_time(arrival.received);
        let user = user
            .map(|u| User {
                username: u.name.clone(),
                uid: u.uid.clone(),
                groups: u.groups.clone(),
                extra: u.extra.clone(),
            })
            .unwrap_or_default();
        let object_ref = info.is_resource_request.then(|| ObjectRef {
            resource: info.resource.clone(),
            namespace: info.namespace.clone(),
            name: info.name.clone(),
            api_group: info.api_group.clone(),
            api_version: info.api_version.clone(),
            subresource: info.subresource.clone(),
            ..Default::default()
        });
        let event = Event {
            kind: "Event",
            api_version: "audit.k8s.io/v1",
            level: config.level,
            audit_id: arrival.audit_id.to_owned(),
            stage: Stage::RequestReceived,
            request_uri: arrival.uri.path_and_query().map_or("/", |p| p.as_str()).to_owned(),
            verb: info.verb.clone(),
            user,
            source_ips: source_ips(arrival.headers, arrival.peer),
            user_agent: user_agent(arrival.headers),
            object_ref,
            response_status: None,
            request_object: None,
            response_object: None,
            stage_timestamp: received.clone(),
            request_received_timestamp: received,
            annotations: BTreeMap::new(),
        };
        let record = Record(Arc::new(RecordInner {
            config,
            sink: self.sink.clone(),
            long_running,
            failed,
            delete: info.verb == "delete",
            text: AtomicBool::new(false),
            panicked: AtomicBool::new(false),
            event: Mutex::new(event),
        }));
        Some(AuditedRequest { record, open: true })
    }

    /// Waits until every event handed over so far is written (at shutdown).
    pub async fn flush(&self) {
        self.sink.flush().await;
    }
}

/// One audited request from its start to its answer. Dropped before the answer (the client went
/// away, or serving panicked), it still writes the request's last stage.
#[derive(Debug)]
pub struct AuditedRequest {
    record: Record,
    open: bool,
}

impl AuditedRequest {
    /// The shared record, for the layers that add to it (the request body in `rest/`).
    pub fn record(&self) -> &Record {
        &self.record
    }

    /// The `RequestReceived` stage, before any work.
    pub async fn received(&self) {
        if let Some(line) = self.record.line(Stage::RequestReceived) {
            self.record.0.sink.send(line).await;
        }
    }

    /// Records the answer and writes the stage it ends (`ResponseComplete`; a watch's
    /// `ResponseStarted`, its `ResponseComplete` following when the stream ends; a failed
    /// authentication's only `ResponseStarted`). A `Status` answer is recorded whole (unless
    /// [`Record::text_answer`] said kube writes it as text), the answered object at
    /// `RequestResponse`. Returns the answer (its body re-made when it had to be read).
    pub async fn respond(mut self, response: Response<Body>) -> Response<Body> {
        self.open = false;
        let record = self.record.clone();
        let inner = &record.0;
        let code = response.status().as_u16();
        let success = (200..300).contains(&code);
        let want_object = inner.config.level >= Level::RequestResponse && !inner.long_running;
        let want_status = !inner.text.load(Ordering::Relaxed) && (!success || inner.delete);
        let (parts, mut body) = response.into_parts();
        let mut status = ResponseStatus::code(code);
        if want_object || want_status {
            let bytes = match body.collect().await {
                Ok(collected) => collected.to_bytes(),
                Err(never) => match never {},
            };
            if let Some(mut value) = parse_answer(&parts.headers, &bytes) {
                if want_status && is_status(&value) {
                    status = ResponseStatus::of(&value, code);
                }
                if want_object {
                    if inner.config.omit_managed_fields {
                        drop_managed_fields(&mut value);
                    }
                    inner.lock().response_object = Some(value);
                }
            }
            body = full(bytes);
        }
        inner.lock().response_status = Some(status);
        if inner.long_running || inner.failed {
            if let Some(line) = record.line(Stage::ResponseStarted) {
                inner.sink.send(line).await;
            }
            if inner.failed {
                return Response::from_parts(parts, body);
            }
            let body = CompletingBody::new(body, record);
            return Response::from_parts(parts, body.boxed());
        }
        if let Some(line) = record.line(Stage::ResponseComplete) {
            inner.sink.send(line).await;
        }
        Response::from_parts(parts, body)
    }
}

impl Drop for AuditedRequest {
    fn drop(&mut self) {
        if !self.open {
            return;
        }
        let inner = &self.record.0;
        let stage = if inner.panicked.load(Ordering::Relaxed) || std::thread::panicking() {
            inner.lock().response_status.get_or_insert_with(|| panic_status("unknown"));
            Stage::Panic
        } else {
            // No answer was written (the client went away first): kube's words for a handler
            // that wrote nothing.
            inner.lock().response_status.get_or_insert_with(|| ResponseStatus {
                status: "Success".into(),
                message: "Connection closed early".into(),
                code: 200,
                ..Default::default()
            });
            Stage::ResponseComplete
        };
        if let Some(line) = self.record.line(stage) {
            inner.sink.send_now(line);
        }
    }
}

/// Runs `work`; if it panics, the record takes kube's `Panic` status (written as the `Panic`
/// stage when the request is dropped) and the panic goes on, as kube re-panics.
pub async fn catch_panic<F: std::future::Future>(record: &Record, work: F) -> F::Output {
    let mut work = std::pin::pin!(work);
    std::future::poll_fn(|cx| match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work.as_mut().poll(cx))) {
        Ok(polled) => polled,
        Err(payload) => {
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown".into());
            record.0.lock().response_status = Some(panic_status(&message));
            record.0.panicked.store(true, Ordering::Relaxed);
            std::panic::resume_unwind(payload)
        }
    })
    .await
}

fn is_status(value: &Value) -> bool {
    value.get("kind").and_then(Value::as_str) == Some("Status")
        && value.get("apiVersion").and_then(Value::as_str) == Some("v1")
}

/// An answer's body as JSON (kube records objects as JSON whatever the client asked for).
fn parse_answer(headers: &HeaderMap, bytes: &[u8]) -> Option<Value> {
    let content_type = headers.get(http::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    let media = content_type.split(';').next().unwrap_or("").trim();
    match media {
        "application/json" => serde_json::from_slice(bytes).ok(),
        "application/yaml" => crate::codec::decode(bytes, crate::codec::Format::Yaml).ok().map(|d| d.value),
        _ => None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::audit::policy::tests::{policy, user};
    use crate::audit::{DECISION_ANNOTATION, REASON_ANNOTATION};
    use crate::request_info::parse;

    /// What one request writes, stage by stage, at each level.
    #[tokio::test]
    async fn events_of_a_request() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join("audit.log");
        let policy = policy(
            "rules:\n- {level: None, users: [quiet]}\n- {level: RequestResponse, verbs: [get]}\n- {level: Metadata, omitStages: [RequestReceived]}\n",
        );
        let auditor = Auditor::start(AuditConfig { policy, log: LogConfig::new(&path) }).unwrap();
        let uri: http::Uri = "/apis/g.example.com/v1/namespaces/ns/things/a?x=1&y=2".parse().unwrap();
        let mut headers = HeaderMap::new();
        headers.insert(http::header::USER_AGENT, "test/1.0".parse().unwrap());
        let arrival = Arrival {
            audit_id: "abc",
            received: SystemTime::now(),
            uri: &uri,
            headers: &headers,
            peer: Some("127.0.0.1".parse().unwrap()),
        };
        let alice = user("alice", &["system:authenticated"]);
        let get = parse(&http::Method::GET, uri.path(), uri.query());
        assert!(auditor.begin(arrival, &user("quiet", &[]), &get, false).is_none());

        let audit = auditor.begin(arrival, &alice, &get, false).unwrap();
        audit.received().await;
        audit.record().annotate(DECISION_ANNOTATION, "allow");
        audit.record().annotate(REASON_ANNOTATION, "");
        audit.record().annotate(DECISION_ANNOTATION, "forbid");
        let object = json!({"kind": "Thing", "metadata": {"name": "a", "managedFields": []}});
        let response = crate::body::json_response(http::StatusCode::OK, &object);
        let response = audit.respond(response).await;
        let body = response.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(serde_json::from_slice::<Value>(&body).unwrap(), object, "the answer is untouched");

        let delete = parse(&http::Method::DELETE, uri.path(), None);
        let audit = auditor.begin(arrival, &alice, &delete, false).unwrap();
        audit.received().await;
        audit.record().request_body(json!({"propagationPolicy": "Background"}));
        let gone = crate::status::Status::not_found("g.example.com", "things", "a");
        audit.respond(gone.into_response()).await;

        let list = parse(&http::Method::GET, "/apis/g.example.com/v1/things", None);
        let audit = auditor.begin(arrival, &alice, &list, false).unwrap();
        drop(audit); // the client went away

        // A handler that panics: the Panic stage with kube's status, and the panic goes on.
        let audit = auditor.begin(arrival, &alice, &list, false).unwrap();
        let serving = tokio::spawn(async move {
            let record = audit.record().clone();
            catch_panic(&record, async { panic!("boom") }).await;
            audit.respond(crate::body::json_response(http::StatusCode::OK, &json!({}))).await
        });
        assert!(serving.await.unwrap_err().is_panic());

        auditor.flush().await;
        let text = std::fs::read_to_string(&path).unwrap();
        let events: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let ts = |e: &Value, k: &str| e[k].as_str().unwrap().to_owned();
        assert_eq!(events.len(), 5, "{text}");
        let received = ts(&events[0], "requestReceivedTimestamp");
        assert_eq!(received.len(), "2026-01-02T03:04:05.000006Z".len());
        assert_eq!(ts(&events[0], "stageTimestamp"), received);
        let common = json!({
            "kind": "Event", "apiVersion": "audit.k8s.io/v1", "auditID": "abc",
            "requestURI": "/apis/g.example.com/v1/namespaces/ns/things/a?x=1&y=2",
            "user": {"username": "alice", "groups": ["system:authenticated"]},
            "sourceIPs": ["127.0.0.1"], "userAgent": "test/1.0",
            "objectRef": {"resource": "things", "namespace": "ns", "name": "a", "apiGroup": "g.example.com", "apiVersion": "v1"},
            "requestReceivedTimestamp": received,
        });
        let with = |extra: Value, e: &Value| {
            let mut want = common.clone();
            for (k, v) in extra.as_object().unwrap() {
                want[k] = v.clone();
            }
            want["stageTimestamp"] = e["stageTimestamp"].clone();
            want["requestReceivedTimestamp"] = e["requestReceivedTimestamp"].clone();
            want
        };
        assert_eq!(
            events[0],
            with(json!({"level": "RequestResponse", "stage": "RequestReceived", "verb": "get"}), &events[0])
        );
        assert_eq!(
            events[1],
            with(
                json!({"level": "RequestResponse", "stage": "ResponseComplete", "verb": "get",
                       "responseStatus": {"metadata": {}, "code": 200}, "responseObject": object,
                       "annotations": {"authorization.k8s.io/decision": "allow", "authorization.k8s.io/reason": ""}}),
                &events[1]
            )
        );
        // Metadata: no RequestReceived (omitted), no body; the delete's Status whole.
        assert_eq!(
            events[2],
            with(
                json!({"level": "Metadata", "stage": "ResponseComplete", "verb": "delete",
                       "responseStatus": {"metadata": {}, "status": "Failure", "message": "things.g.example.com \"a\" not found",
                                          "reason": "NotFound", "details": {"name": "a", "group": "g.example.com", "kind": "things"}, "code": 404}}),
                &events[2]
            )
        );
        assert_eq!(events[3]["stage"], "ResponseComplete");
        assert_eq!(
            events[3]["responseStatus"],
            json!({"metadata": {}, "status": "Success", "message": "Connection closed early", "code": 200})
        );
        assert_eq!(
            events[3]["objectRef"],
            json!({"resource": "things", "apiGroup": "g.example.com", "apiVersion": "v1"})
        );
        assert_eq!(events[4]["stage"], "Panic");
        assert_eq!(
            events[4]["responseStatus"],
            json!({"metadata": {}, "status": "Failure", "message": "APIServer panic'd: boom", "reason": "InternalError", "code": 500})
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
            assert_eq!(std::fs::metadata(path.parent().unwrap()).unwrap().permissions().mode() & 0o777, 0o700);
        }
    }
}
