//! The messages versa decodes, as tables: for each, its protobuf name and its fields in the Go
//! struct's order — number, JSON name, type ([`Ty`]) and when Go's `encoding/json` writes it
//! ([`Rule`]). v1 `Namespace`, `Event`, `Secret`, `ConfigMap`, coordination/v1 `Lease`, the four
//! rbac/v1 kinds and meta/v1 `DeleteOptions`, with
//! everything they contain: `ObjectMeta` in full, owner references, managed fields, times. A
//! new kind is a new table here and a line in `decode`'s match.

use super::wire::{LEN, VARINT};

/// How a field is read from the wire and what it becomes in JSON.
#[derive(Debug, Clone, Copy)]
pub(super) enum Ty {
    /// `string` (varint length, UTF-8 checked): a JSON string.
    Str,
    /// `int64`: a JSON number.
    Int64,
    /// `int32`, refused outside its range (a 64-bit varint on the wire).
    Int32,
    /// `bool`: any non-zero varint is true, as in Go.
    Bool,
    /// `metav1.Time`: RFC 3339 at seconds, or null when empty or Go's zero time.
    Time,
    /// `metav1.MicroTime`: RFC 3339 at microseconds, or null likewise.
    MicroTime,
    /// `metav1.FieldsV1`: the JSON its `Raw` bytes hold, null when they are empty.
    FieldsV1,
    /// A singular message: a JSON object.
    Message(&'static Message),
    /// `repeated string`, one element per occurrence (never packed).
    Strings,
    /// A repeated message.
    Messages(&'static Message),
    /// `map<string, string>` (or `map<string, bytes>` with [`BYTES_ENTRY`]): repeated entries
    /// (key 1, value 2), each key once.
    Map(&'static Message),
    /// `bytes`: a JSON string in standard base64, as Go writes `[]byte`.
    Bytes,
}

impl Ty {
    pub(super) fn wire(self) -> u8 {
        match self {
            Ty::Int64 | Ty::Int32 | Ty::Bool => VARINT,
            _ => LEN,
        }
    }
}

/// When Go's `encoding/json` writes a field of the struct the message decodes into.
#[derive(Debug, Clone, Copy)]
pub(super) enum Rule {
    /// `omitempty` on a string, number, bool, slice or map, or `omitzero` on a time: written
    /// unless zero or empty.
    Omit,
    /// No `omitempty`, or `omitempty` on a struct (which never omits it): always written, its
    /// zero value when absent (`""`, `{}` with the struct's own defaults, a time's null).
    Keep,
    /// A pointer with `omitempty`: written exactly when the field is on the wire.
    Pointer,
}

/// One field: its number, its JSON name, its type and when it is written.
#[derive(Debug)]
pub(super) struct Field {
    pub(super) number: u64,
    pub(super) json: &'static str,
    pub(super) ty: Ty,
    pub(super) rule: Rule,
}

/// A message: its protobuf name (for errors) and its fields, in the Go struct's order.
#[derive(Debug)]
pub(super) struct Message {
    pub(super) name: &'static str,
    pub(super) fields: &'static [Field],
}

const fn field(number: u64, json: &'static str, ty: Ty, rule: Rule) -> Field {
    Field { number, json, ty, rule }
}

use Rule::{Keep, Omit, Pointer};

// Field numbers as in upstream's generated.proto: k8s.io/apimachinery pkg/runtime (TypeMeta),
// pkg/apis/meta/v1 (ObjectMeta to Preconditions) and k8s.io/api core/v1 (the rest); the
// rules follow the json tags of the Go types.

pub(super) static TYPE_META: Message = Message {
    name: "runtime.TypeMeta",
    fields: &[field(1, "apiVersion", Ty::Str, Keep), field(2, "kind", Ty::Str, Keep)],
};

pub(super) static OBJECT_META: Message = Message {
    name: "ObjectMeta",
    fields: &[
        field(1, "name", Ty::Str, Omit),
        field(2, "generateName", Ty::Str, Omit),
        field(3, "namespace", Ty::Str, Omit),
        field(4, "selfLink", Ty::Str, Omit),
        field(5, "uid", Ty::Str, Omit),
        field(6, "resourceVersion", Ty::Str, Omit),
        field(7, "generation", Ty::Int64, Omit),
        // `omitempty,omitzero` since kube 1.34 (before it, a zero time was `null`).
        field(8, "creationTimestamp", Ty::Time, Omit),
        field(9, "deletionTimestamp", Ty::Time, Pointer),
        field(10, "deletionGracePeriodSeconds", Ty::Int64, Pointer),
        field(11, "labels", Ty::Map(&LABELS_ENTRY), Omit),
        field(12, "annotations", Ty::Map(&ANNOTATIONS_ENTRY), Omit),
        field(13, "ownerReferences", Ty::Messages(&OWNER_REFERENCE), Omit),
        field(14, "finalizers", Ty::Strings, Omit),
        // 15 (initializers) and 16 (clusterName) are gone upstream.
        field(17, "managedFields", Ty::Messages(&MANAGED_FIELDS_ENTRY), Omit),
    ],
};

pub(super) static LABELS_ENTRY: Message = Message { name: "ObjectMeta.LabelsEntry", fields: MAP_ENTRY };
pub(super) static ANNOTATIONS_ENTRY: Message = Message { name: "ObjectMeta.AnnotationsEntry", fields: MAP_ENTRY };
static MAP_ENTRY: &[Field] = &[field(1, "key", Ty::Str, Keep), field(2, "value", Ty::Str, Keep)];

pub(super) static OWNER_REFERENCE: Message = Message {
    name: "OwnerReference",
    fields: &[
        field(5, "apiVersion", Ty::Str, Keep),
        field(1, "kind", Ty::Str, Keep),
        field(3, "name", Ty::Str, Keep),
        field(4, "uid", Ty::Str, Keep),
        field(6, "controller", Ty::Bool, Pointer),
        field(7, "blockOwnerDeletion", Ty::Bool, Pointer),
    ],
};

pub(super) static MANAGED_FIELDS_ENTRY: Message = Message {
    name: "ManagedFieldsEntry",
    fields: &[
        field(1, "manager", Ty::Str, Omit),
        field(2, "operation", Ty::Str, Omit),
        field(3, "apiVersion", Ty::Str, Omit),
        field(4, "time", Ty::Time, Pointer),
        // 5 (fields) is gone upstream.
        field(6, "fieldsType", Ty::Str, Omit),
        field(7, "fieldsV1", Ty::FieldsV1, Pointer),
        field(8, "subresource", Ty::Str, Omit),
    ],
};

pub(super) static TIME: Message = Message { name: "Time", fields: TIMESTAMP };
pub(super) static MICRO_TIME: Message = Message { name: "MicroTime", fields: TIMESTAMP };
static TIMESTAMP: &[Field] = &[field(1, "seconds", Ty::Int64, Keep), field(2, "nanos", Ty::Int32, Keep)];

pub(super) static DELETE_OPTIONS: Message = Message {
    name: "DeleteOptions",
    fields: &[
        field(1, "gracePeriodSeconds", Ty::Int64, Pointer),
        field(2, "preconditions", Ty::Message(&PRECONDITIONS), Pointer),
        field(3, "orphanDependents", Ty::Bool, Pointer),
        field(4, "propagationPolicy", Ty::Str, Pointer),
        field(5, "dryRun", Ty::Strings, Omit),
        field(6, "ignoreStoreReadErrorWithClusterBreakingPotential", Ty::Bool, Pointer),
    ],
};

pub(super) static PRECONDITIONS: Message = Message {
    name: "Preconditions",
    fields: &[field(1, "uid", Ty::Str, Pointer), field(2, "resourceVersion", Ty::Str, Pointer)],
};

/// v1 `Secret` (helm keeps its releases in Secrets, through client-go's typed client).
pub(super) static SECRET: Message = Message {
    name: "Secret",
    fields: &[
        field(1, "metadata", Ty::Message(&OBJECT_META), Keep),
        field(2, "data", Ty::Map(&BYTES_ENTRY), Omit),
        field(3, "type", Ty::Str, Omit),
        field(4, "stringData", Ty::Map(&STRING_DATA_ENTRY), Omit),
        field(5, "immutable", Ty::Bool, Pointer),
    ],
};

pub(super) static BYTES_ENTRY: Message =
    Message { name: "Secret.DataEntry", fields: &[field(1, "key", Ty::Str, Keep), field(2, "value", Ty::Bytes, Keep)] };
pub(super) static STRING_DATA_ENTRY: Message = Message { name: "Secret.StringDataEntry", fields: MAP_ENTRY };

pub(super) static NAMESPACE: Message = Message {
    name: "Namespace",
    fields: &[
        field(1, "metadata", Ty::Message(&OBJECT_META), Keep),
        field(2, "spec", Ty::Message(&NAMESPACE_SPEC), Keep),
        field(3, "status", Ty::Message(&NAMESPACE_STATUS), Keep),
    ],
};

pub(super) static NAMESPACE_SPEC: Message =
    Message { name: "NamespaceSpec", fields: &[field(1, "finalizers", Ty::Strings, Omit)] };

pub(super) static NAMESPACE_STATUS: Message = Message {
    name: "NamespaceStatus",
    fields: &[field(1, "phase", Ty::Str, Omit), field(2, "conditions", Ty::Messages(&NAMESPACE_CONDITION), Omit)],
};

pub(super) static NAMESPACE_CONDITION: Message = Message {
    name: "NamespaceCondition",
    fields: &[
        field(1, "type", Ty::Str, Keep),
        field(2, "status", Ty::Str, Keep),
        // 3 is unused upstream.
        field(4, "lastTransitionTime", Ty::Time, Keep),
        field(5, "reason", Ty::Str, Omit),
        field(6, "message", Ty::Str, Omit),
    ],
};

pub(super) static EVENT: Message = Message {
    name: "Event",
    fields: &[
        field(1, "metadata", Ty::Message(&OBJECT_META), Keep),
        field(2, "involvedObject", Ty::Message(&OBJECT_REFERENCE), Keep),
        field(3, "reason", Ty::Str, Omit),
        field(4, "message", Ty::Str, Omit),
        field(5, "source", Ty::Message(&EVENT_SOURCE), Keep),
        field(6, "firstTimestamp", Ty::Time, Keep),
        field(7, "lastTimestamp", Ty::Time, Keep),
        field(8, "count", Ty::Int32, Omit),
        field(9, "type", Ty::Str, Omit),
        field(10, "eventTime", Ty::MicroTime, Keep),
        field(11, "series", Ty::Message(&EVENT_SERIES), Pointer),
        field(12, "action", Ty::Str, Omit),
        field(13, "related", Ty::Message(&OBJECT_REFERENCE), Pointer),
        field(14, "reportingComponent", Ty::Str, Keep),
        field(15, "reportingInstance", Ty::Str, Keep),
    ],
};

pub(super) static OBJECT_REFERENCE: Message = Message {
    name: "ObjectReference",
    fields: &[
        field(1, "kind", Ty::Str, Omit),
        field(2, "namespace", Ty::Str, Omit),
        field(3, "name", Ty::Str, Omit),
        field(4, "uid", Ty::Str, Omit),
        field(5, "apiVersion", Ty::Str, Omit),
        field(6, "resourceVersion", Ty::Str, Omit),
        field(7, "fieldPath", Ty::Str, Omit),
    ],
};

pub(super) static EVENT_SOURCE: Message =
    Message { name: "EventSource", fields: &[field(1, "component", Ty::Str, Omit), field(2, "host", Ty::Str, Omit)] };

pub(super) static EVENT_SERIES: Message = Message {
    name: "EventSeries",
    fields: &[field(1, "count", Ty::Int32, Omit), field(2, "lastObservedTime", Ty::MicroTime, Keep)],
};

/// v1 `ConfigMap` (operators' settings, through client-go's typed client).
pub(super) static CONFIG_MAP: Message = Message {
    name: "ConfigMap",
    fields: &[
        field(1, "metadata", Ty::Message(&OBJECT_META), Keep),
        field(4, "immutable", Ty::Bool, Pointer),
        field(2, "data", Ty::Map(&CONFIG_MAP_DATA_ENTRY), Omit),
        field(3, "binaryData", Ty::Map(&CONFIG_MAP_BINARY_DATA_ENTRY), Omit),
    ],
};

pub(super) static CONFIG_MAP_DATA_ENTRY: Message = Message { name: "ConfigMap.DataEntry", fields: MAP_ENTRY };
pub(super) static CONFIG_MAP_BINARY_DATA_ENTRY: Message = Message {
    name: "ConfigMap.BinaryDataEntry",
    fields: &[field(1, "key", Ty::Str, Keep), field(2, "value", Ty::Bytes, Keep)],
};

/// coordination/v1 `Lease` (leader election: client-go's `LeaseLock` writes it with the typed
/// client). Every field of its spec is a pointer.
pub(super) static LEASE: Message = Message {
    name: "Lease",
    fields: &[field(1, "metadata", Ty::Message(&OBJECT_META), Keep), field(2, "spec", Ty::Message(&LEASE_SPEC), Keep)],
};

pub(super) static LEASE_SPEC: Message = Message {
    name: "LeaseSpec",
    fields: &[
        field(1, "holderIdentity", Ty::Str, Pointer),
        field(2, "leaseDurationSeconds", Ty::Int32, Pointer),
        field(3, "acquireTime", Ty::MicroTime, Pointer),
        field(4, "renewTime", Ty::MicroTime, Pointer),
        field(5, "leaseTransitions", Ty::Int32, Pointer),
        field(6, "strategy", Ty::Str, Pointer),
        field(7, "preferredHolder", Ty::Str, Pointer),
    ],
};

/// rbac/v1 `Role` (`kubectl create role`, client-go's typed client).
pub(super) static ROLE: Message = Message {
    name: "Role",
    fields: &[
        field(1, "metadata", Ty::Message(&OBJECT_META), Keep),
        field(2, "rules", Ty::Messages(&POLICY_RULE), Keep),
    ],
};

/// rbac/v1 `ClusterRole`.
pub(super) static CLUSTER_ROLE: Message = Message {
    name: "ClusterRole",
    fields: &[
        field(1, "metadata", Ty::Message(&OBJECT_META), Keep),
        field(2, "rules", Ty::Messages(&POLICY_RULE), Keep),
        field(3, "aggregationRule", Ty::Message(&AGGREGATION_RULE), Pointer),
    ],
};

pub(super) static POLICY_RULE: Message = Message {
    name: "PolicyRule",
    fields: &[
        field(1, "verbs", Ty::Strings, Keep),
        field(2, "apiGroups", Ty::Strings, Omit),
        field(3, "resources", Ty::Strings, Omit),
        field(4, "resourceNames", Ty::Strings, Omit),
        field(5, "nonResourceURLs", Ty::Strings, Omit),
    ],
};

pub(super) static AGGREGATION_RULE: Message = Message {
    name: "AggregationRule",
    fields: &[field(1, "clusterRoleSelectors", Ty::Messages(&LABEL_SELECTOR), Omit)],
};

/// meta/v1 `LabelSelector`.
pub(super) static LABEL_SELECTOR: Message = Message {
    name: "LabelSelector",
    fields: &[
        field(1, "matchLabels", Ty::Map(&MATCH_LABELS_ENTRY), Omit),
        field(2, "matchExpressions", Ty::Messages(&LABEL_SELECTOR_REQUIREMENT), Omit),
    ],
};

pub(super) static MATCH_LABELS_ENTRY: Message = Message { name: "LabelSelector.MatchLabelsEntry", fields: MAP_ENTRY };

pub(super) static LABEL_SELECTOR_REQUIREMENT: Message = Message {
    name: "LabelSelectorRequirement",
    fields: &[
        field(1, "key", Ty::Str, Keep),
        field(2, "operator", Ty::Str, Keep),
        field(3, "values", Ty::Strings, Omit),
    ],
};

/// rbac/v1 `RoleBinding` and `ClusterRoleBinding` (one layout).
pub(super) static ROLE_BINDING: Message = Message {
    name: "RoleBinding",
    fields: &[
        field(1, "metadata", Ty::Message(&OBJECT_META), Keep),
        field(2, "subjects", Ty::Messages(&SUBJECT), Omit),
        field(3, "roleRef", Ty::Message(&ROLE_REF), Keep),
    ],
};

pub(super) static SUBJECT: Message = Message {
    name: "Subject",
    fields: &[
        field(1, "kind", Ty::Str, Keep),
        field(2, "apiGroup", Ty::Str, Omit),
        field(3, "name", Ty::Str, Keep),
        field(4, "namespace", Ty::Str, Omit),
    ],
};

pub(super) static ROLE_REF: Message = Message {
    name: "RoleRef",
    fields: &[field(1, "apiGroup", Ty::Str, Keep), field(2, "kind", Ty::Str, Keep), field(3, "name", Ty::Str, Keep)],
};

/// authorization/v1 `SelfSubjectAccessReview` (`kubectl auth can-i`, client-go's typed client).
pub(super) static SELF_SUBJECT_ACCESS_REVIEW: Message = Message {
    name: "SelfSubjectAccessReview",
    fields: &[
        field(1, "metadata", Ty::Message(&OBJECT_META), Keep),
        field(2, "spec", Ty::Message(&SELF_SUBJECT_ACCESS_REVIEW_SPEC), Keep),
        field(3, "status", Ty::Message(&SUBJECT_ACCESS_REVIEW_STATUS), Keep),
    ],
};

pub(super) static SELF_SUBJECT_ACCESS_REVIEW_SPEC: Message = Message {
    name: "SelfSubjectAccessReviewSpec",
    fields: &[
        field(1, "resourceAttributes", Ty::Message(&RESOURCE_ATTRIBUTES), Pointer),
        field(2, "nonResourceAttributes", Ty::Message(&NON_RESOURCE_ATTRIBUTES), Pointer),
    ],
};

/// authorization/v1 `SubjectAccessReview` and `LocalSubjectAccessReview` (one message shape).
pub(super) static SUBJECT_ACCESS_REVIEW: Message = Message {
    name: "SubjectAccessReview",
    fields: &[
        field(1, "metadata", Ty::Message(&OBJECT_META), Keep),
        field(2, "spec", Ty::Message(&SUBJECT_ACCESS_REVIEW_SPEC), Keep),
        field(3, "status", Ty::Message(&SUBJECT_ACCESS_REVIEW_STATUS), Keep),
    ],
};

pub(super) static SUBJECT_ACCESS_REVIEW_SPEC: Message = Message {
    name: "SubjectAccessReviewSpec",
    fields: &[
        field(1, "resourceAttributes", Ty::Message(&RESOURCE_ATTRIBUTES), Pointer),
        field(2, "nonResourceAttributes", Ty::Message(&NON_RESOURCE_ATTRIBUTES), Pointer),
        field(3, "user", Ty::Str, Omit),
        field(4, "groups", Ty::Strings, Omit),
        field(6, "uid", Ty::Str, Omit),
    ],
};

/// authorization/v1 `SelfSubjectRulesReview` (`kubectl auth can-i --list`).
pub(super) static SELF_SUBJECT_RULES_REVIEW: Message = Message {
    name: "SelfSubjectRulesReview",
    fields: &[
        field(1, "metadata", Ty::Message(&OBJECT_META), Keep),
        field(2, "spec", Ty::Message(&SELF_SUBJECT_RULES_REVIEW_SPEC), Keep),
        field(3, "status", Ty::Message(&SUBJECT_RULES_REVIEW_STATUS), Keep),
    ],
};

/// A rules review's status, as clients send it: empty but for Go's `incomplete: false`.
pub(super) static SUBJECT_RULES_REVIEW_STATUS: Message = Message {
    name: "SubjectRulesReviewStatus",
    fields: &[field(3, "incomplete", Ty::Bool, Keep), field(4, "evaluationError", Ty::Str, Omit)],
};

pub(super) static SELF_SUBJECT_RULES_REVIEW_SPEC: Message =
    Message { name: "SelfSubjectRulesReviewSpec", fields: &[field(1, "namespace", Ty::Str, Omit)] };

/// authentication/v1 `SelfSubjectReview` (`kubectl auth whoami`): metadata and an empty status.
pub(super) static SELF_SUBJECT_REVIEW: Message = Message {
    name: "SelfSubjectReview",
    fields: &[
        field(1, "metadata", Ty::Message(&OBJECT_META), Keep),
        field(2, "status", Ty::Message(&SELF_SUBJECT_REVIEW_STATUS), Keep),
    ],
};

/// A self review's status, as clients send it: an empty user (`USER_INFO`, TokenReview's too).
pub(super) static SELF_SUBJECT_REVIEW_STATUS: Message =
    Message { name: "SelfSubjectReviewStatus", fields: &[field(1, "userInfo", Ty::Message(&USER_INFO), Keep)] };

pub(super) static RESOURCE_ATTRIBUTES: Message = Message {
    name: "ResourceAttributes",
    fields: &[
        field(1, "namespace", Ty::Str, Omit),
        field(2, "verb", Ty::Str, Omit),
        field(3, "group", Ty::Str, Omit),
        field(4, "version", Ty::Str, Omit),
        field(5, "resource", Ty::Str, Omit),
        field(6, "subresource", Ty::Str, Omit),
        field(7, "name", Ty::Str, Omit),
    ],
};

pub(super) static NON_RESOURCE_ATTRIBUTES: Message = Message {
    name: "NonResourceAttributes",
    fields: &[field(1, "path", Ty::Str, Omit), field(2, "verb", Ty::Str, Omit)],
};

pub(super) static SUBJECT_ACCESS_REVIEW_STATUS: Message = Message {
    name: "SubjectAccessReviewStatus",
    fields: &[
        field(1, "allowed", Ty::Bool, Keep),
        field(4, "denied", Ty::Bool, Omit),
        field(2, "reason", Ty::Str, Omit),
        field(3, "evaluationError", Ty::Str, Omit),
    ],
};

/// authentication/v1 `TokenRequest` (`kubectl create token` sends it with the typed client).
pub(super) static TOKEN_REQUEST: Message = Message {
    name: "TokenRequest",
    fields: &[
        field(1, "metadata", Ty::Message(&OBJECT_META), Keep),
        field(2, "spec", Ty::Message(&TOKEN_REQUEST_SPEC), Keep),
        field(3, "status", Ty::Message(&TOKEN_REQUEST_STATUS), Keep),
    ],
};

pub(super) static TOKEN_REQUEST_STATUS: Message = Message {
    name: "TokenRequestStatus",
    fields: &[field(1, "token", Ty::Str, Keep), field(2, "expirationTimestamp", Ty::Time, Keep)],
};

pub(super) static TOKEN_REQUEST_SPEC: Message = Message {
    name: "TokenRequestSpec",
    fields: &[
        field(1, "audiences", Ty::Strings, Keep),
        field(4, "expirationSeconds", Ty::Int64, Pointer),
        field(3, "boundObjectRef", Ty::Message(&BOUND_OBJECT_REFERENCE), Pointer),
    ],
};

pub(super) static BOUND_OBJECT_REFERENCE: Message = Message {
    name: "BoundObjectReference",
    fields: &[
        field(1, "kind", Ty::Str, Omit),
        field(2, "apiVersion", Ty::Str, Omit),
        field(3, "name", Ty::Str, Omit),
        field(4, "uid", Ty::Str, Omit),
    ],
};

/// authentication/v1 `TokenReview` (client-go's typed client). Of the status's user, which
/// clients send empty, the `extra` map is not read.
pub(super) static TOKEN_REVIEW: Message = Message {
    name: "TokenReview",
    fields: &[
        field(1, "metadata", Ty::Message(&OBJECT_META), Keep),
        field(2, "spec", Ty::Message(&TOKEN_REVIEW_SPEC), Keep),
        field(3, "status", Ty::Message(&TOKEN_REVIEW_STATUS), Keep),
    ],
};

pub(super) static TOKEN_REVIEW_STATUS: Message = Message {
    name: "TokenReviewStatus",
    fields: &[
        field(1, "authenticated", Ty::Bool, Omit),
        field(2, "user", Ty::Message(&USER_INFO), Omit),
        field(4, "audiences", Ty::Strings, Omit),
        field(3, "error", Ty::Str, Omit),
    ],
};

pub(super) static USER_INFO: Message = Message {
    name: "UserInfo",
    fields: &[
        field(1, "username", Ty::Str, Omit),
        field(2, "uid", Ty::Str, Omit),
        field(3, "groups", Ty::Strings, Omit),
    ],
};

pub(super) static TOKEN_REVIEW_SPEC: Message = Message {
    name: "TokenReviewSpec",
    fields: &[field(1, "token", Ty::Str, Omit), field(2, "audiences", Ty::Strings, Omit)],
};

/// core/v1 `ServiceAccount` (`kubectl create serviceaccount` sends it with the typed client).
pub(super) static SERVICE_ACCOUNT: Message = Message {
    name: "ServiceAccount",
    fields: &[
        field(1, "metadata", Ty::Message(&OBJECT_META), Keep),
        field(2, "secrets", Ty::Messages(&OBJECT_REFERENCE), Omit),
        field(3, "imagePullSecrets", Ty::Messages(&LOCAL_OBJECT_REFERENCE), Omit),
        field(4, "automountServiceAccountToken", Ty::Bool, Pointer),
    ],
};

pub(super) static LOCAL_OBJECT_REFERENCE: Message =
    Message { name: "LocalObjectReference", fields: &[field(1, "name", Ty::Str, Omit)] };
