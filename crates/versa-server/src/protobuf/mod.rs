//! Request bodies in Kubernetes' protobuf (`application/vnd.kubernetes.protobuf`), decoded
//! into the JSON the same object has in kube's JSON form. client-go's typed clientsets — so
//! `kubectl create namespace`, and the event recorders of Go operators — send built-in kinds
//! this way, and kube-apiserver accepts it; versa serves a few core kinds itself, so it must
//! read them too. Answers stay JSON (those clients accept both). This module owns the wire
//! format: the envelope (the magic bytes `k8s\0`, then a `runtime.Unknown` whose `typeMeta`
//! names the kind and whose `raw` holds the object), and the messages of the kinds it decodes —
//! v1 `Namespace`, `Event`, `Secret` and `ConfigMap`, coordination/v1 `Lease`, rbac/v1, and meta/v1
//! `DeleteOptions` (the body of a typed client's
//! DELETE, in whatever group version it names, as kube decodes it) with everything they
//! contain: `ObjectMeta` in full, owner references, managed fields, times.
//!
//! The JSON is what Go's `encoding/json` writes for the struct the bytes decode into: kube's
//! field names; fields tagged `omitempty` left out when zero; fields that are not, and
//! struct-valued ones (which `omitempty` never omits), written even when absent
//! (`"reportingComponent": ""`, `"spec": {}`, a zero time as `null`); pointer fields written
//! exactly when present on the wire (`"gracePeriodSeconds": 0`). `metav1.Time` is RFC 3339 at
//! seconds (its protobuf nanoseconds are dropped, as kube drops them), `metav1.MicroTime` at
//! microseconds (truncated), both in UTC; `metadata.creationTimestamp` is left out when zero
//! (its `omitzero`, kube 1.34); `fieldsV1` is the JSON text it carries; int64s are JSON numbers.
//!
//! Hand-written because no crate decodes Kubernetes' protobuf into JSON values (k8s-openapi's
//! types are JSON-only; prost would generate structs for the nearly 300 messages of upstream's
//! core/v1 and meta/v1 `.proto` files, and the JSON rules above would still have to be written
//! over them), and the set of kinds is small: the field tables (`kinds`), checked against
//! upstream's `generated.proto` and the json tags of its Go types (excerpts of the `.proto`
//! files, under `proto/k8s/`, let the tests encode real bytes with `protoc`), drive one small
//! reader.
//!
//! Bounds: nothing is dropped — a field number or wire type the tables do not list, a
//! singular field or map key given twice, a string that is not UTF-8, an int32 out of range, a
//! time outside the years 0000–9999, `fieldsV1` that is not JSON (kube also allows CBOR
//! there), an encoded `raw`, or any other kind is an error rather than a guess. Every length
//! is checked against what is left of its buffer, varints stop at ten bytes, and nesting is as
//! deep as the tables (five messages, then `fieldsV1`'s JSON under serde_json's own limit), so
//! no input recurses further or panics; the output grows linearly with the input, which the
//! caller has already bounded ([`crate::codec::MAX_BODY_BYTES`]).
//!
//! The modules, each importing only those before it: `error` ([`ProtobufError`]), `wire` (the
//! wire primitives), `kinds` (the field tables of the messages), `message` (a message decoded
//! by its table, times, `fieldsV1`), `envelope` (`runtime.Unknown`); [`decode`] here puts them
//! together.

mod envelope;
mod error;
mod kinds;
mod message;
mod wire;

use serde_json::{Map, Value};

use envelope::{Envelope, MAGIC, PROTOBUF_CONTENT_TYPES};
pub use error::ProtobufError;
use error::Result;
use kinds::{
    CLUSTER_ROLE, CONFIG_MAP, DELETE_OPTIONS, EVENT, LEASE, NAMESPACE, ROLE, ROLE_BINDING, SECRET,
    SELF_SUBJECT_ACCESS_REVIEW, SELF_SUBJECT_REVIEW, SELF_SUBJECT_RULES_REVIEW, SERVICE_ACCOUNT, SUBJECT_ACCESS_REVIEW,
    TOKEN_REQUEST, TOKEN_REVIEW,
};
use message::message;

/// Decodes a Kubernetes protobuf body (magic, `runtime.Unknown` envelope, object) into the
/// object's JSON form, `kind` and `apiVersion` taken from the envelope.
pub fn decode(body: &[u8]) -> Result<Value> {
    let data = body.strip_prefix(MAGIC).ok_or(ProtobufError::Magic)?;
    if data.is_empty() {
        return Err(ProtobufError::Empty);
    }
    let envelope = Envelope::read(data)?;
    if !envelope.content_encoding.is_empty() {
        return Err(ProtobufError::ContentEncoding(envelope.content_encoding));
    }
    if !PROTOBUF_CONTENT_TYPES.contains(&envelope.content_type.as_str()) {
        return Err(ProtobufError::ContentType(envelope.content_type));
    }
    if envelope.kind.is_empty() {
        return Err(ProtobufError::NoKind);
    }
    let desc = match (envelope.api_version.as_str(), envelope.kind.as_str()) {
        ("v1", "Namespace") => &NAMESPACE,
        ("v1", "Event") => &EVENT,
        ("v1", "Secret") => &SECRET,
        ("v1", "ConfigMap") => &CONFIG_MAP,
        ("v1", "ServiceAccount") => &SERVICE_ACCOUNT,
        ("coordination.k8s.io/v1", "Lease") => &LEASE,
        ("rbac.authorization.k8s.io/v1", "Role") => &ROLE,
        ("rbac.authorization.k8s.io/v1", "ClusterRole") => &CLUSTER_ROLE,
        ("rbac.authorization.k8s.io/v1", "RoleBinding" | "ClusterRoleBinding") => &ROLE_BINDING,
        ("authorization.k8s.io/v1", "SelfSubjectAccessReview") => &SELF_SUBJECT_ACCESS_REVIEW,
        ("authorization.k8s.io/v1", "SubjectAccessReview" | "LocalSubjectAccessReview") => &SUBJECT_ACCESS_REVIEW,
        ("authorization.k8s.io/v1", "SelfSubjectRulesReview") => &SELF_SUBJECT_RULES_REVIEW,
        ("authentication.k8s.io/v1", "SelfSubjectReview") => &SELF_SUBJECT_REVIEW,
        ("authentication.k8s.io/v1", "TokenRequest") => &TOKEN_REQUEST,
        ("authentication.k8s.io/v1", "TokenReview") => &TOKEN_REVIEW,
        // kube decodes DeleteOptions in every group version (it is one message in all of them).
        (_, "DeleteOptions") => &DELETE_OPTIONS,
        _ => return Err(ProtobufError::Kind { api_version: envelope.api_version, kind: envelope.kind }),
    };
    // TypeMeta's fields, both `omitempty`.
    let mut object = Map::new();
    object.insert("kind".to_owned(), Value::String(envelope.kind));
    if !envelope.api_version.is_empty() {
        object.insert("apiVersion".to_owned(), Value::String(envelope.api_version));
    }
    object.extend(message(desc, envelope.raw)?);
    Ok(Value::Object(object))
}

#[cfg(test)]
mod tests;
