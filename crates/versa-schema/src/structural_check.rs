//! Is a lowered schema structural? Every rule of Kubernetes' `ValidateStructural`, one error per
//! violation with its field path.
//!
//! OWNER: structural-check helper — stub until filled in.

use crate::field::{ErrorList, Path};
use crate::structural::Structural;

/// Reports every violation of the structural-schema rules in `schema`, whose root is at `path`
/// (e.g. `spec.versions[0].schema.openAPIV3Schema`). Errors are sorted as Kubernetes sorts them.
pub fn validate_structural(schema: &Structural, path: &Path) -> ErrorList {
    let _ = (schema, path);
    ErrorList::new()
}
