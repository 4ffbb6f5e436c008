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
    fn convert(&self, obj: &Value, api_version: &str) -> Result<Value, ConvertError>;
}

/// Why [`Versions::convert`] gave no object (printed as the merge's error texts say it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConvertError {
    /// The apiVersion names no version of the resource.
    #[error("{0} is not a version of this resource")]
    NotAVersion(String),
    /// The answer is not known yet: the caller makes it between runs of the merge and runs the
    /// merge again (a conversion webhook, which the synchronous merge cannot wait for).
    #[error("the conversion to {0} is made before the merge runs again")]
    Pending(String),
    /// The conversion failed, with its message.
    #[error("{0}")]
    Failed(String),
}
