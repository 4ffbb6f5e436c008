//! The other versions of a resource, as structured merge sees them. kube's field manager writes
//! each `managedFields` entry at the apiVersion of its request and judges it there later, so the
//! merge needs, besides the request's schema, the schemas of the resource's other versions and
//! its conversion between them. The caller (the registry) implements [`Versions`] with the
//! resource's own schemas and converter; the field manager hands it to the updater.

use serde_json::Value;
use versa_schema::structural::Structural;

/// The other versions of a resource, as structured merge needs them: kube's field manager
/// compares objects at the version each `managedFields` entry was written in (converting them
/// with the resource's conversion) and prunes an applier at the version of its last apply.
pub trait Versions: std::fmt::Debug {
    /// The schema of `api_version` (`group/version`), `None` for a version the resource no
    /// longer has.
    fn schema(&self, api_version: &str) -> Option<&Structural>;
    /// `obj` converted to `api_version` (its `apiVersion` says where it is now).
    fn convert(&self, obj: &Value, api_version: &str) -> Result<Value, String>;
}
