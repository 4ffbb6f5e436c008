//! The `io.k8s.apimachinery.pkg.apis.meta.v1` definitions the documents refer to (ObjectMeta,
//! ListMeta, Status, DeleteOptions, Patch, ...) and `io.k8s.api.autoscaling.v1.Scale`, with small
//! but correct schemas, built once per flavour.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde_json::{Value, json};
use versa_registry::table::{OBJECT_META_CREATION_TIMESTAMP_DESCRIPTION, OBJECT_META_NAME_DESCRIPTION};

use super::names::*;

/// The meta (and autoscaling) definitions the routes and kinds refer to, per flavor.
pub(super) fn meta_definitions(flavor: Flavor) -> &'static BTreeMap<String, Box<str>> {
    static V2: OnceLock<BTreeMap<String, Box<str>>> = OnceLock::new();
    static V3: OnceLock<BTreeMap<String, Box<str>>> = OnceLock::new();
    match flavor {
        Flavor::V2 => V2.get_or_init(|| serialize_all(build_meta_definitions(Flavor::V2))),
        Flavor::V3 => V3.get_or_init(|| serialize_all(build_meta_definitions(Flavor::V3))),
    }
}

pub(super) fn serialize_all(defs: BTreeMap<String, Value>) -> BTreeMap<String, Box<str>> {
    defs.into_iter().map(|(k, v)| (k, serialized(&v))).collect()
}

pub(super) fn build_meta_definitions(flavor: Flavor) -> BTreeMap<String, Value> {
    let r = |name: &str| json!({"$ref": flavor.reference(name)});
    let dr = |name: &str, desc: &str| flavor.described_ref(name, desc);
    let string = |desc: &str| json!({"type": "string", "description": desc});
    let int64 = |desc: &str| json!({"type": "integer", "format": "int64", "description": desc});
    let int32 = |desc: &str| json!({"type": "integer", "format": "int32", "description": desc});
    let boolean = |desc: &str| json!({"type": "boolean", "description": desc});
    let string_map =
        |desc: &str| json!({"type": "object", "additionalProperties": {"type": "string"}, "description": desc});
    let time = format!("{META}Time");
    let gvk_of = |group: &str, version: &str, kind: &str| json!([gvk(group, version, kind)]);

    let mut defs = BTreeMap::new();
    defs.insert(time.clone(), json!({
        "type": "string", "format": "date-time",
        "description": "Time is a wrapper around time.Time which supports correct marshaling to YAML and JSON.  Wrappers are provided for many of the factory methods that the time package offers.",
    }));
    defs.insert(format!("{META}FieldsV1"), json!({
        "type": "object",
        "description": "FieldsV1 stores a set of fields in a data structure like a Trie, in JSON format.\n\nEach key is either a '.' representing the field itself, and will always map to an empty set, or a string representing a sub-field or item. The string will follow one of these four formats: 'f:<name>', where <name> is the name of a field in a struct, or key in a map 'v:<value>', where <value> is the exact json formatted value of a list item 'i:<index>', where <index> is position of a item in a list 'k:<keys>', where <keys> is a map of  a list item's key fields to their unique values If a key maps to an empty Fields value, the field that key represents is part of the set.\n\nThe exact format is defined in sigs.k8s.io/structured-merge-diff",
    }));
    defs.insert(format!("{META}ManagedFieldsEntry"), json!({
        "type": "object",
        "description": "ManagedFieldsEntry is a workflow-id, a FieldSet and the group version of the resource that the fieldset applies to.",
        "properties": {
            "apiVersion": string("APIVersion defines the version of this resource that this field set applies to. The format is \"group/version\" just like the top-level APIVersion field. It is necessary to track the version of a field set because it cannot be automatically converted."),
            "fieldsType": string("FieldsType is the discriminator for the different fields format and version. There is currently only one possible value: \"FieldsV1\""),
            "fieldsV1": dr(&format!("{META}FieldsV1"), "FieldsV1 holds the first JSON version format as described in the \"FieldsV1\" type."),
            "manager": string("Manager is an identifier of the workflow managing these fields."),
            "operation": string("Operation is the type of operation which lead to this ManagedFieldsEntry being created. The only valid values for this field are 'Apply' and 'Update'."),
            "subresource": string("Subresource is the name of the subresource used to update that object, or empty string if the object was updated through the main resource. The value of this field is used to distinguish between managers, even if they share the same name. For example, a status update will be distinct from a regular update using the same manager name. Note that the APIVersion field is not related to the Subresource field and it always corresponds to the version of the main resource."),
            "time": dr(&time, "Time is the timestamp of when the ManagedFields entry was added. The timestamp will also be updated if a field is added, the manager changes any of the owned fields value or removes a field. The timestamp does not update when a field is removed from the entry because another manager took it over."),
        },
    }));
    defs.insert(format!("{META}OwnerReference"), json!({
        "type": "object",
        "description": "OwnerReference contains enough information to let you identify an owning object. An owning object must be in the same namespace as the dependent, or be cluster-scoped, so there is no namespace field.",
        "required": ["apiVersion", "kind", "name", "uid"],
        "properties": {
            "apiVersion": string("API version of the referent."),
            "blockOwnerDeletion": boolean("If true, AND if the owner has the \"foregroundDeletion\" finalizer, then the owner cannot be deleted from the key-value store until this reference is removed. See https://kubernetes.io/docs/concepts/architecture/garbage-collection/#foreground-deletion for how the garbage collector interacts with this field and enforces the foreground deletion. Defaults to false. To set this field, a user needs \"delete\" permission of the owner, otherwise 422 (Unprocessable Entity) will be returned."),
            "controller": boolean("If true, this reference points to the managing controller."),
            "kind": string("Kind of the referent. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"),
            "name": string("Name of the referent. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"),
            "uid": string("UID of the referent. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#uids"),
        },
        "x-kubernetes-map-type": "atomic",
    }));
    let mut finalizers = json!({"type": "array", "items": {"type": "string"}, "description": "Must be empty before the object is deleted from the registry. Each entry is an identifier for the responsible component that will remove the entry from the list. If the deletionTimestamp of the object is non-nil, entries in this list can only be removed. Finalizers may be processed and removed in any order.  Order is NOT enforced because it introduces significant risk of stuck finalizers. finalizers is a shared field, any actor with permission can reorder it. If the finalizer list is processed in order, then this can lead to a situation in which the component responsible for the first finalizer in the list is waiting for a signal (field value, external system, or other) produced by a component responsible for a finalizer later in the list, resulting in a deadlock. Without enforced ordering finalizers are free to order amongst themselves and are not vulnerable to ordering changes in the list."});
    finalizers["x-kubernetes-list-type"] = json!("set");
    finalizers["x-kubernetes-patch-strategy"] = json!("merge");
    defs.insert(OBJECT_META.to_string(), json!({
        "type": "object",
        "description": "ObjectMeta is metadata that all persisted resources must have, which includes all objects users must create.",
        "properties": {
            "annotations": string_map("Annotations is an unstructured key value map stored with a resource that may be set by external tools to store and retrieve arbitrary metadata. They are not queryable and should be preserved when modifying objects. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/annotations"),
            "creationTimestamp": dr(&time, OBJECT_META_CREATION_TIMESTAMP_DESCRIPTION),
            "deletionGracePeriodSeconds": int64("Number of seconds allowed for this object to gracefully terminate before it will be removed from the system. Only set when deletionTimestamp is also set. May only be shortened. Read-only."),
            "deletionTimestamp": dr(&time, "DeletionTimestamp is RFC 3339 date and time at which this resource will be deleted. This field is set by the server when a graceful deletion is requested by the user, and is not directly settable by a client.\n\nPopulated by the system when a graceful deletion is requested. Read-only. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"),
            "finalizers": finalizers,
            "generateName": string("GenerateName is an optional prefix, used by the server, to generate a unique name ONLY IF the Name field has not been provided. If this field is used, the name returned to the client will be different than the name passed. This value will also be combined with a unique suffix. The provided value has the same validation rules as the Name field, and may be truncated by the length of the suffix required to make the value unique on the server.\n\nIf this field is specified and the generated name exists, the server will return a 409.\n\nApplied only if Name is not specified. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#idempotency"),
            "generation": int64("A sequence number representing a specific generation of the desired state. Populated by the system. Read-only."),
            "labels": string_map("Map of string keys and values that can be used to organize and categorize (scope and select) objects. May match selectors of replication controllers and services. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels"),
            "managedFields": {
                "type": "array", "items": r(&format!("{META}ManagedFieldsEntry")), "x-kubernetes-list-type": "atomic",
                "description": "ManagedFields maps workflow-id and version to the set of fields that are managed by that workflow. This is mostly for internal housekeeping, and users typically shouldn't need to set or understand this field. A workflow can be the user's name, a controller's name, or the name of a specific apply path like \"ci-cd\". The set of fields is always in the version that the workflow used when modifying the object.",
            },
            "name": string(OBJECT_META_NAME_DESCRIPTION),
            "namespace": string("Namespace defines the space within which each name must be unique. An empty namespace is equivalent to the \"default\" namespace, but \"default\" is the canonical representation. Not all objects are required to be scoped to a namespace - the value of this field for those objects will be empty.\n\nMust be a DNS_LABEL. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/namespaces"),
            "ownerReferences": {
                "type": "array", "items": r(&format!("{META}OwnerReference")),
                "x-kubernetes-list-map-keys": ["uid"], "x-kubernetes-list-type": "map",
                "x-kubernetes-patch-merge-key": "uid", "x-kubernetes-patch-strategy": "merge",
                "description": "List of objects depended by this object. If ALL objects in the list have been deleted, this object will be garbage collected. If this object is managed by a controller, then an entry in this list will point to this controller, with the controller field set to true. There cannot be more than one managing controller.",
            },
            "resourceVersion": string("An opaque value that represents the internal version of this object that can be used by clients to determine when objects have changed. May be used for optimistic concurrency, change detection, and the watch operation on a resource or set of resources. Clients must treat these values as opaque and passed unmodified back to the server. They may only be valid for a particular resource or set of resources.\n\nPopulated by the system. Read-only. Value must be treated as opaque by clients and . More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#concurrency-control-and-consistency"),
            "selfLink": string("Deprecated: selfLink is a legacy read-only field that is no longer populated by the system."),
            "uid": string("UID is the unique in time and space value for this object. It is typically generated by the server on successful creation of a resource and is not allowed to change on PUT operations.\n\nPopulated by the system. Read-only. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#uids"),
        },
    }));
    defs.insert(LIST_META.to_string(), json!({
        "type": "object",
        "description": "ListMeta describes metadata that synthetic resources must have, including lists and various status objects. A resource may have only one of {ObjectMeta, ListMeta}.",
        "properties": {
            "continue": string("continue may be set if the user set a limit on the number of items returned, and indicates that the server has more data available. The value is opaque and may be used to issue another request to the endpoint that served this list to retrieve the next set of available objects."),
            "remainingItemCount": int64("remainingItemCount is the number of subsequent items in the list which are not included in this list response. The intended use of the remainingItemCount is *estimating* the size of a collection. Clients should not rely on the remainingItemCount to be set or to be exact."),
            "resourceVersion": string("String that identifies the server's internal version of this object that can be used by clients to determine when objects have changed. Value must be treated as opaque by clients and passed unmodified back to the server. Populated by the system. Read-only. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#concurrency-control-and-consistency"),
            "selfLink": string("Deprecated: selfLink is a legacy read-only field that is no longer populated by the system."),
        },
    }));
    defs.insert(format!("{META}StatusCause"), json!({
        "type": "object",
        "description": "StatusCause provides more information about an api.Status failure, including cases when multiple errors are encountered.",
        "properties": {
            "field": string("The field of the resource that has caused this error, as named by its JSON serialization. May include dot and postfix notation for nested attributes. Arrays are zero-indexed.  Fields may appear more than once in an array of causes due to fields having multiple errors. Optional."),
            "message": string("A human-readable description of the cause of the error.  This field may be presented as-is to a reader."),
            "reason": string("A machine-readable description of the cause of the error. If this value is empty there is no information available."),
        },
    }));
    defs.insert(format!("{META}StatusDetails"), json!({
        "type": "object",
        "description": "StatusDetails is a set of additional properties that MAY be set by the server to provide additional information about a response. The Reason field of a Status object defines what attributes will be set. Clients must ignore fields that do not match the defined type of each attribute, and should assume that any attribute may be empty, invalid, or under defined.",
        "properties": {
            "causes": {"type": "array", "items": r(&format!("{META}StatusCause")), "x-kubernetes-list-type": "atomic",
                       "description": "The Causes array includes more details associated with the StatusReason failure. Not all StatusReasons may provide detailed causes."},
            "group": string("The group attribute of the resource associated with the status StatusReason."),
            "kind": string("The kind attribute of the resource associated with the status StatusReason. On some operations may differ from the requested resource Kind. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"),
            "name": string("The name attribute of the resource associated with the status StatusReason (when there is a single name which can be described)."),
            "retryAfterSeconds": int32("If specified, the time in seconds before the operation should be retried. Some errors may indicate the client must take an alternate action - for those errors this field may indicate how long to wait before taking the alternate action."),
            "uid": string("UID of the resource. (when there is a single resource which can be described). More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#uids"),
        },
    }));
    defs.insert(STATUS.to_string(), json!({
        "type": "object",
        "description": "Status is a return value for calls that don't return other objects.",
        "properties": {
            "apiVersion": string(API_VERSION_DESCRIPTION),
            "code": int32("Suggested HTTP return code for this status, 0 if not set."),
            "details": dr(&format!("{META}StatusDetails"), "Extended data associated with the reason.  Each reason may define its own extended details. This field is optional and the data returned is not guaranteed to conform to any schema except that defined by the reason type."),
            "kind": string(KIND_DESCRIPTION),
            "message": string("A human-readable description of the status of this operation."),
            "metadata": dr(LIST_META, LIST_METADATA_DESCRIPTION),
            "reason": string("A machine-readable description of why this operation is in the \"Failure\" status. If this value is empty there is no information available. A Reason clarifies an HTTP status code but does not override it."),
            "status": string("Status of the operation. One of: \"Success\" or \"Failure\". More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#spec-and-status"),
        },
        "x-kubernetes-group-version-kind": gvk_of("", "v1", "Status"),
    }));
    defs.insert(
        format!("{META}Preconditions"),
        json!({
            "type": "object",
            "description": "Preconditions must be fulfilled before an operation (update, delete, etc.) is carried out.",
            "properties": {
                "resourceVersion": string("Specifies the target ResourceVersion"),
                "uid": string("Specifies the target UID."),
            },
        }),
    );
    defs.insert(DELETE_OPTIONS.to_string(), json!({
        "type": "object",
        "description": "DeleteOptions may be provided when deleting an API object.",
        "properties": {
            "apiVersion": string(API_VERSION_DESCRIPTION),
            "dryRun": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "atomic",
                       "description": "When present, indicates that modifications should not be persisted. An invalid or unrecognized dryRun directive will result in an error response and no further processing of the request. Valid values are: - All: all dry run stages will be processed"},
            "gracePeriodSeconds": int64("The duration in seconds before the object should be deleted. Value must be non-negative integer. The value zero indicates delete immediately. If this value is nil, the default grace period for the specified type will be used. Defaults to a per object value if not specified. zero means delete immediately."),
            "ignoreStoreReadErrorWithClusterBreakingPotential": boolean("if set to true, it will trigger an unsafe deletion of the resource in case the normal deletion flow fails with a corrupt object error."),
            "kind": string(KIND_DESCRIPTION),
            "orphanDependents": boolean("Deprecated: please use the PropagationPolicy, this field will be deprecated in 1.7. Should the dependent objects be orphaned."),
            "preconditions": dr(&format!("{META}Preconditions"), "Must be fulfilled before a deletion is carried out. If not possible, a 409 Conflict status will be returned."),
            "propagationPolicy": string("Whether and how garbage collection will be performed. Acceptable values are: 'Orphan', 'Background', 'Foreground'."),
        },
        "x-kubernetes-group-version-kind": gvk_of("", "v1", "DeleteOptions"),
    }));
    defs.insert(
        PATCH.to_string(),
        json!({
            "type": "object",
            "description": "Patch is provided to give a concrete name and type to the Kubernetes PATCH request body.",
        }),
    );
    defs.insert(
        "io.k8s.apimachinery.pkg.runtime.RawExtension".to_string(),
        json!({
            "type": "object",
            "description": "RawExtension is used to hold extensions in external versions.",
        }),
    );
    defs.insert(format!("{META}WatchEvent"), json!({
        "type": "object",
        "description": "Event represents a single event to a watched resource.",
        "required": ["type", "object"],
        "properties": {
            "object": dr("io.k8s.apimachinery.pkg.runtime.RawExtension", "Object is:\n * If Type is Added or Modified: the new state of the object.\n * If Type is Deleted: the state of the object immediately before deletion.\n * If Type is Error: *Status is recommended; other types may make sense\n   depending on context."),
            "type": string(""),
        },
        "x-kubernetes-group-version-kind": gvk_of("", "v1", "WatchEvent"),
    }));
    defs.insert(
        "io.k8s.api.autoscaling.v1.ScaleSpec".to_string(),
        json!({
            "type": "object",
            "description": "ScaleSpec describes the attributes of a scale subresource.",
            "properties": {"replicas": int32("replicas is the desired number of instances for the scaled object.")},
        }),
    );
    defs.insert("io.k8s.api.autoscaling.v1.ScaleStatus".to_string(), json!({
        "type": "object",
        "description": "ScaleStatus represents the current status of a scale subresource.",
        "required": ["replicas"],
        "properties": {
            "replicas": int32("replicas is the actual number of observed instances of the scaled object."),
            "selector": string("selector is the label query over pods that should match the replicas count. This is same as the label selector but in the string format to avoid introspection by clients. The string will be in the same format as the query-param syntax. More info about label selectors: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/"),
        },
    }));
    defs.insert(SCALE.to_string(), json!({
        "type": "object",
        "description": "Scale represents a scaling request for a resource.",
        "properties": {
            "apiVersion": string(API_VERSION_DESCRIPTION),
            "kind": string(KIND_DESCRIPTION),
            "metadata": dr(OBJECT_META, OBJECT_METADATA_DESCRIPTION),
            "spec": dr("io.k8s.api.autoscaling.v1.ScaleSpec", "spec defines the behavior of the scale. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#spec-and-status."),
            "status": dr("io.k8s.api.autoscaling.v1.ScaleStatus", "status is the current status of the scale. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#spec-and-status. Read-only."),
        },
        "x-kubernetes-group-version-kind": gvk_of("autoscaling", "v1", "Scale"),
    }));
    defs
}
