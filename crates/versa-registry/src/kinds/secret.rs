//! Secrets (standalone): kube's v1 Secret conversion and validation, written in
//! [`crate::builtin`] — `stringData` merged into `data`, `type` defaulted to `Opaque` and
//! immutable, an `immutable` Secret's data kept; no `generation`.

use serde_json::Value;
use versa_schema::ErrorList;

use super::Part;
use super::patch::{METADATA_ONLY, Schema};
use super::{KindRules, custom};
use crate::builtin;
use crate::error::Result;
use crate::resource::{Resource, Version};

/// The rules of Secrets.
#[derive(Debug)]
pub struct Secret;

impl KindRules for Secret {
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

    fn prepare_create(&self, obj: &mut Value) {
        builtin::prepare_secret(obj);
    }

    fn prepare_update(&self, new: &mut Value, _old: &Value, _part: Part) {
        builtin::prepare_secret(new);
    }

    fn admit(
        &self,
        res: &Resource,
        ver: &Version,
        obj: &mut Value,
        old: Option<&Value>,
        part: Part,
        warnings: &mut Vec<String>,
    ) -> Result<Vec<String>> {
        custom::admit(res, ver, obj, old, part, warnings, |obj, old| match old {
            Some(old) => builtin::validate_secret_update(obj, old),
            None => ErrorList::new(),
        })
    }
}
