//! `x-kubernetes-list-type: set|map` uniqueness (listtype/validation.go).
//!
//! OWNER: validation helper — stub until filled in.

use serde_json::Value;

use crate::field::{ErrorList, Path};
use crate::structural::Structural;

/// Reports duplicate items of set lists and duplicate keys of map lists anywhere in `value`.
pub fn validate_list_set_and_map(schema: &Structural, value: &Value, path: &Path) -> ErrorList {
    let _ = (schema, value, path);
    ErrorList::new()
}
