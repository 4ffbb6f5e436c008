//! Events (standalone; core `v1` and `events.k8s.io/v1`): kept as they come (their fields are
//! many and flat), no `generation`. The `events.k8s.io` field names are converted at the storage
//! boundary ([`crate::builtin::event_from_core`], [`crate::builtin::event_to_core`]).

use serde_json::Value;

use super::KindRules;
use super::patch::{METADATA_ONLY, Schema};
use crate::builtin::{event_from_core, event_to_core};
use crate::resource::Resource;

/// The rules of Events.
#[derive(Debug)]
pub struct Event;

impl KindRules for Event {
    fn takes_protobuf(&self) -> bool {
        true
    }

    fn allows_unconditional_update(&self) -> bool {
        true
    }

    fn strategic_merge(&self) -> Option<&'static Schema> {
        Some(&METADATA_ONLY)
    }

    fn has_generation(&self) -> bool {
        false
    }
}

/// The rules of `events.k8s.io/v1` Events: the core Events under other field names, converted
/// at the storage boundary.
#[derive(Debug)]
pub struct EventV1;

impl KindRules for EventV1 {
    fn takes_protobuf(&self) -> bool {
        true
    }

    fn allows_unconditional_update(&self) -> bool {
        true
    }

    fn strategic_merge(&self) -> Option<&'static Schema> {
        Some(&METADATA_ONLY)
    }

    fn has_generation(&self) -> bool {
        false
    }

    fn on_read(&self, _res: &Resource, obj: &mut Value) {
        event_from_core(obj);
    }

    fn on_write(&self, obj: &mut Value) {
        event_to_core(obj);
    }
}
