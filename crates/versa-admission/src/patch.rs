//! JSON Patch (RFC 6902) applied to an object, as the mutations of webhooks and
//! MutatingAdmissionPolicies apply theirs: the `json-patch` crate's operations, then the
//! checks kube's decoder makes of the result (an object with `apiVersion` and `kind`).

use serde_json::Value;

/// Why a JSON Patch did not apply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum PatchFailure {
    /// A `test` operation did not hold.
    TestFailed,
    Other(String),
}

impl std::fmt::Display for PatchFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PatchFailure::TestFailed => f.write_str("testing value failed"),
            PatchFailure::Other(e) => f.write_str(e),
        }
    }
}

/// Applies a webhook's (or a policy's) JSON Patch to `object`, returning the patched object.
/// The patched object must still be an object with `apiVersion` and `kind`, as kube's decoder
/// requires.
pub(crate) fn apply_json_patch(
    object: &Value,
    patch: &[serde_json::Map<String, Value>],
) -> Result<Value, PatchFailure> {
    let ops: json_patch::Patch =
        serde_json::from_value(Value::Array(patch.iter().cloned().map(Value::Object).collect()))
            .map_err(|e| PatchFailure::Other(e.to_string()))?;
    let mut doc = object.clone();
    if let Err(e) = json_patch::patch(&mut doc, &ops) {
        return Err(match e.kind {
            json_patch::PatchErrorKind::TestFailed => PatchFailure::TestFailed,
            _ => PatchFailure::Other(e.to_string()),
        });
    }
    check_decodable(&doc).map_err(PatchFailure::Other)?;
    Ok(doc)
}

/// What kube's JSON decoder needs of a patched object.
fn check_decodable(doc: &Value) -> Result<(), String> {
    let text = || serde_json::to_string(doc).unwrap_or_default();
    let Some(o) = doc.as_object() else {
        return Err(format!(
            "couldn't get version/kind; json parse error: cannot unmarshal into an object: {}",
            text()
        ));
    };
    if o.get("kind").and_then(Value::as_str).is_none_or(str::is_empty) {
        return Err(format!("Object 'Kind' is missing in '{}'", text()));
    }
    if o.get("apiVersion").and_then(Value::as_str).is_none_or(str::is_empty) {
        return Err(format!("Object 'apiVersion' is missing in '{}'", text()));
    }
    Ok(())
}
