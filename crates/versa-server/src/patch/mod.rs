//! PATCH bodies applied to a JSON object: `application/json-patch+json` (RFC 6902),
//! `application/merge-patch+json` (RFC 7386) and, for the built-in kinds,
//! `application/strategic-merge-patch+json` ([`strategic`], with each kind's patch metadata in
//! `kinds.rs`), answering the way kube-apiserver's patch handler does
//! (`k8s.io/apiserver/pkg/endpoints/handlers/patch.go`, `jsonPatcher.applyJSPatch` and
//! `smpPatcher`).
//!
//! The operations themselves are the `json-patch` crate's (RFC-exact); this module owns the
//! envelope Kubernetes puts around them, in the order the handler checks it:
//!
//! 1. The body is decoded as the handler's strict decoder would for the default
//!    `fieldValidation=Warn`: a JSON patch must be an array of objects whose `op`, `path` and
//!    `from` are strings (or `null`); a merge patch must be an object. Anything else is
//!    **400 BadRequest** `error decoding patch: ...`, with Go's type-error wording
//!    (`json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp`). A `null`
//!    merge patch is **400** `Invalid JSON Patch`; a `null` JSON patch has no operations and
//!    changes nothing, as in Kubernetes.
//! 2. More than [`MAX_JSON_PATCH_OPERATIONS`] operations is **413 RequestEntityTooLarge**
//!    `Request entity too large: The allowed maximum operations in a JSON patch is 10000, got N`.
//! 3. An operation that fails (unknown `op`, missing member, bad pointer, failed `test`, path
//!    that does not exist, copies growing the object by more than [`MAX_JSON_PATCH_COPY_BYTES`])
//!    is **422 Invalid** with kube's fixed message `the server rejected our request due to an
//!    error in our request`. Kubernetes drops the underlying reason from the answer (it builds
//!    the error with `NewGenericServerResponse`); we keep it in [`PatchError::detail`] for logs.
//!
//! Operations are RFC 6902, with one of the accidents of evanphx/json-patch v4, the library
//! kube-apiserver vendors, because a client needs it: a `test` whose `value` is `null` (or
//! missing) passes against a member absent from its object — kube-rs' finalizer helper adds the
//! first finalizer after `test /metadata/finalizers null`. The other accidents are left out:
//! v4 accepts `add`/`replace` without `value` (using `null`), `copy` from a missing member
//! (copying `null`), `replace` of a missing member, array indices with leading zeros or
//! negative (counting from the end), and refuses `add` at the root path `""`. The RFC
//! conformance corpus (`tests/json_patch_conformance.rs`) pins the choice; no client we know of
//! needs those: each only turns an error into a success, or the reverse for a root `add`.
//!
//! Merge patches follow evanphx/json-patch v4 `MergePatch`, which Kubernetes vendors: where the
//! patch puts a value under a key that is missing, `null` or not an object in the original,
//! nulls are pruned from that value *including from arrays* (`{"a":[1,null]}` on `{}` gives
//! `{"a":[1]}`, where RFC 7386 alone keeps the `null`). Arrays that replace an existing
//! object's member keep their nulls, as in Kubernetes.
//!
//! Strategic merge patch exists only for the kinds compiled into kube-apiserver; of what versa
//! serves, those are its built-in kinds (their metadata: `KindRules::strategic_merge`). Custom resources and the
//! definitions API answer 415, as kube-apiserver answers for custom resources
//! ([`PatchError::unsupported_media_type`]).
//!
//! Not here: server-side apply; turning the result back into an object (the caller decodes,
//! defaults, prunes and validates it as for an update).
//!
//! Input safety: the body is parsed with `serde_json`, whose nesting limit (128) bounds recursion
//! here and in the merge; the operation count and the copy growth are bounded as in Kubernetes.
//! Decode-error texts past the type errors are `serde_json`'s, not Go's (`expected value at
//! line 1 column 1` where Go says `invalid character ...`); a truncated body says Go's
//! `unexpected end of JSON input`.

pub mod strategic;

use serde_json::{Map, Value};
use versa_registry::kinds::patch::Schema;

/// Kubernetes' limit on the number of operations in one JSON patch (`maxJSONPatchOperations`).
pub const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

/// Kubernetes' limit on how much the `copy` operations of one JSON patch may add, in bytes of
/// compact JSON (`JSONPatchMaxCopyBytes`, 3 MiB by default in the generic API server config).
pub const MAX_JSON_PATCH_COPY_BYTES: usize = 3 * 1024 * 1024;

/// The PATCH body formats, named by their media types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PatchType {
    /// `application/json-patch+json` (RFC 6902).
    Json,
    /// `application/merge-patch+json` (RFC 7386).
    Merge,
    /// `application/strategic-merge-patch+json` (built-in types only in Kubernetes).
    StrategicMerge,
    /// `application/apply-patch+yaml` (server-side apply).
    Apply,
}

impl PatchType {
    /// The patch type of a `Content-Type` header value. Parameters (`; charset=utf-8`) and
    /// surrounding whitespace are ignored and the media type is compared case-insensitively, as
    /// RFC 9110 says. (kube-apiserver compares the media type case-sensitively; accepting
    /// `Application/JSON-Patch+JSON` too only admits requests it would refuse with 415.)
    pub fn from_content_type(ct: &str) -> Option<PatchType> {
        let media_type = ct.split(';').next().unwrap_or_default().trim();
        [PatchType::Json, PatchType::Merge, PatchType::StrategicMerge, PatchType::Apply]
            .into_iter()
            .find(|t| t.media_type().eq_ignore_ascii_case(media_type))
    }

    /// The media type naming this patch type.
    pub fn media_type(self) -> &'static str {
        match self {
            PatchType::Json => "application/json-patch+json",
            PatchType::Merge => "application/merge-patch+json",
            PatchType::StrategicMerge => "application/strategic-merge-patch+json",
            PatchType::Apply => "application/apply-patch+yaml",
        }
    }
}

/// Why a patch could not be applied; each variant knows the HTTP code, reason and message of the
/// `metav1.Status` kube-apiserver answers with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatchError {
    /// 400: the body is not a JSON patch / merge patch document.
    #[error("error decoding patch: {0}")]
    Decode(String),
    /// 400: a merge patch that is JSON `null` (evanphx/json-patch's `errBadJSONPatch`).
    #[error("Invalid JSON Patch")]
    NullMergePatch,
    /// 413: more than [`MAX_JSON_PATCH_OPERATIONS`] operations.
    #[error(
        "Request entity too large: The allowed maximum operations in a JSON patch is {max}, got {got}",
        max = MAX_JSON_PATCH_OPERATIONS
    )]
    TooManyOperations { got: usize },
    /// 422: an operation failed. The message is Kubernetes' fixed text; `detail` says what went
    /// wrong (Kubernetes does not send it, so neither do we).
    #[error("the server rejected our request due to an error in our request")]
    OperationFailed { detail: String },
    /// 415: a patch type this endpoint does not take.
    #[error("the body of the request was in an unknown format - accepted media types include: {accepted}")]
    UnsupportedMediaType { accepted: String },
    /// 400 with the message as it is: a strategic merge patch that is not a JSON object, or a
    /// malformed directive (kube answers these with `NewBadRequest(err.Error())`, no prefix).
    #[error("{0}")]
    BadRequest(String),
    /// 500 with no reason: a strategic merge patch kube's merge refuses with an error that is
    /// not a `metav1.Status` (a missing merge key, an unknown `$patch`, ...), which
    /// kube-apiserver answers that way.
    #[error("{0}")]
    Internal(String),
}

/// The class of a [`PatchError`], one per HTTP status code it maps to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PatchErrorKind {
    /// 400 `BadRequest`.
    BadRequest,
    /// 413 `RequestEntityTooLarge`.
    RequestEntityTooLarge,
    /// 415 `UnsupportedMediaType`.
    UnsupportedMediaType,
    /// 422 `Invalid`.
    Invalid,
    /// 500 with no `reason` (kube's `StatusReasonUnknown`).
    Internal,
}

impl PatchError {
    /// The 415 answer for a patch type outside `accepted`, listing the accepted media types in
    /// the given order (Kubernetes lists json-patch, merge-patch, apply-patch+yaml for custom
    /// resources).
    pub fn unsupported_media_type(accepted: &[PatchType]) -> PatchError {
        let accepted: Vec<&str> = accepted.iter().map(|t| t.media_type()).collect();
        PatchError::UnsupportedMediaType { accepted: accepted.join(", ") }
    }

    pub fn kind(&self) -> PatchErrorKind {
        match self {
            PatchError::Decode(_) | PatchError::NullMergePatch | PatchError::BadRequest(_) => {
                PatchErrorKind::BadRequest
            }
            PatchError::TooManyOperations { .. } => PatchErrorKind::RequestEntityTooLarge,
            PatchError::OperationFailed { .. } => PatchErrorKind::Invalid,
            PatchError::UnsupportedMediaType { .. } => PatchErrorKind::UnsupportedMediaType,
            PatchError::Internal(_) => PatchErrorKind::Internal,
        }
    }

    /// The HTTP status code of the answer.
    pub fn status_code(&self) -> u16 {
        match self.kind() {
            PatchErrorKind::BadRequest => 400,
            PatchErrorKind::RequestEntityTooLarge => 413,
            PatchErrorKind::UnsupportedMediaType => 415,
            PatchErrorKind::Invalid => 422,
            PatchErrorKind::Internal => 500,
        }
    }

    /// The `reason` of the `metav1.Status`.
    pub fn reason(&self) -> &'static str {
        match self.kind() {
            PatchErrorKind::BadRequest => "BadRequest",
            PatchErrorKind::RequestEntityTooLarge => "RequestEntityTooLarge",
            PatchErrorKind::UnsupportedMediaType => "UnsupportedMediaType",
            PatchErrorKind::Invalid => "Invalid",
            PatchErrorKind::Internal => "",
        }
    }

    /// The `message` of the `metav1.Status`, exactly as kube-apiserver words it.
    pub fn message(&self) -> String {
        self.to_string()
    }

    /// What went wrong beyond the message, for logs: the failing operation of a JSON patch.
    pub fn detail(&self) -> Option<&str> {
        match self {
            PatchError::OperationFailed { detail } => Some(detail),
            _ => None,
        }
    }
}

/// The patch types a resource's main and `/status` endpoints take, in the order kube-apiserver
/// lists them in a 415: strategic merge patch for the built-in kinds only (kube's installer
/// offers it for every compiled-in type; apiextensions-apiserver not for custom resources).
pub fn accepted(strategic: Option<&Schema>) -> &'static [PatchType] {
    match strategic {
        Some(_) => &[PatchType::Json, PatchType::Merge, PatchType::StrategicMerge, PatchType::Apply],
        None => &[PatchType::Json, PatchType::Merge, PatchType::Apply],
    }
}

/// A PATCH body, parsed once. A patch is applied inside the update's retry loop (to the object
/// as read again after a lost race), so it is parsed before the loop and applied as often as
/// needed. A body that does not parse is refused only when it is applied — after the object is
/// read, so a patch of a missing object is 404 whatever its body, as in kube's handler.
#[derive(Debug, Clone)]
pub struct Body {
    parsed: Result<Value, String>,
}

impl Body {
    /// Parses `bytes` (with Go's message for a truncated document).
    pub fn parse(bytes: &[u8]) -> Body {
        Body { parsed: decode_json(bytes) }
    }

    /// The parsed document, if the body parses.
    pub fn parsed(&self) -> Option<&Value> {
        self.parsed.as_ref().ok()
    }

    /// The parsed document, or the handler's 400 (`wrap` makes it the patch type's error).
    fn document(&self, wrap: fn(String) -> PatchError) -> Result<&Value, PatchError> {
        self.parsed.as_ref().map_err(|e| wrap(e.clone()))
    }
}

/// Applies `body` of `patch_type` to `original` and returns the patched document; `original`
/// is never modified, so a failed patch leaves nothing half-applied.
///
/// Only [`PatchType::Json`] and [`PatchType::Merge`] are applied here. Strategic merge patch is
/// refused with the 415 custom resources get (see [`apply_to`] for the built-in kinds); apply
/// patches are the caller's to route elsewhere and get the same 415 if they arrive here.
pub fn apply(patch_type: PatchType, original: &Value, body: &Body) -> Result<Value, PatchError> {
    match patch_type {
        PatchType::Json => apply_json_patch(original, body),
        PatchType::Merge => apply_merge_patch(original, body),
        PatchType::StrategicMerge | PatchType::Apply => {
            Err(PatchError::unsupported_media_type(&[PatchType::Json, PatchType::Merge]))
        }
    }
}

/// [`apply`] for an object of a kind with strategic merge patch metadata `strategic` (`None`
/// for custom resources and definitions): a strategic merge patch applies with it.
pub fn apply_to(
    strategic: Option<&'static Schema>,
    patch_type: PatchType,
    original: &Value,
    body: &Body,
) -> Result<Value, PatchError> {
    match (patch_type, strategic) {
        (PatchType::StrategicMerge, Some(schema)) => strategic::apply(schema, original, body),
        _ => apply(patch_type, original, body),
    }
}

/// RFC 6902 with Kubernetes' envelope (see the module documentation).
fn apply_json_patch(original: &Value, body: &Body) -> Result<Value, PatchError> {
    let operations = match body.document(PatchError::Decode)? {
        // Go decodes `null` into a nil slice: no operations, nothing changes.
        Value::Null => return Ok(original.clone()),
        Value::Array(items) => items,
        other => return Err(type_error(other, "[]handlers.jsonPatchOp")),
    };
    for op in operations {
        check_operation_shape(op)?;
    }
    if operations.len() > MAX_JSON_PATCH_OPERATIONS {
        return Err(PatchError::TooManyOperations { got: operations.len() });
    }

    // Applied one at a time to a copy: the copy makes failures atomic, and stepping lets us
    // measure each `copy` against the document as it is at that point.
    let mut doc = original.clone();
    let mut copied_bytes = 0usize;
    for (index, raw) in operations.iter().enumerate() {
        if tests_absent_for_null(&doc, raw) {
            continue;
        }
        let op = <json_patch::PatchOperation as serde::Deserialize>::deserialize(raw)
            .map_err(|e| PatchError::OperationFailed { detail: format!("operation {index}: {e}") })?;
        if let json_patch::PatchOperation::Copy(copy) = &op
            && let Some(source) = doc.pointer(copy.from.as_str())
        {
            copied_bytes = copied_bytes.saturating_add(compact_json_len(source));
            if copied_bytes > MAX_JSON_PATCH_COPY_BYTES {
                return Err(PatchError::OperationFailed {
                    detail: format!(
                        "Unable to complete the copy, the accumulated size increase of copy is {copied_bytes}, \
                         exceeding the limit {MAX_JSON_PATCH_COPY_BYTES}"
                    ),
                });
            }
        }
        json_patch::patch_unsafe(&mut doc, std::slice::from_ref(&op)).map_err(|e| PatchError::OperationFailed {
            detail: format!("operation {index} ({op}) failed at path '{}': {}", e.path, e.kind),
        })?;
    }
    Ok(doc)
}

/// Whether `op` is a `test` that kube's JSON patch library passes where RFC 6902 fails it: a
/// `value` of `null` (or none) against a member that is absent from its object (a `null` member
/// passes both ways). kube-rs' finalizer helper relies on it: it adds the first finalizer with
/// `test /metadata/finalizers null` before the `add`.
fn tests_absent_for_null(doc: &Value, op: &Value) -> bool {
    let Some(op) = op.as_object() else { return false };
    if op.get("op").and_then(Value::as_str) != Some("test") || !op.get("value").is_none_or(Value::is_null) {
        return false;
    }
    let Some((parent, key)) = op.get("path").and_then(Value::as_str).and_then(|p| p.rsplit_once('/')) else {
        return false;
    };
    let key = key.replace("~1", "/").replace("~0", "~");
    matches!(doc.pointer(parent), Some(Value::Object(members)) if members.get(&key).is_none_or(Value::is_null))
}

/// RFC 7386 as evanphx/json-patch v4 does it (see the module documentation).
fn apply_merge_patch(original: &Value, body: &Body) -> Result<Value, PatchError> {
    let mut patch = match body.document(PatchError::Decode)? {
        Value::Null => return Err(PatchError::NullMergePatch),
        Value::Object(patch) => patch.clone(),
        other => return Err(type_error(other, "map[string]interface {}")),
    };
    match original {
        Value::Object(target) => prune_like_kube(target, &mut patch),
        // Kubernetes turns a non-object document straight into the (pruned) patch.
        _ => prune_nulls(&mut patch),
    }
    let mut doc = original.clone();
    json_patch::merge(&mut doc, &Value::Object(patch));
    Ok(doc)
}

/// Parses the body; the error's text, with Go's message for a truncated document.
fn decode_json(body: &[u8]) -> Result<Value, String> {
    serde_json::from_slice(body).map_err(|e| match e.classify() {
        serde_json::error::Category::Eof => "unexpected end of JSON input".to_owned(),
        _ => e.to_string(),
    })
}

/// The handler decodes JSON patches into `[]jsonPatchOp{Op, Path, From string; Value any}`;
/// an element or a string member of the wrong JSON type is a decode error.
fn check_operation_shape(op: &Value) -> Result<(), PatchError> {
    let members = match op {
        Value::Null => return Ok(()),
        Value::Object(members) => members,
        other => return Err(type_error(other, "handlers.jsonPatchOp")),
    };
    for name in ["op", "path", "from"] {
        match members.get(name) {
            None | Some(Value::Null | Value::String(_)) => {}
            Some(other) => {
                return Err(PatchError::Decode(format!(
                    "json: cannot unmarshal {} into Go struct field jsonPatchOp.{name} of type string",
                    versa_schema::objectmeta::json_kind(other)
                )));
            }
        }
    }
    Ok(())
}

/// `json: cannot unmarshal <kind> into Go value of type <go_type>`.
fn type_error(value: &Value, go_type: &str) -> PatchError {
    PatchError::Decode(format!(
        "json: cannot unmarshal {} into Go value of type {go_type}",
        versa_schema::objectmeta::json_kind(value)
    ))
}

/// Prepares a merge patch so that RFC 7386 merging gives evanphx/json-patch's result: values
/// landing where the target has no object to merge into lose all their nulls, arrays included.
fn prune_like_kube(target: &Map<String, Value>, patch: &mut Map<String, Value>) {
    for (key, value) in patch.iter_mut() {
        match (target.get(key), value) {
            // `null` deletes the key, both ways.
            (_, Value::Null) => {}
            (Some(Value::Object(target)), Value::Object(patch)) => prune_like_kube(target, patch),
            // An object member replaced by a non-object keeps the value as sent.
            (Some(Value::Object(_)), _) => {}
            (_, value) => prune_nulls_in(value),
        }
    }
}

/// Removes `null` members and `null` array elements, recursively.
fn prune_nulls(map: &mut Map<String, Value>) {
    map.retain(|_, v| !v.is_null());
    map.values_mut().for_each(prune_nulls_in);
}

fn prune_nulls_in(value: &mut Value) {
    match value {
        Value::Object(map) => prune_nulls(map),
        Value::Array(items) => {
            items.retain(|v| !v.is_null());
            items.iter_mut().for_each(prune_nulls_in);
        }
        _ => {}
    }
}

/// The length of `value` as compact JSON, without building the string.
fn compact_json_len(value: &Value) -> usize {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    // Writing a `Value` into an infallible sink cannot fail.
    let _ = serde_json::to_writer(&mut counter, value);
    counter.0
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn content_types() {
        let cases: &[(&str, Option<PatchType>)] = &[
            ("application/json-patch+json", Some(PatchType::Json)),
            ("application/merge-patch+json", Some(PatchType::Merge)),
            ("application/strategic-merge-patch+json", Some(PatchType::StrategicMerge)),
            ("application/apply-patch+yaml", Some(PatchType::Apply)),
            ("application/merge-patch+json; charset=utf-8", Some(PatchType::Merge)),
            ("Application/JSON-Patch+JSON", Some(PatchType::Json)),
            (" application/json-patch+json ;foo=bar", Some(PatchType::Json)),
            ("application/json", None),
            ("application/apply-patch+cbor", None),
            ("", None),
        ];
        for (ct, want) in cases {
            assert_eq!(PatchType::from_content_type(ct), *want, "{ct:?}");
        }
        for t in [PatchType::Json, PatchType::Merge, PatchType::StrategicMerge, PatchType::Apply] {
            assert_eq!(PatchType::from_content_type(t.media_type()), Some(t));
        }
    }

    /// `(name, patch type, original, body, expected result)`.
    type OkCase = (&'static str, PatchType, Value, &'static str, Value);

    #[test]
    fn patches_that_apply() {
        let obj = json!({"metadata": {"name": "a", "labels": {"x": "1"}}, "spec": {"list": [1, 2], "n": 1}});
        let cases: Vec<OkCase> = vec![
            (
                "json: add a label",
                PatchType::Json,
                obj.clone(),
                r#"[{"op":"add","path":"/metadata/labels/y","value":"2"}]"#,
                json!({"metadata": {"name": "a", "labels": {"x": "1", "y": "2"}}, "spec": {"list": [1, 2], "n": 1}}),
            ),
            (
                // kube-rs' finalizer helper: kube's library passes a null test of an absent member.
                "json: test null of an absent member, then add",
                PatchType::Json,
                obj.clone(),
                r#"[{"op":"test","path":"/metadata/finalizers","value":null},{"op":"add","path":"/metadata/finalizers","value":["f"]}]"#,
                json!({"metadata": {"name": "a", "labels": {"x": "1"}, "finalizers": ["f"]}, "spec": {"list": [1, 2], "n": 1}}),
            ),
            (
                "json: test then replace",
                PatchType::Json,
                obj.clone(),
                r#"[{"op":"test","path":"/spec/n","value":1},{"op":"replace","path":"/spec/n","value":5}]"#,
                json!({"metadata": {"name": "a", "labels": {"x": "1"}}, "spec": {"list": [1, 2], "n": 5}}),
            ),
            (
                "json: append, move, copy, remove",
                PatchType::Json,
                json!({"a": [1], "b": {}}),
                r#"[{"op":"add","path":"/a/-","value":2},{"op":"move","from":"/a/0","path":"/b/first"},
                    {"op":"copy","from":"/a","path":"/c"},{"op":"remove","path":"/a"}]"#,
                json!({"b": {"first": 1}, "c": [2]}),
            ),
            ("json: empty list", PatchType::Json, obj.clone(), "[]", obj.clone()),
            ("json: null is no operations", PatchType::Json, obj.clone(), "null", obj.clone()),
            (
                "json: members beyond op/path/from/value are ignored",
                PatchType::Json,
                json!({}),
                r#"[{"op":"add","path":"/a","value":1,"comment":"hi"}]"#,
                json!({"a": 1}),
            ),
            (
                "merge: set, delete, replace array",
                PatchType::Merge,
                obj.clone(),
                r#"{"metadata":{"labels":{"x":null,"z":"3"}},"spec":{"list":[3]}}"#,
                json!({"metadata": {"name": "a", "labels": {"z": "3"}}, "spec": {"list": [3], "n": 1}}),
            ),
            ("merge: empty object", PatchType::Merge, obj.clone(), "{}", obj.clone()),
            (
                "merge: deleting a missing key is fine",
                PatchType::Merge,
                json!({"a": 1}),
                r#"{"b":null}"#,
                json!({"a": 1}),
            ),
            (
                "merge: a new subtree loses its nulls, in arrays too (kube)",
                PatchType::Merge,
                json!({}),
                r#"{"spec":{"a":null,"list":[1,null,{"b":null,"c":2}]}}"#,
                json!({"spec": {"list": [1, {"c": 2}]}}),
            ),
            (
                "merge: an object replacing a scalar loses its nulls (kube)",
                PatchType::Merge,
                json!({"spec": "x"}),
                r#"{"spec":{"a":null,"l":[null]}}"#,
                json!({"spec": {"l": []}}),
            ),
            (
                "merge: an array replacing an object member keeps its nulls (kube)",
                PatchType::Merge,
                json!({"spec": {"l": {"a": 1}}}),
                r#"{"spec":{"l":[1,null]}}"#,
                json!({"spec": {"l": [1, null]}}),
            ),
            (
                "merge: a scalar replaces an object",
                PatchType::Merge,
                json!({"spec": {"a": 1}}),
                r#"{"spec":5}"#,
                json!({"spec": 5}),
            ),
            (
                "merge: onto a non-object document gives the pruned patch",
                PatchType::Merge,
                json!([1, 2]),
                r#"{"a":null,"b":[null,1]}"#,
                json!({"b": [1]}),
            ),
        ];
        for (name, patch_type, original, body, want) in cases {
            let before = original.clone();
            let got =
                apply(patch_type, &original, &Body::parse(body.as_bytes())).unwrap_or_else(|e| panic!("{name}: {e:?}"));
            assert_eq!(got, want, "{name}");
            assert_eq!(original, before, "{name}: original untouched");
        }
    }

    /// `(name, patch type, body, status code, message)`.
    type ErrCase = (&'static str, PatchType, &'static str, u16, &'static str);

    #[test]
    fn patches_that_fail() {
        const REJECTED: &str = "the server rejected our request due to an error in our request";
        let original = json!({"metadata": {"name": "a"}, "spec": {"list": [1]}});
        let cases: Vec<ErrCase> = vec![
            // Decoding (400).
            ("json: empty body", PatchType::Json, "", 400, "error decoding patch: unexpected end of JSON input"),
            ("json: truncated", PatchType::Json, "[{", 400, "error decoding patch: unexpected end of JSON input"),
            (
                "json: object instead of a list",
                PatchType::Json,
                r#"{"op":"add"}"#,
                400,
                "error decoding patch: json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp",
            ),
            (
                "json: string instead of a list",
                PatchType::Json,
                r#""x""#,
                400,
                "error decoding patch: json: cannot unmarshal string into Go value of type []handlers.jsonPatchOp",
            ),
            (
                "json: element is not an object",
                PatchType::Json,
                "[1]",
                400,
                "error decoding patch: json: cannot unmarshal number into Go value of type handlers.jsonPatchOp",
            ),
            (
                "json: path is not a string",
                PatchType::Json,
                r#"[{"op":"remove","path":5}]"#,
                400,
                "error decoding patch: json: cannot unmarshal number into Go struct field jsonPatchOp.path of type string",
            ),
            (
                "json: op is not a string",
                PatchType::Json,
                r#"[{"op":true,"path":"/a"}]"#,
                400,
                "error decoding patch: json: cannot unmarshal bool into Go struct field jsonPatchOp.op of type string",
            ),
            (
                "json: from is not a string",
                PatchType::Json,
                r#"[{"op":"move","from":["a"],"path":"/a"}]"#,
                400,
                "error decoding patch: json: cannot unmarshal array into Go struct field jsonPatchOp.from of type string",
            ),
            ("merge: null", PatchType::Merge, "null", 400, "Invalid JSON Patch"),
            (
                "merge: array",
                PatchType::Merge,
                "[]",
                400,
                "error decoding patch: json: cannot unmarshal array into Go value of type map[string]interface {}",
            ),
            (
                "merge: number",
                PatchType::Merge,
                "5",
                400,
                "error decoding patch: json: cannot unmarshal number into Go value of type map[string]interface {}",
            ),
            ("merge: empty body", PatchType::Merge, "", 400, "error decoding patch: unexpected end of JSON input"),
            // Operations (422).
            (
                "json: test fails",
                PatchType::Json,
                r#"[{"op":"test","path":"/metadata/name","value":"b"}]"#,
                422,
                REJECTED,
            ),
            ("json: remove missing", PatchType::Json, r#"[{"op":"remove","path":"/spec/nope"}]"#, 422, REJECTED),
            (
                "json: add under missing parent",
                PatchType::Json,
                r#"[{"op":"add","path":"/x/y","value":1}]"#,
                422,
                REJECTED,
            ),
            (
                "json: replace missing",
                PatchType::Json,
                r#"[{"op":"replace","path":"/spec/x","value":1}]"#,
                422,
                REJECTED,
            ),
            (
                "json: index out of range",
                PatchType::Json,
                r#"[{"op":"add","path":"/spec/list/5","value":1}]"#,
                422,
                REJECTED,
            ),
            ("json: unknown op", PatchType::Json, r#"[{"op":"frob","path":"/a"}]"#, 422, REJECTED),
            ("json: missing op", PatchType::Json, r#"[{"path":"/a"}]"#, 422, REJECTED),
            ("json: null element", PatchType::Json, "[null]", 422, REJECTED),
            ("json: missing value", PatchType::Json, r#"[{"op":"add","path":"/a"}]"#, 422, REJECTED),
            ("json: missing path", PatchType::Json, r#"[{"op":"remove"}]"#, 422, REJECTED),
            ("json: path without slash", PatchType::Json, r#"[{"op":"add","path":"a","value":1}]"#, 422, REJECTED),
            // Other patch types (415).
            (
                "strategic merge",
                PatchType::StrategicMerge,
                "{}",
                415,
                "the body of the request was in an unknown format - accepted media types include: \
                 application/json-patch+json, application/merge-patch+json",
            ),
        ];
        for (name, patch_type, body, code, message) in cases {
            let err = apply(patch_type, &original, &Body::parse(body.as_bytes())).expect_err(name);
            assert_eq!((err.status_code(), err.message().as_str()), (code, message), "{name}: {err:?}");
        }
    }

    /// The 415's list, in kube's order: the installer's for built-in kinds, apiextensions'
    /// for custom resources.
    #[test]
    fn accepted_patch_types() {
        let listed = |b| accepted(b).iter().map(|t| t.media_type()).collect::<Vec<_>>().join(", ");
        assert_eq!(
            listed(Some(&versa_registry::kinds::patch::METADATA_ONLY)),
            "application/json-patch+json, application/merge-patch+json, \
             application/strategic-merge-patch+json, application/apply-patch+yaml"
        );
        assert_eq!(
            listed(None),
            "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
        );
    }

    #[test]
    fn error_kinds_map_to_status() {
        let cases: Vec<(PatchError, u16, &str)> = vec![
            (PatchError::Decode("x".into()), 400, "BadRequest"),
            (PatchError::NullMergePatch, 400, "BadRequest"),
            (PatchError::TooManyOperations { got: 1 }, 413, "RequestEntityTooLarge"),
            (PatchError::OperationFailed { detail: "x".into() }, 422, "Invalid"),
            (PatchError::unsupported_media_type(&[PatchType::Json]), 415, "UnsupportedMediaType"),
            (PatchError::BadRequest("x".into()), 400, "BadRequest"),
            (PatchError::Internal("x".into()), 500, ""),
        ];
        for (err, code, reason) in cases {
            assert_eq!((err.status_code(), err.reason()), (code, reason), "{err:?}");
        }
    }

    #[test]
    fn operation_failures_keep_their_reason_as_detail() {
        let err = apply(
            PatchType::Json,
            &json!({"a": 1}),
            &Body::parse(br#"[{"op":"add","path":"/b","value":1},{"op":"test","path":"/a","value":2}]"#),
        )
        .unwrap_err();
        let detail = err.detail().unwrap();
        assert!(
            detail.starts_with("operation 1 (") && detail.ends_with("failed at path '/a': value did not match"),
            "{detail}"
        );
    }

    #[test]
    fn operation_limit() {
        let op = r#"{"op":"test","path":"/a","value":1}"#;
        let body = |n: usize| format!("[{}]", vec![op; n].join(","));
        let original = json!({"a": 1});
        assert_eq!(
            apply(PatchType::Json, &original, &Body::parse(body(MAX_JSON_PATCH_OPERATIONS).as_bytes())).unwrap(),
            original
        );
        let err = apply(PatchType::Json, &original, &Body::parse(body(MAX_JSON_PATCH_OPERATIONS + 1).as_bytes()))
            .unwrap_err();
        assert_eq!(err.status_code(), 413);
        assert_eq!(
            err.message(),
            "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001"
        );
        // The count is checked before any operation runs: a failing first operation does not matter.
        let failing =
            format!("[{{\"op\":\"remove\",\"path\":\"/nope\"}},{}]", vec![op; MAX_JSON_PATCH_OPERATIONS].join(","));
        assert_eq!(apply(PatchType::Json, &original, &Body::parse(failing.as_bytes())).unwrap_err().status_code(), 413);
    }

    #[test]
    fn copy_growth_limit() {
        // A 1 MiB string: two copies stay under 3 MiB, a third goes over.
        let original = json!({"big": "x".repeat(1024 * 1024)});
        let copy = |from: &str, to: &str| format!(r#"{{"op":"copy","from":"{from}","path":"/{to}"}}"#);
        let two = format!("[{},{}]", copy("/big", "c1"), copy("/big", "c2"));
        assert!(apply(PatchType::Json, &original, &Body::parse(two.as_bytes())).is_ok());
        let three = format!("[{},{},{}]", copy("/big", "c1"), copy("/big", "c2"), copy("/big", "c3"));
        let err = apply(PatchType::Json, &original, &Body::parse(three.as_bytes())).unwrap_err();
        assert_eq!(err.status_code(), 422);
        assert!(err.detail().unwrap().starts_with("Unable to complete the copy"), "{err:?}");
        // A copy is measured as the source is when it runs: the whole document after one copy
        // is already 2 MiB.
        let nested = format!("[{},{}]", copy("/big", "c1"), copy("", "all"));
        assert_eq!(apply(PatchType::Json, &original, &Body::parse(nested.as_bytes())).unwrap_err().status_code(), 422);
    }
}
