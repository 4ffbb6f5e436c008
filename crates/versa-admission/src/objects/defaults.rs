//! kube's v1 defaults for the admission configuration kinds (`SetObjectDefaults_*` of
//! `pkg/apis/admissionregistration/v1`): webhooks get `failurePolicy: Fail`, `matchPolicy:
//! Equivalent`, empty namespace and object selectors, `timeoutSeconds: 10` (mutating ones
//! `reinvocationPolicy: Never`), their rules `scope: "*"` and their services `port: 443`;
//! policies get `failurePolicy: Fail` (a policy's `spec` is a struct in Go, so it exists even
//! when the request has none) and their match resources the webhooks' match defaults; a
//! ValidatingAdmissionPolicy's `status` is a struct in Go too, so kube answers `status: {}`
//! for one that has none.
//! Applied to decoded objects only: every value is of its type, absent fields are absent.

use serde_json::{Map, Value, json};

use super::ObjectKind;

/// Applies the defaults of `kind` to the decoded `obj`.
pub(super) fn apply(kind: ObjectKind, obj: &mut Value) {
    match kind {
        ObjectKind::ValidatingWebhookConfiguration => webhooks(obj, false),
        ObjectKind::MutatingWebhookConfiguration => webhooks(obj, true),
        ObjectKind::ValidatingAdmissionPolicy | ObjectKind::MutatingAdmissionPolicy => {
            if kind == ObjectKind::ValidatingAdmissionPolicy
                && let Some(map) = obj.as_object_mut()
            {
                map.entry("status").or_insert_with(|| json!({}));
            }
            if let Some(spec) = spec(obj) {
                set(spec, "failurePolicy", json!("Fail"));
                if let Some(m) = spec.get_mut("matchConstraints").and_then(Value::as_object_mut) {
                    match_resources(m);
                }
            }
        }
        ObjectKind::ValidatingAdmissionPolicyBinding | ObjectKind::MutatingAdmissionPolicyBinding => {
            if let Some(m) = obj.pointer_mut("/spec/matchResources").and_then(Value::as_object_mut) {
                match_resources(m);
            }
        }
    }
}

fn webhooks(obj: &mut Value, mutating: bool) {
    let Some(hooks) = obj.get_mut("webhooks").and_then(Value::as_array_mut) else { return };
    for hook in hooks.iter_mut().filter_map(Value::as_object_mut) {
        set(hook, "failurePolicy", json!("Fail"));
        set(hook, "matchPolicy", json!("Equivalent"));
        set(hook, "namespaceSelector", json!({}));
        set(hook, "objectSelector", json!({}));
        set(hook, "timeoutSeconds", json!(10));
        if mutating {
            set(hook, "reinvocationPolicy", json!("Never"));
        }
        if let Some(service) =
            hook.get_mut("clientConfig").and_then(|c| c.get_mut("service")).and_then(Value::as_object_mut)
        {
            set(service, "port", json!(443));
        }
        rules(hook.get_mut("rules"));
    }
}

fn match_resources(m: &mut Map<String, Value>) {
    set(m, "matchPolicy", json!("Equivalent"));
    set(m, "namespaceSelector", json!({}));
    set(m, "objectSelector", json!({}));
    rules(m.get_mut("resourceRules"));
    rules(m.get_mut("excludeResourceRules"));
}

fn rules(list: Option<&mut Value>) {
    for rule in list.and_then(Value::as_array_mut).into_iter().flatten().filter_map(Value::as_object_mut) {
        set(rule, "scope", json!("*"));
    }
}

/// The policy's `spec`, created when absent (Go's zero struct).
fn spec(obj: &mut Value) -> Option<&mut Map<String, Value>> {
    let map = obj.as_object_mut()?;
    map.entry("spec").or_insert_with(|| json!({})).as_object_mut()
}

fn set(map: &mut Map<String, Value>, key: &str, value: Value) {
    map.entry(key).or_insert(value);
}
