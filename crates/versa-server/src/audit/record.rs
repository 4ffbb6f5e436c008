//! The event of one request under construction ([`Record`]), shared by the layers that add to
//! it: the authorization decision as annotations, the request body (levels `Request` and up;
//! the object reference takes the namespace, name, uid and resourceVersion of a created or
//! updated object at every level, as kube's `LogRequestObject` does), and the answer. Each
//! stage is written from it as one line, stamped when it is written.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use serde_json::Value;

use super::event::{Event, drop_managed_fields, go_json_line, micro_time};
use super::policy::{Level, RequestConfig, Stage};
use super::writer::Sink;

/// The event of one request, shared by the layers that add to it.
#[derive(Debug, Clone)]
pub struct Record(pub(super) Arc<RecordInner>);

#[derive(Debug)]
pub(super) struct RecordInner {
    pub(super) config: RequestConfig,
    pub(super) sink: Sink,
    pub(super) long_running: bool,
    /// Failed before authentication finished: one `ResponseStarted` event.
    pub(super) failed: bool,
    /// A delete: its `Status` answer (a success) is recorded.
    pub(super) delete: bool,
    /// kube writes this answer as plain text (`http.Error`), not through its object encoder:
    /// only the code is recorded.
    pub(super) text: AtomicBool,
    /// Serving the request panicked (`lifecycle::catch_panic`).
    pub(super) panicked: AtomicBool,
    pub(super) event: Mutex<Event>,
}

impl RecordInner {
    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, Event> {
        self.event.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Record {
    pub fn level(&self) -> Level {
        self.0.config.level
    }

    /// Adds an annotation; a key already set keeps its first value (as kube's
    /// `addAuditAnnotationLocked`).
    pub fn annotate(&self, key: &str, value: &str) {
        self.0.lock().annotations.entry(key.to_owned()).or_insert_with(|| value.to_owned());
    }

    /// The object a create or update decoded (kube's `LogRequestObject`): its namespace, name,
    /// uid and resourceVersion fill the object reference where the URL left them empty (at
    /// every level); from `Request` on it is the event's `requestObject`.
    pub fn request_object(&self, mut object: Value) {
        let meta = |k: &str| object.pointer(&format!("/metadata/{k}")).and_then(Value::as_str).unwrap_or("").to_owned();
        let (namespace, name, uid, rv) = (meta("namespace"), meta("name"), meta("uid"), meta("resourceVersion"));
        let mut event = self.0.lock();
        if let Some(r) = event.object_ref.as_mut() {
            for (field, value) in
                [(&mut r.namespace, namespace), (&mut r.name, name), (&mut r.uid, uid), (&mut r.resource_version, rv)]
            {
                if field.is_empty() {
                    *field = value;
                }
            }
        }
        if self.0.config.level >= Level::Request {
            if self.0.config.omit_managed_fields {
                drop_managed_fields(&mut object);
            }
            event.request_object = Some(object);
        }
    }

    /// The answer is one kube writes as plain text (`http.Error`: the max-in-flight 429, an
    /// authorizer's internal error): only its code is recorded.
    pub fn text_answer(&self) {
        self.0.text.store(true, Ordering::Relaxed);
    }

    /// A body recorded as it is (a patch, `DeleteOptions`), from `Request` on.
    pub fn request_body(&self, body: Value) {
        if self.0.config.level >= Level::Request {
            self.0.lock().request_object = Some(body);
        }
    }

    /// The event at `stage`, as one line; `None` when the stage is left out.
    pub(super) fn line(&self, stage: Stage) -> Option<Vec<u8>> {
        if self.0.config.omit_stages.contains(stage) {
            return None;
        }
        let mut event = self.0.lock();
        event.stage = stage;
        event.stage_timestamp = if stage == Stage::RequestReceived {
            event.request_received_timestamp.clone()
        } else {
            micro_time(SystemTime::now())
        };
        go_json_line(&event)
    }
}
