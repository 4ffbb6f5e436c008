//! Events (standalone; core `v1`, kept for a while (`--event-ttl`) as kube keeps them, and
//! `events.k8s.io/v1`, which client-go's `tools/events` recorders write): kept as they come
//! (their fields are many and flat), no `generation`. The `events.k8s.io` Events are the core
//! ones under other field names, as kube converts them (`regarding` is `involvedObject`,
//! `note` is `message`, …): stored in the core form, converted at the storage boundary
//! ([`event_from_core`], [`event_to_core`]).

use serde_json::{Value, json};

use super::patch::{METADATA_ONLY, Schema};
use super::{CoreKind, KindRules, core_definition};
use crate::resource::{Builtin, Resource};

/// The core Events' identity and built-in definition.
pub const BUILTIN: Builtin = Builtin::new("events", || definition(BUILTIN.name(), ""));
/// The `events.k8s.io/v1` Events', stored as the core ones.
pub const BUILTIN_V1: Builtin =
    Builtin::new("events.events.k8s.io", || definition(BUILTIN_V1.name(), "events.k8s.io")).stored_as("", "events");

/// The core Events' registration.
pub static KIND: CoreKind = CoreKind { builtin: BUILTIN, rules: &Event };
/// The `events.k8s.io/v1` Events' registration.
pub static KIND_V1: CoreKind = CoreKind { builtin: BUILTIN_V1, rules: &EventV1 };

/// An Event kind (core or `events.k8s.io`) as a definition: its fields are many and flat, so
/// they are kept as they come.
fn definition(name: &str, group: &str) -> Value {
    core_definition(
        name,
        group,
        "Namespaced",
        json!({"plural": "events", "singular": "event", "kind": "Event", "shortNames": ["ev"]}),
        json!({"schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}),
    )
}

/// The rules of Events.
#[derive(Debug)]
pub struct Event;

impl KindRules for Event {
    fn is_core(&self) -> bool {
        true
    }

    fn strategic_merge(&self) -> Option<&'static Schema> {
        Some(&METADATA_ONLY)
    }
}

/// The rules of `events.k8s.io/v1` Events: the core Events under other field names, converted
/// at the storage boundary.
#[derive(Debug)]
pub struct EventV1;

impl KindRules for EventV1 {
    fn is_core(&self) -> bool {
        true
    }

    fn strategic_merge(&self) -> Option<&'static Schema> {
        Some(&METADATA_ONLY)
    }

    fn on_read(&self, _res: &Resource, obj: &mut Value) {
        event_from_core(obj);
    }

    fn on_write(&self, obj: &mut Value) {
        event_to_core(obj);
    }
}

/// `(events.k8s.io/v1 name, core v1 name)` of the fields the two Event versions name apart.
const EVENT_FIELDS: [(&str, &str); 7] = [
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
];

/// A stored (core v1) Event as an `events.k8s.io/v1` Event.
pub fn event_from_core(obj: &mut Value) {
    rename_event_fields(obj, false, "events.k8s.io/v1");
}

/// An `events.k8s.io/v1` Event as the core v1 Event it is stored as.
pub fn event_to_core(obj: &mut Value) {
    rename_event_fields(obj, true, "v1");
}

fn rename_event_fields(obj: &mut Value, to_core: bool, api_version: &str) {
    let Some(o) = obj.as_object_mut() else { return };
    for (v1, core) in EVENT_FIELDS {
        let (from, to) = if to_core { (v1, core) } else { (core, v1) };
        if let Some(v) = o.remove(from) {
            o.insert(to.to_owned(), v);
        }
    }
    o.insert("apiVersion".into(), json!(api_version));
}
