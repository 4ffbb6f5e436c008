//! The write rules of the definitions API (`versa.dev/v1` `resourcedefinitions`), mirroring
//! kube-apiserver's CustomResourceDefinition strategy:
//!
//! - create: defaults, `generation` 1, `status` reset to `storedVersions: [<storage version>]`;
//! - update: `status` kept from the old object, `generation` bumped when `spec` changes, the
//!   storage version appended to `status.storedVersions` when it is new;
//! - `/status` update: only `status` changes;
//! - `status.storageMigration` (storage migration's checkpoint, versa's own field: the typed
//!   status has no place for it) belongs to the migration controller, which writes it in place:
//!   every update through the API — main endpoint or `/status` — carries the stored one over, so
//!   a client that writes the definition back in its typed form cannot make a migration start
//!   its walk again (issue 22);
//! - validation with `versa-apiextensions` (the same rules `versa lint` applies), and CEL
//!   conversion rules run on generated objects (`versa_conversion::samples`);
//! - delete: the first delete marks the definition (`deletionTimestamp`, the
//!   `customresourcecleanup.apiextensions.k8s.io` finalizer, `Terminating=True`) and the
//!   definitions controller removes its objects, then the finalizer.

use serde_json::{Value, json};
use versa_apiextensions::{
    ResourceDefinition, set_defaults, validate_definition, validate_definition_update, warnings_on_create,
    warnings_on_update,
};
use versa_schema::{Error as FieldError, ErrorList, Path};

use crate::dropped::dropped_fields;

/// The finalizer that holds a deleted definition until its objects are gone.
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// The annotation that turns deletion protection on (`"true"`) or off (`"false"`) for one
/// definition (issue 39; docs/versions.md).
pub const DELETION_PROTECTION_ANNOTATION: &str = "versa.dev/deletion-protection";

/// Whether deleting `obj` must wait until no object of it is stored: what its
/// [`DELETION_PROTECTION_ANNOTATION`] says, else `by_default` — on through versa's own API
/// (`resourcedefinitions`), off through the `customresourcedefinitions` face, where
/// kube-compatible tools (kubectl, helm) expect a CRD to go with its objects. A definition already
/// being deleted is past it.
pub fn deletion_protected(obj: &Value, by_default: bool) -> bool {
    if obj.pointer("/metadata/deletionTimestamp").is_some() {
        return false;
    }
    let annotation = obj
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(DELETION_PROTECTION_ANNOTATION))
        .and_then(Value::as_str);
    match annotation {
        Some(value) if value.eq_ignore_ascii_case("true") => true,
        Some(value) if value.eq_ignore_ascii_case("false") => false,
        _ => by_default,
    }
}

/// kube's refusal of a protected definition's delete while `count` objects remain (`at_least`:
/// more may follow): who, how many, and how to go on.
pub fn protected_refusal(resource: &str, name: &str, count: u64, at_least: bool) -> crate::Error {
    let how_many = if at_least { format!("at least {count}") } else { count.to_string() };
    let objects = if count == 1 && !at_least { "object is" } else { "objects are" };
    crate::Error::Forbidden {
        message: format!(
            "{resource} {name:?} is forbidden: deletion protection: {how_many} {objects} stored under this definition, and deleting it deletes them all; delete them first, or turn the protection off: kubectl annotate {resource} {name} {DELETION_PROTECTION_ANNOTATION}=false --overwrite"
        ),
        details: Some(
            json!({"name": name, "group": resource.split_once('.').map_or("", |(_, g)| g), "kind": resource.split_once('.').map_or(resource, |(r, _)| r)}),
        ),
    }
}

/// A definition's `status` as kube's field manager sees it: the Go-typed status written out,
/// where what versa leaves out is there empty — `conditions` and `storedVersions` null,
/// `acceptedNames` with an empty `plural` and `kind`. So the first names accepted change those
/// fields rather than add the objects (no `.` of their own in `managedFields`, as in kube).
fn typed(status: Option<&Value>) -> Value {
    let mut status = status.filter(|s| s.is_object()).cloned().unwrap_or_else(|| json!({}));
    if let Some(s) = status.as_object_mut() {
        s.entry("conditions").or_insert(Value::Null);
        s.entry("storedVersions").or_insert(Value::Null);
        if let Some(names) = s.entry("acceptedNames").or_insert_with(|| json!({})).as_object_mut() {
            names.entry("plural").or_insert_with(|| json!(""));
            names.entry("kind").or_insert_with(|| json!(""));
        }
    }
    status
}

/// The manager kube-apiserver's own controllers write a definition's status as (the
/// `User-Agent` product of its loopback client), and standalone versa's definitions controller.
pub const STATUS_MANAGER: &str = "kube-apiserver";

/// The status field where storage migration keeps its checkpoint (see the module
/// documentation): never taken from a request, always carried over from the stored definition.
pub const MIGRATION_CHECKPOINT_FIELD: &str = "storageMigration";

/// Reads a request-form document as a definition, defaulted. Decoding errors are field errors.
pub fn decode(obj: &Value) -> Result<ResourceDefinition, ErrorList> {
    let mut def = ResourceDefinition::from_document(obj).map_err(|e| {
        ErrorList(vec![FieldError::invalid(
            Path::none(),
            obj.get("kind").cloned().unwrap_or(Value::Null),
            e.to_string(),
        )])
    })?;
    set_defaults(&mut def);
    Ok(def)
}

/// The keys of a request-form document that are not read as the definition: `status` belongs to
/// the server (it is reset or carried over, never decoded from the request); type meta is checked
/// elsewhere; `metadata` is kept as the pipeline set it ([`encode`]), so nothing of it is dropped.
const NOT_DECODED: [&str; 4] = ["apiVersion", "kind", "status", "metadata"];

/// Writes a definition back into `obj` (its typed form: unknown fields are gone) and returns the
/// paths of the fields that were dropped, for `fieldValidation` (kube's strict decoding of
/// CustomResourceDefinitions reports them the same way: `unknown field "spec.versions[0].servd"`).
fn encode(def: &ResourceDefinition, obj: &mut Value) -> Vec<String> {
    let unknown = dropped_fields(def, obj, &NOT_DECODED);
    let mut doc = def.to_document();
    // Keep metadata exactly as the pipeline set it (the typed ObjectMeta would drop nothing
    // important, but the pipeline's server-owned fields are authoritative).
    if let (Some(meta), Some(d)) = (obj.get_mut("metadata").map(Value::take), doc.as_object_mut()) {
        d.insert("metadata".into(), meta);
    }
    *obj = doc;
    unknown
}

/// The fields of a request-form document that the definition's typed form drops (what
/// [`admit_create`] and [`admit_update`] report), without validating it: what kube's decoder
/// reports before validation. Nothing for a document that is not a definition at all
/// (validation says what is wrong with it).
pub fn unknown_fields(obj: &Value) -> Vec<String> {
    let Ok(def) = decode(obj) else { return Vec::new() };
    dropped_fields(&def, obj, &NOT_DECODED)
}

/// Create: default, validate, reset status. Returns the unknown (dropped) field paths; kube's
/// warnings (unrecognized formats) go to `warnings`.
pub fn admit_create(obj: &mut Value, warnings: &mut Vec<String>) -> Result<Vec<String>, ErrorList> {
    let mut def = decode(obj)?;
    let stored: Vec<String> = def.storage_version().map(|v| vec![v.to_owned()]).unwrap_or_default();
    def.status = Some(serde_json::from_value(json!({"storedVersions": stored})).unwrap_or_default());
    let mut errs = validate_definition(&def);
    if errs.is_empty() {
        // CEL conversion rules, run on generated objects (what `versa lint` reports too).
        errs = versa_conversion::samples::check(&def);
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    warnings.extend(warnings_on_create(&def));
    Ok(encode(&def, obj))
}

/// Update of the main resource or of `/status`: `new` already has the right `status` (the
/// REST layer copied it); defaults, validates against `old`, appends the storage version to
/// `storedVersions`, and keeps `old`'s migration checkpoint. An update of the main resource warns
/// about unrecognized formats `old` did not have (`/status` warns about nothing).
pub fn admit_update(
    new: &mut Value,
    old: &Value,
    status_only: bool,
    warnings: &mut Vec<String>,
) -> Result<Vec<String>, ErrorList> {
    let mut def = decode(new)?;
    let old_def = decode(old)?;
    if !status_only
        && let Some(storage) = def.storage_version().map(str::to_owned)
        && !def.stored_versions().contains(&storage)
    {
        let mut status = def.status.clone().unwrap_or_default();
        status.stored_versions.get_or_insert_with(Vec::new).push(storage);
        def.status = Some(status);
    }
    let mut errs = if status_only { validate_definition(&def) } else { validate_definition_update(&def, &old_def) };
    if errs.is_empty() && !status_only {
        errs = versa_conversion::samples::check(&def);
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    if !status_only {
        warnings.extend(warnings_on_update(&def, &old_def));
    }
    let unknown = encode(&def, new);
    keep_checkpoint(new, old);
    Ok(unknown)
}

/// Puts `old`'s `status.storageMigration` into `new` (or leaves `new` without one when `old` has
/// none): the typed status just written has no such field, and a request may not set it.
fn keep_checkpoint(new: &mut Value, old: &Value) {
    let checkpoint = old.pointer("/status").and_then(|s| s.get(MIGRATION_CHECKPOINT_FIELD)).cloned();
    let Some(obj) = new.as_object_mut() else { return };
    match checkpoint {
        Some(checkpoint) => {
            let status = obj.entry("status").or_insert_with(|| json!({}));
            if let Some(status) = status.as_object_mut() {
                status.insert(MIGRATION_CHECKPOINT_FIELD.into(), checkpoint);
            }
        }
        None => {
            if let Some(status) = obj.get_mut("status").and_then(Value::as_object_mut) {
                status.remove(MIGRATION_CHECKPOINT_FIELD);
            }
        }
    }
}

/// Sets (or replaces) condition `type_` in a definition document's status.
pub fn set_condition(obj: &mut Value, type_: &str, status: &str, reason: &str, message: &str, now: &str) {
    let Some(o) = obj.as_object_mut() else { return };
    let st = o.entry("status").or_insert_with(|| json!({}));
    if !st.is_object() {
        *st = json!({});
    }
    let conds = st.as_object_mut().map(|m| m.entry("conditions").or_insert_with(|| json!([])));
    let Some(Value::Array(conds)) = conds else { return };
    let new = json!({"type": type_, "status": status, "reason": reason, "message": message, "lastTransitionTime": now});
    match conds.iter_mut().find(|c| c.get("type").and_then(Value::as_str) == Some(type_)) {
        Some(c) => {
            // lastTransitionTime only moves when the status changes.
            let same = c.get("status").and_then(Value::as_str) == Some(status);
            let ltt = c.get("lastTransitionTime").cloned();
            *c = new;
            if same && let Some(t) = ltt {
                c["lastTransitionTime"] = t;
            }
        }
        None => conds.push(new),
    }
}

/// Removes condition `type_` from a definition document's status.
pub fn remove_condition(obj: &mut Value, type_: &str) {
    if let Some(Value::Array(conds)) = obj.pointer_mut("/status/conditions") {
        conds.retain(|c| c.get("type").and_then(Value::as_str) != Some(type_));
    }
}

/// Marks a definition for deletion: `deletionTimestamp`, the cleanup finalizer and
/// `Terminating=True InstanceDeletionPending`.
pub fn mark_deleted(obj: &mut Value, now: &str) {
    if let Some(meta) = crate::meta::meta_mut(obj) {
        meta.insert("deletionTimestamp".into(), json!(now));
        meta.insert("deletionGracePeriodSeconds".into(), json!(0));
        let fins = meta.entry("finalizers").or_insert_with(|| json!([]));
        if let Value::Array(f) = fins
            && !f.iter().any(|x| x == CLEANUP_FINALIZER)
        {
            f.push(json!(CLEANUP_FINALIZER));
        }
    }
    set_condition(
        obj,
        "Terminating",
        "True",
        "InstanceDeletionPending",
        "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
        now,
    );
}

/// The `metadata` of a definition whose `status` the definitions controller changes from `old`
/// to `new` (its `status` fields, `None` without one), with `managedFields` recording the change
/// as kube-apiserver records its own controllers' status writes (the naming and establishing
/// controllers, through the loopback client): an `Update` of the `status` subresource, at
/// `now`, owning the fields it changed — and still those it owned and did not change, unless
/// another manager took them. `spec` is reset on `/status` and never owned. The manager is
/// kube's, `kube-apiserver` at `apiextensions.k8s.io/v1`, when versa is the API server
/// (`standalone`); behind kube-apiserver, `versa` at `versa.dev/v1`. Only `metadata` and
/// `status` are read (the rest of a stored definition is not parsed); `None` when the metadata
/// stays as it is: nobody tracks the definition's fields, or the bookkeeping failed (which
/// cannot happen to a status versa built).
pub fn track_status_write(
    metadata: &Value,
    old: Option<&Value>,
    new: &Value,
    standalone: bool,
    now: &str,
) -> Option<Value> {
    let (manager, api_version) = match standalone {
        true => (STATUS_MANAGER, versa_apiextensions::types::CRD_API_VERSION),
        false => ("versa", versa_apiextensions::types::API_VERSION),
    };
    let doc =
        |status: Option<&Value>| json!({"apiVersion": api_version, "metadata": metadata, "status": typed(status)});
    let schema = crate::resource::definitions_merge_schema();
    let reset = versa_merge::FieldSet::from_paths(&[versa_merge::FieldPath::fields(&["spec"])]);
    let options = versa_merge::Options {
        schema: &schema,
        manager,
        api_version,
        subresource: "status",
        now,
        reset_fields: Some(&reset),
        versions: None,
    };
    let outcome = versa_merge::update(Some(&doc(old)), &doc(Some(new)), &options).ok()?;
    let metadata = outcome.object.get("metadata")?;
    metadata.get("managedFields").is_some().then(|| metadata.clone())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn crontab(extra_version_field: Option<(&str, Value)>) -> Value {
        let mut version = json!({
            "name": "v1", "served": true, "storage": true,
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {
                    "replicas": {"type": "integer", "minimum": 1, "maximum": 10, "default": 1},
                    "cronSpec": {"type": "string", "pattern": "^a", "nullable": false},
                }},
            }}},
            "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}},
            "additionalPrinterColumns": [{"name": "Spec", "type": "string", "jsonPath": ".spec.cronSpec", "priority": 0}],
        });
        if let Some((k, v)) = extra_version_field {
            version[k] = v;
        }
        json!({
            "apiVersion": "versa.dev/v1", "kind": "ResourceDefinition",
            "metadata": {"name": "crontabs.stable.example.com", "labels": {"a": "b"}},
            "spec": {"group": "stable.example.com", "scope": "Namespaced",
                     "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab", "shortNames": ["ct"], "categories": ["all"]},
                     "versions": [version]},
        })
    }

    /// A definition's fields as kube types them (`JSONSchemaProps` lies in the atomic
    /// `versions`): declared objects without `.`, atomic lists, conditions keyed by `type`.
    #[test]
    fn definitions_are_typed_for_structured_merge() {
        let mut doc = crontab(None);
        doc["spec"]["conversion"] = json!({"strategy": "None"});
        doc["status"] = json!({"conditions": [{"type": "Established", "status": "True"}], "storedVersions": ["v1"],
                               "acceptedNames": {"plural": "crontabs", "kind": "CronTab"}});
        let fields = versa_merge::field_set(&doc, &crate::resource::definitions_merge_schema()).to_value();
        let names = ["categories", "kind", "plural", "shortNames", "singular"].map(|f| (format!("f:{f}"), json!({})));
        let expected = json!({
            "f:apiVersion": {}, "f:kind": {}, "f:metadata": {"f:labels": {"f:a": {}}, "f:name": {}},
            "f:spec": {"f:conversion": {"f:strategy": {}}, "f:group": {}, "f:names": serde_json::Map::from_iter(names),
                       "f:scope": {}, "f:versions": {}},
            "f:status": {"f:acceptedNames": {"f:kind": {}, "f:plural": {}}, "f:storedVersions": {},
                         "f:conditions": {"k:{\"type\":\"Established\"}": {".": {}, "f:status": {}, "f:type": {}}}},
        });
        assert_eq!(fields, expected);
    }

    /// The status write of a definition applied by `kubectl`: recorded as kube-apiserver's, with
    /// what it changed from the typed status (no `.` for `acceptedNames` or `conditions`,
    /// which kube's typed status always has; nothing of `storedVersions`, which it kept).
    #[test]
    fn status_writes_are_recorded_as_kube_records_its_own() {
        let applied = json!({"manager": "kubectl", "operation": "Apply", "apiVersion": "apiextensions.k8s.io/v1",
                             "time": "2026-01-01T00:00:00Z", "fieldsType": "FieldsV1",
                             "fieldsV1": {"f:spec": {"f:group": {}, "f:versions": {}}}});
        let metadata = json!({"name": "xs.example.com", "uid": "u", "managedFields": [applied]});
        let condition = |t: &str| json!({"type": t, "status": "True", "reason": "R", "message": "M", "lastTransitionTime": "2026-01-01T00:00:01Z"});
        let status = json!({"acceptedNames": {"plural": "xs", "kind": "X"}, "conditions": [condition("NamesAccepted"), condition("Established")],
                            "storedVersions": ["v1"]});
        let old = json!({"storedVersions": ["v1"]});
        let now = "2026-01-01T00:00:01Z";
        let written = track_status_write(&metadata, Some(&old), &status, true, now).unwrap();
        let owned =
            json!({".": {}, "f:lastTransitionTime": {}, "f:message": {}, "f:reason": {}, "f:status": {}, "f:type": {}});
        let entry = json!({"manager": "kube-apiserver", "operation": "Update", "apiVersion": "apiextensions.k8s.io/v1",
                           "time": now, "fieldsType": "FieldsV1", "subresource": "status",
                           "fieldsV1": {"f:status": {"f:acceptedNames": {"f:kind": {}, "f:plural": {}},
                                                     "f:conditions": {"k:{\"type\":\"Established\"}": owned,
                                                                      "k:{\"type\":\"NamesAccepted\"}": owned}}}});
        assert_eq!(written["managedFields"], json!([applied, entry]));
        // Behind kube-apiserver, versa's own, at versa's version.
        let cluster = track_status_write(&metadata, Some(&old), &status, false, now).unwrap();
        assert_eq!(
            (&cluster["managedFields"][1]["manager"], &cluster["managedFields"][1]["apiVersion"]),
            (&json!("versa"), &json!("versa.dev/v1"))
        );
        // A definition whose fields nobody tracks stays untracked.
        assert_eq!(
            track_status_write(&json!({"name": "xs.example.com", "uid": "u"}), Some(&old), &status, true, now),
            None
        );
    }

    #[test]
    fn unknown_fields_are_reported_and_nothing_else() {
        let mut doc = crontab(None);
        assert_eq!(admit_create(&mut doc, &mut Vec::new()).unwrap(), Vec::<String>::new());
        assert_eq!(doc["status"]["storedVersions"], json!(["v1"]));
        let mut typo = crontab(Some(("servd", json!(true))));
        assert_eq!(admit_create(&mut typo, &mut Vec::new()).unwrap(), ["spec.versions[0].servd"]);
        // Status is the server's: whatever a client sends there is not an unknown field.
        let mut with_status = crontab(None);
        with_status["status"] =
            json!({"conditions": [{"type": "Established", "status": "True"}], "acceptedNames": {"plural": "x"}});
        assert_eq!(admit_create(&mut with_status, &mut Vec::new()).unwrap(), Vec::<String>::new());
        assert!(typo["spec"]["versions"][0].get("servd").is_none(), "dropped");
    }

    /// Unknown fields anywhere in a definition — its schemas too (below properties, items,
    /// additionalProperties, in validation rules) and its conversion — in the document's order;
    /// null ones are not reported; what the typed form knows, wherever it is, is not.
    #[test]
    fn unknown_fields_everywhere() {
        let mut doc = crontab(None);
        let schema = json!({"type": "object", "properties": {
            "spec": {"type": "object", "typo": 1, "properties": {
                "list": {"type": "array", "items": {"type": "string", "maxLenght": 3}},
                "map": {"type": "object", "additionalProperties": {"type": "integer", "formt": "int32"}},
                "free": {"x-kubernetes-preserve-unknown-fields": true, "default": {"anything": {"goes": 1}}},
                "ruled": {"type": "string", "x-kubernetes-validations": [{"rule": "self != ''", "mesage": "no"}]},
                "nulled": {"type": "string", "unknownButNull": null},
            }},
        }});
        doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = schema;
        doc["spec"]["conversion"] = json!({"strategy": "None", "webhookk": {}});
        doc["spec"]["names"]["plurall"] = json!("x");
        doc["spec"]["zzz"] = json!({"a": 1});
        let want = [
            "spec.conversion.webhookk",
            "spec.names.plurall",
            "spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.list.items.maxLenght",
            "spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.map.additionalProperties.formt",
            "spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.ruled.x-kubernetes-validations[0].mesage",
            "spec.versions[0].schema.openAPIV3Schema.properties.spec.typo",
            "spec.zzz",
        ];
        assert_eq!(unknown_fields(&doc), want);
        let mut admitted = doc.clone();
        assert_eq!(admit_create(&mut admitted, &mut Vec::new()).unwrap(), want, "admission reports the same");
    }
}
