//! Decoding an admission configuration object as kube's decoder reads it into the v1 Go
//! types: each kind's shape is written out below (field names, JSON types and the Go type
//! names kube's errors print); unknown fields are dropped and reported (`webhooks[0].foo`),
//! `null`s are dropped (Go leaves the field unset), and a value of the wrong type is Go's
//! `json: cannot unmarshal string into Go struct field ValidatingWebhook.webhooks.timeoutSeconds
//! of type int32`. `metadata` is left as it is: ObjectMeta is coerced and validated elsewhere.

use base64::Engine as _;
use serde_json::Value;
use versa_schema::field::{Error, Path};

use super::ObjectKind;

/// A field's type: its JSON shape and the Go type kube's errors name.
#[derive(Debug)]
enum Ty {
    /// A string; the Go type (`string`, `v1.FailurePolicyType`, ...).
    Str(&'static str),
    Int32,
    Int64,
    /// `[]byte`: a base64 string.
    Bytes,
    /// A list of the element type; the Go slice type.
    List(&'static Ty, &'static str),
    /// `map[string]string`.
    StrMap,
    Struct(&'static Shape),
}

/// A Go struct: its name and its fields.
#[derive(Debug)]
struct Shape {
    name: &'static str,
    fields: &'static [(&'static str, Ty)],
}

const STRING: Ty = Ty::Str("string");
const STRINGS: Ty = Ty::List(&STRING, "[]string");

const LABEL_SELECTOR_REQUIREMENT: Shape = Shape {
    name: "LabelSelectorRequirement",
    fields: &[("key", STRING), ("operator", Ty::Str("v1.LabelSelectorOperator")), ("values", STRINGS)],
};
const LABEL_SELECTOR: Shape = Shape {
    name: "LabelSelector",
    fields: &[
        ("matchLabels", Ty::StrMap),
        ("matchExpressions", Ty::List(&Ty::Struct(&LABEL_SELECTOR_REQUIREMENT), "[]v1.LabelSelectorRequirement")),
    ],
};
const SELECTOR: Ty = Ty::Struct(&LABEL_SELECTOR);

/// The fields of `Rule` and `RuleWithOperations` (inlined in Go, so errors name the outer struct).
macro_rules! rule_fields {
    ($($extra:expr),*) => {
        &[
            ("operations", Ty::List(&Ty::Str("v1.OperationType"), "[]v1.OperationType")),
            ("apiGroups", STRINGS),
            ("apiVersions", STRINGS),
            ("resources", STRINGS),
            ("scope", Ty::Str("v1.ScopeType")),
            $($extra),*
        ]
    };
}
const RULE_WITH_OPERATIONS: Shape = Shape { name: "RuleWithOperations", fields: rule_fields!() };
const NAMED_RULE_WITH_OPERATIONS: Shape =
    Shape { name: "NamedRuleWithOperations", fields: rule_fields!(("resourceNames", STRINGS)) };

const MATCH_CONDITION: Shape = Shape { name: "MatchCondition", fields: &[("name", STRING), ("expression", STRING)] };
const MATCH_CONDITIONS: Ty = Ty::List(&Ty::Struct(&MATCH_CONDITION), "[]v1.MatchCondition");

const SERVICE_REFERENCE: Shape = Shape {
    name: "ServiceReference",
    fields: &[("namespace", STRING), ("name", STRING), ("path", STRING), ("port", Ty::Int32)],
};
const WEBHOOK_CLIENT_CONFIG: Shape = Shape {
    name: "WebhookClientConfig",
    fields: &[("url", STRING), ("service", Ty::Struct(&SERVICE_REFERENCE)), ("caBundle", Ty::Bytes)],
};

macro_rules! webhook_fields {
    ($($extra:expr),*) => {
        &[
            ("name", STRING),
            ("clientConfig", Ty::Struct(&WEBHOOK_CLIENT_CONFIG)),
            ("rules", Ty::List(&Ty::Struct(&RULE_WITH_OPERATIONS), "[]v1.RuleWithOperations")),
            ("failurePolicy", Ty::Str("v1.FailurePolicyType")),
            ("matchPolicy", Ty::Str("v1.MatchPolicyType")),
            ("namespaceSelector", SELECTOR),
            ("objectSelector", SELECTOR),
            ("sideEffects", Ty::Str("v1.SideEffectClass")),
            ("timeoutSeconds", Ty::Int32),
            ("admissionReviewVersions", STRINGS),
            ("matchConditions", MATCH_CONDITIONS),
            $($extra),*
        ]
    };
}
const VALIDATING_WEBHOOK: Shape = Shape { name: "ValidatingWebhook", fields: webhook_fields!() };
const MUTATING_WEBHOOK: Shape = Shape {
    name: "MutatingWebhook",
    fields: webhook_fields!(("reinvocationPolicy", Ty::Str("v1.ReinvocationPolicyType"))),
};

const VALIDATING_WEBHOOK_CONFIGURATION: Shape = Shape {
    name: "ValidatingWebhookConfiguration",
    fields: &[
        ("apiVersion", STRING),
        ("kind", STRING),
        ("webhooks", Ty::List(&Ty::Struct(&VALIDATING_WEBHOOK), "[]v1.ValidatingWebhook")),
    ],
};
const MUTATING_WEBHOOK_CONFIGURATION: Shape = Shape {
    name: "MutatingWebhookConfiguration",
    fields: &[
        ("apiVersion", STRING),
        ("kind", STRING),
        ("webhooks", Ty::List(&Ty::Struct(&MUTATING_WEBHOOK), "[]v1.MutatingWebhook")),
    ],
};

const PARAM_KIND: Shape = Shape { name: "ParamKind", fields: &[("apiVersion", STRING), ("kind", STRING)] };
const MATCH_RESOURCES: Shape = Shape {
    name: "MatchResources",
    fields: &[
        ("namespaceSelector", SELECTOR),
        ("objectSelector", SELECTOR),
        ("resourceRules", Ty::List(&Ty::Struct(&NAMED_RULE_WITH_OPERATIONS), "[]v1.NamedRuleWithOperations")),
        ("excludeResourceRules", Ty::List(&Ty::Struct(&NAMED_RULE_WITH_OPERATIONS), "[]v1.NamedRuleWithOperations")),
        ("matchPolicy", Ty::Str("v1.MatchPolicyType")),
    ],
};
const VARIABLE: Shape = Shape { name: "Variable", fields: &[("name", STRING), ("expression", STRING)] };
const VARIABLES: Ty = Ty::List(&Ty::Struct(&VARIABLE), "[]v1.Variable");
const VALIDATION: Shape = Shape {
    name: "Validation",
    fields: &[
        ("expression", STRING),
        ("message", STRING),
        ("reason", Ty::Str("v1.StatusReason")),
        ("messageExpression", STRING),
    ],
};
const AUDIT_ANNOTATION: Shape =
    Shape { name: "AuditAnnotation", fields: &[("key", STRING), ("valueExpression", STRING)] };
const VALIDATING_ADMISSION_POLICY_SPEC: Shape = Shape {
    name: "ValidatingAdmissionPolicySpec",
    fields: &[
        ("paramKind", Ty::Struct(&PARAM_KIND)),
        ("matchConstraints", Ty::Struct(&MATCH_RESOURCES)),
        ("validations", Ty::List(&Ty::Struct(&VALIDATION), "[]v1.Validation")),
        ("failurePolicy", Ty::Str("v1.FailurePolicyType")),
        ("auditAnnotations", Ty::List(&Ty::Struct(&AUDIT_ANNOTATION), "[]v1.AuditAnnotation")),
        ("matchConditions", MATCH_CONDITIONS),
        ("variables", VARIABLES),
    ],
};
const EXPRESSION_WARNING: Shape =
    Shape { name: "ExpressionWarning", fields: &[("fieldRef", STRING), ("warning", STRING)] };
const TYPE_CHECKING: Shape = Shape {
    name: "TypeChecking",
    fields: &[("expressionWarnings", Ty::List(&Ty::Struct(&EXPRESSION_WARNING), "[]v1.ExpressionWarning"))],
};
const CONDITION: Shape = Shape {
    name: "Condition",
    fields: &[
        ("type", STRING),
        ("status", Ty::Str("v1.ConditionStatus")),
        ("observedGeneration", Ty::Int64),
        ("lastTransitionTime", Ty::Str("v1.Time")),
        ("reason", STRING),
        ("message", STRING),
    ],
};
const VALIDATING_ADMISSION_POLICY_STATUS: Shape = Shape {
    name: "ValidatingAdmissionPolicyStatus",
    fields: &[
        ("observedGeneration", Ty::Int64),
        ("typeChecking", Ty::Struct(&TYPE_CHECKING)),
        ("conditions", Ty::List(&Ty::Struct(&CONDITION), "[]v1.Condition")),
    ],
};
const VALIDATING_ADMISSION_POLICY: Shape = Shape {
    name: "ValidatingAdmissionPolicy",
    fields: &[
        ("apiVersion", STRING),
        ("kind", STRING),
        ("spec", Ty::Struct(&VALIDATING_ADMISSION_POLICY_SPEC)),
        ("status", Ty::Struct(&VALIDATING_ADMISSION_POLICY_STATUS)),
    ],
};

const PARAM_REF: Shape = Shape {
    name: "ParamRef",
    fields: &[
        ("name", STRING),
        ("namespace", STRING),
        ("selector", SELECTOR),
        ("parameterNotFoundAction", Ty::Str("v1.ParameterNotFoundActionType")),
    ],
};
const VALIDATING_ADMISSION_POLICY_BINDING_SPEC: Shape = Shape {
    name: "ValidatingAdmissionPolicyBindingSpec",
    fields: &[
        ("policyName", STRING),
        ("paramRef", Ty::Struct(&PARAM_REF)),
        ("matchResources", Ty::Struct(&MATCH_RESOURCES)),
        ("validationActions", Ty::List(&Ty::Str("v1.ValidationAction"), "[]v1.ValidationAction")),
    ],
};
const VALIDATING_ADMISSION_POLICY_BINDING: Shape = Shape {
    name: "ValidatingAdmissionPolicyBinding",
    fields: &[
        ("apiVersion", STRING),
        ("kind", STRING),
        ("spec", Ty::Struct(&VALIDATING_ADMISSION_POLICY_BINDING_SPEC)),
    ],
};

const EXPRESSION_ONLY: &[(&str, Ty)] = &[("expression", STRING)];
const APPLY_CONFIGURATION: Shape = Shape { name: "ApplyConfiguration", fields: EXPRESSION_ONLY };
const JSON_PATCH: Shape = Shape { name: "JSONPatch", fields: EXPRESSION_ONLY };
const MUTATION: Shape = Shape {
    name: "Mutation",
    fields: &[
        ("patchType", Ty::Str("v1.PatchType")),
        ("applyConfiguration", Ty::Struct(&APPLY_CONFIGURATION)),
        ("jsonPatch", Ty::Struct(&JSON_PATCH)),
    ],
};
const MUTATING_ADMISSION_POLICY_SPEC: Shape = Shape {
    name: "MutatingAdmissionPolicySpec",
    fields: &[
        ("paramKind", Ty::Struct(&PARAM_KIND)),
        ("matchConstraints", Ty::Struct(&MATCH_RESOURCES)),
        ("variables", VARIABLES),
        ("mutations", Ty::List(&Ty::Struct(&MUTATION), "[]v1.Mutation")),
        ("failurePolicy", Ty::Str("v1.FailurePolicyType")),
        ("matchConditions", MATCH_CONDITIONS),
        ("reinvocationPolicy", Ty::Str("v1.ReinvocationPolicyType")),
    ],
};
const MUTATING_ADMISSION_POLICY: Shape = Shape {
    name: "MutatingAdmissionPolicy",
    fields: &[("apiVersion", STRING), ("kind", STRING), ("spec", Ty::Struct(&MUTATING_ADMISSION_POLICY_SPEC))],
};
const MUTATING_ADMISSION_POLICY_BINDING_SPEC: Shape = Shape {
    name: "MutatingAdmissionPolicyBindingSpec",
    fields: &[
        ("policyName", STRING),
        ("paramRef", Ty::Struct(&PARAM_REF)),
        ("matchResources", Ty::Struct(&MATCH_RESOURCES)),
    ],
};
const MUTATING_ADMISSION_POLICY_BINDING: Shape = Shape {
    name: "MutatingAdmissionPolicyBinding",
    fields: &[("apiVersion", STRING), ("kind", STRING), ("spec", Ty::Struct(&MUTATING_ADMISSION_POLICY_BINDING_SPEC))],
};

fn shape(kind: ObjectKind) -> &'static Shape {
    match kind {
        ObjectKind::ValidatingWebhookConfiguration => &VALIDATING_WEBHOOK_CONFIGURATION,
        ObjectKind::MutatingWebhookConfiguration => &MUTATING_WEBHOOK_CONFIGURATION,
        ObjectKind::ValidatingAdmissionPolicy => &VALIDATING_ADMISSION_POLICY,
        ObjectKind::ValidatingAdmissionPolicyBinding => &VALIDATING_ADMISSION_POLICY_BINDING,
        ObjectKind::MutatingAdmissionPolicy => &MUTATING_ADMISSION_POLICY,
        ObjectKind::MutatingAdmissionPolicyBinding => &MUTATING_ADMISSION_POLICY_BINDING,
    }
}

/// Decodes `obj` in place as `kind`: unknown fields and `null`s removed (`metadata` kept as
/// it is). Returns the unknown fields' paths, or the first value of the wrong type.
pub(super) fn decode(kind: ObjectKind, obj: &mut Value) -> Result<Vec<String>, Box<Error>> {
    let root = shape(kind);
    let Value::Object(map) = obj else {
        return Err(Box::new(Error::invalid(
            Path::none(),
            obj.clone(),
            format!("json: cannot unmarshal {} into Go value of type v1.{}", json_kind(obj), root.name),
        )));
    };
    let mut walk = Walk { unknown: Vec::new(), stack: Vec::new() };
    let metadata = map.remove("metadata");
    let result = walk.object(map, root, &Path::none());
    if let Some(m) = metadata {
        map.insert("metadata".to_owned(), m);
    }
    result.map(|()| walk.unknown)
}

struct Walk<'s> {
    unknown: Vec<String>,
    /// The Go field names from the root, as Go's decoder names a field in its errors.
    stack: Vec<&'s str>,
}

impl<'s> Walk<'s> {
    fn object(
        &mut self,
        map: &mut serde_json::Map<String, Value>,
        shape: &'s Shape,
        path: &Path,
    ) -> Result<(), Box<Error>> {
        let keys: Vec<String> = map.keys().cloned().collect();
        for key in keys {
            let Some((name, ty)) = shape.fields.iter().find(|(n, _)| *n == key) else {
                self.unknown.push(path.child(&key).as_str().to_owned());
                map.remove(&key);
                continue;
            };
            if map.get(&key).is_some_and(Value::is_null) {
                map.remove(&key);
                continue;
            }
            if let Some(v) = map.get_mut(&key) {
                self.stack.push(name);
                let r = self.value(v, ty, shape, &path.child(name));
                self.stack.pop();
                r?;
            }
        }
        Ok(())
    }

    /// Checks `v` against `ty`; `owner` is the struct whose field it is (named by Go's errors).
    fn value(&mut self, v: &mut Value, ty: &'s Ty, owner: &'s Shape, path: &Path) -> Result<(), Box<Error>> {
        let ok = match (ty, &mut *v) {
            (Ty::Str(_), Value::String(_)) => true,
            (Ty::Int32, Value::Number(n)) => {
                if n.as_i64().and_then(|i| i32::try_from(i).ok()).is_none() {
                    let what = format!("number {n}");
                    return Err(self.error(Value::Number(n.clone()), &what, ty, owner, path));
                }
                true
            }
            (Ty::Int64, Value::Number(n)) => {
                if n.as_i64().is_none() {
                    let what = format!("number {n}");
                    return Err(self.error(Value::Number(n.clone()), &what, ty, owner, path));
                }
                true
            }
            (Ty::Bytes, Value::String(s)) => {
                if let Err(e) = base64::engine::general_purpose::STANDARD.decode(s.as_bytes()) {
                    let detail = base64_error(&e, s.len());
                    return Err(Box::new(Error::invalid(path.clone(), s.as_str(), detail)));
                }
                true
            }
            (Ty::StrMap, Value::Object(m)) => {
                if let Some((_, bad)) = m.iter().find(|(_, x)| !x.is_string() && !x.is_null()) {
                    let what = json_kind(bad);
                    return Err(self.error(bad.clone(), what, &STRING, owner, path));
                }
                m.retain(|_, x| !x.is_null());
                true
            }
            (Ty::List(elem, _), Value::Array(items)) => {
                for (i, item) in items.iter_mut().enumerate() {
                    if item.is_null() {
                        // Go decodes a null element as the element type's zero value.
                        *item = zero(elem);
                        continue;
                    }
                    self.value(item, elem, owner, &path.index(i))?;
                }
                true
            }
            (Ty::Struct(shape), Value::Object(m)) => {
                self.object(m, shape, path)?;
                true
            }
            _ => false,
        };
        if ok {
            Ok(())
        } else {
            let what = json_kind(v);
            Err(self.error(v.clone(), what, ty, owner, path))
        }
    }

    fn error(&self, value: Value, what: &str, ty: &Ty, owner: &Shape, path: &Path) -> Box<Error> {
        let detail = format!(
            "json: cannot unmarshal {what} into Go struct field {}.{} of type {}",
            owner.name,
            self.stack.join("."),
            go_type(ty)
        );
        Box::new(Error::invalid(path.clone(), value, detail))
    }
}

fn zero(ty: &Ty) -> Value {
    match ty {
        Ty::Str(_) | Ty::Bytes => Value::String(String::new()),
        Ty::Int32 | Ty::Int64 => Value::from(0),
        Ty::List(..) => Value::Null,
        Ty::StrMap | Ty::Struct(_) => Value::Object(serde_json::Map::new()),
    }
}

fn go_type(ty: &Ty) -> String {
    match ty {
        Ty::Str(t) | Ty::List(_, t) => (*t).to_owned(),
        Ty::Int32 => "int32".to_owned(),
        Ty::Int64 => "int64".to_owned(),
        Ty::Bytes => "[]uint8".to_owned(),
        Ty::StrMap => "map[string]string".to_owned(),
        Ty::Struct(s) => format!("v1.{}", s.name),
    }
}

/// How Go's decoder names a JSON value in `cannot unmarshal <what>`.
fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Go's `base64.CorruptInputError` text (the offset as close to Go's as the crate tells).
fn base64_error(e: &base64::DecodeError, len: usize) -> String {
    let at = match e {
        base64::DecodeError::InvalidByte(at, _) | base64::DecodeError::InvalidLastSymbol(at, _) => *at,
        base64::DecodeError::InvalidLength(_) | base64::DecodeError::InvalidPadding => len,
    };
    format!("illegal base64 data at input byte {at}")
}
