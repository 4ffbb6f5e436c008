//! ValidatingAdmissionPolicy and MutatingAdmissionPolicy, as validation.go checks their
//! `spec`: failure policy, `paramKind`, match constraints, match conditions, variables, then
//! validations and audit annotations, or mutations and the reinvocation policy. Each CEL
//! expression is compiled as kube compiles it at this point: variables in order, each seeing
//! the ones before; a ValidatingAdmissionPolicy without variables has no `variables` at all;
//! messages without the authorizer; mutations with the patch types. The status is not
//! validated on writes of the main resource.

use std::collections::BTreeSet;

use serde_json::{Map, Value};
use versa_schema::field::{BadValue, Error, ErrorList, Path, go_json};
use versa_schema::names;

use super::common::{
    FAILURE_POLICIES, REINVOCATION_POLICIES, check_enum, check_expression, is_cel_identifier, match_conditions,
    match_resources, param_kind, typed,
};
use super::{get, items, str_at, string_at};
use crate::expression::{Declarations, Returns, Variables};

const REASONS: &[&str] = &["Forbidden", "Invalid", "RequestEntityTooLarge"];
const PATCH_TYPES: &[&str] = &["ApplyConfiguration", "JSONPatch"];
const MUTATING_OPERATIONS: &[&str] = &["*", "CONNECT", "CREATE", "UPDATE"];
const MAX_AUDIT_ANNOTATIONS: usize = 20;
/// Shorter than an audit annotation value's limit (10 KiB): concatenations grow.
const MAX_AUDIT_ANNOTATION_VALUE_EXPRESSION_BYTES: usize = 5 * 1024;

/// kube's update ratchet for policies: matchConditions are not checked again when neither
/// they nor `paramKind` changed (nil and empty lists are equal, as in `equality.Semantic`).
pub(super) fn match_conditions_unchanged(new: &Value, old: &Value) -> bool {
    let spec = |o: &Value, key: &str| {
        o.get("spec").and_then(|s| get(s, key)).filter(|v| v.as_array().is_none_or(|a| !a.is_empty())).cloned()
    };
    spec(new, "paramKind") == spec(old, "paramKind") && spec(new, "matchConditions") == spec(old, "matchConditions")
}

/// What the failure policy, `paramKind`, match constraints and match conditions of both
/// kinds share; returns whether the policy has a `paramKind`.
fn common(spec: &Value, ignore_match_conditions: bool, path: &Path, mutating: bool, errs: &mut ErrorList) -> bool {
    match str_at(spec, "failurePolicy") {
        None => errs.push(Error::required(path.child("failurePolicy"), "")),
        Some(_) => check_enum(spec, "failurePolicy", FAILURE_POLICIES, path, errs),
    }
    let pk = get(spec, "paramKind");
    if let Some(pk) = pk {
        param_kind(pk, &path.child("paramKind"), errs);
    }
    match get(spec, "matchConstraints") {
        None => errs.push(Error::required(path.child("matchConstraints"), "")),
        Some(mc) => {
            match_resources(mc, &path.child("matchConstraints"), errs);
            // At least one rule gives the policy its types.
            if items(mc, "resourceRules").is_empty() {
                errs.push(Error::required(path.child("matchConstraints").child("resourceRules"), ""));
            }
            if mutating {
                mutating_operations(mc, &path.child("matchConstraints"), errs);
            }
        }
    }
    if !ignore_match_conditions {
        match_conditions(items(spec, "matchConditions"), pk.is_some(), &path.child("matchConditions"), errs);
    }
    pk.is_some()
}

/// Only creates, updates and connects can be mutated; kube reports each other operation at
/// the rules' path without an index.
pub(super) fn mutating_operations(mc: &Value, path: &Path, errs: &mut ErrorList) {
    let at = path.child("resourceRules").child("operations");
    for rule in items(mc, "resourceRules") {
        for op in items(rule, "operations").iter().filter_map(Value::as_str) {
            if !MUTATING_OPERATIONS.contains(&op) {
                errs.push(Error::not_supported(at.clone(), typed(op), MUTATING_OPERATIONS));
            }
        }
    }
}

/// The variables, compiled in order (a blank expression is not compiled, so not declared),
/// with their errors; returns the declarations later expressions see.
fn variables(spec: &Value, params: bool, path: &Path, errs: &mut ErrorList) -> Declarations {
    let list = items(spec, "variables");
    let compiled: Vec<(String, String)> = list
        .iter()
        .map(|v| (string_at(v, "name").to_owned(), string_at(v, "expression").to_owned()))
        .filter(|(_, e)| !e.trim().is_empty())
        .collect();
    let vars = Variables::compile_in(&compiled, &Declarations { params, authorizer: true, ..Declarations::default() });
    let mut results = vars.exprs.iter();
    for (i, v) in list.iter().enumerate() {
        let path = path.child("variables").index(i);
        let name = string_at(v, "name");
        if name.trim().is_empty() {
            errs.push(Error::required(path.child("name"), "name is not specified"));
        } else if !is_cel_identifier(name) {
            errs.push(Error::invalid(path.child("name"), name, "must be a valid CEL identifier"));
        }
        let expression = string_at(v, "expression");
        if expression.trim().is_empty() {
            errs.push(Error::required(path.child("expression"), "expression is not specified"));
        } else if let Some(Err(detail)) = results.next().map(|e| &e.compiled) {
            errs.push(Error::invalid(path.child("expression"), expression, detail.clone()));
        }
    }
    Declarations { params, authorizer: true, variables: vars.ty, ..Declarations::default() }
}

/// `validateValidatingAdmissionPolicySpec`.
pub(super) fn validate_vap(obj: &Value, ignore_match_conditions: bool, errs: &mut ErrorList) {
    let empty = Value::Object(Map::new());
    let spec = get(obj, "spec").unwrap_or(&empty);
    let path = Path::new("spec");
    let params = common(spec, ignore_match_conditions, &path, false, errs);
    // kube composes variables only when there are some: without, `variables` is undeclared.
    let decls = if items(spec, "variables").is_empty() {
        Declarations { params, authorizer: true, without_variables: true, ..Declarations::default() }
    } else {
        variables(spec, params, &path, errs)
    };
    let validations = items(spec, "validations");
    let annotations = items(spec, "auditAnnotations");
    if validations.is_empty() && annotations.is_empty() {
        const NEEDED: &str = "validations or auditAnnotations must contain at least one item";
        errs.push(Error::required(path.child("validations"), NEEDED));
        errs.push(Error::required(path.child("auditAnnotations"), NEEDED));
        return;
    }
    for (i, v) in validations.iter().enumerate() {
        validation(v, &decls, &path.child("validations").index(i), errs);
    }
    if annotations.len() > MAX_AUDIT_ANNOTATIONS {
        errs.push(Error::invalid(
            path.child("auditAnnotations"),
            BadValue::Raw(go_json(&Value::Array(annotations.iter().map(go_audit_annotation).collect()))),
            format!("must not have more than {MAX_AUDIT_ANNOTATIONS} auditAnnotations"),
        ));
    }
    let policy_name = obj.get("metadata").map_or("", |m| string_at(m, "name"));
    let mut keys = BTreeSet::new();
    for (i, a) in annotations.iter().enumerate() {
        let path = path.child("auditAnnotations").index(i);
        audit_annotation(a, policy_name, &decls, &path, errs);
        let key = string_at(a, "key");
        if !keys.insert(key) {
            errs.push(Error::duplicate(path.child("key"), key));
        }
    }
}

/// An audit annotation as kube prints its internal type (Go field names, no JSON tags).
fn go_audit_annotation(a: &Value) -> Value {
    serde_json::json!({"Key": string_at(a, "key"), "ValueExpression": string_at(a, "valueExpression")})
}

fn validation(v: &Value, decls: &Declarations, path: &Path, errs: &mut ErrorList) {
    let expression = string_at(v, "expression");
    if expression.trim().is_empty() {
        errs.push(Error::required(path.child("expression"), "expression is not specified"));
    } else {
        check_expression(expression, expression, decls, Returns::Bool, path.child("expression"), errs);
    }
    let message_expression = string_at(v, "messageExpression");
    if !message_expression.is_empty() && message_expression.trim().is_empty() {
        errs.push(Error::invalid(
            path.child("messageExpression"),
            message_expression,
            "must be non-empty if specified",
        ));
    } else if !message_expression.is_empty() {
        // Messages are compiled without the authorizer; the untrimmed text keeps the columns.
        let message_decls = Declarations { authorizer: false, ..decls.clone() };
        let at = path.child("messageExpression");
        check_expression(message_expression, message_expression, &message_decls, Returns::String, at, errs);
    }
    let message = string_at(v, "message");
    if !message.is_empty() && message.trim().is_empty() {
        errs.push(Error::invalid(path.child("message"), message, "must be non-empty if specified"));
    } else if message.trim().contains(['\n', '\r']) {
        errs.push(Error::invalid(path.child("message"), message, "must not contain line breaks"));
    }
    check_enum(v, "reason", REASONS, path, errs);
}

fn audit_annotation(a: &Value, policy_name: &str, decls: &Declarations, path: &Path, errs: &mut ErrorList) {
    let key = string_at(a, "key");
    if policy_name.is_empty() {
        errs.push(Error::invalid(path.child("key"), key, "requires metadata.name be non-empty"));
    } else {
        let qualified = format!("{policy_name}/{key}");
        for msg in names::is_qualified_name(&qualified) {
            errs.push(Error::invalid(path.child("key"), qualified.as_str(), msg));
        }
    }
    let value_expression = string_at(a, "valueExpression");
    let trimmed = value_expression.trim();
    let at = path.child("valueExpression");
    if trimmed.is_empty() {
        errs.push(Error::required(at, "valueExpression is not specified"));
    } else if trimmed.len() > MAX_AUDIT_ANNOTATION_VALUE_EXPRESSION_BYTES {
        errs.push(Error::required(
            at,
            format!("must not exceed {MAX_AUDIT_ANNOTATION_VALUE_EXPRESSION_BYTES} bytes in length"),
        ));
    } else {
        // kube compiles the trimmed text but shows the expression as written.
        check_expression(trimmed, value_expression, decls, Returns::StringOrNull, at, errs);
    }
}

/// `validateMutatingAdmissionPolicySpec`.
pub(super) fn validate_map(obj: &Value, ignore_match_conditions: bool, errs: &mut ErrorList) {
    let empty = Value::Object(Map::new());
    let spec = get(obj, "spec").unwrap_or(&empty);
    let path = Path::new("spec");
    let params = common(spec, ignore_match_conditions, &path, true, errs);
    // A mutating policy's expressions always see `variables`.
    let decls = variables(spec, params, &path, errs);
    let mutations = items(spec, "mutations");
    if mutations.is_empty() {
        errs.push(Error::required(path.child("mutations"), "mutations must contain at least one item"));
    }
    let patch_decls = Declarations { patch_types: true, ..decls };
    for (i, m) in mutations.iter().enumerate() {
        mutation(m, &patch_decls, &path.child("mutations").index(i), errs);
    }
    match string_at(spec, "reinvocationPolicy") {
        "" => errs.push(Error::required(path.child("reinvocationPolicy"), "")),
        _ => check_enum(spec, "reinvocationPolicy", REINVOCATION_POLICIES, &path, errs),
    }
}

fn mutation(m: &Value, decls: &Declarations, path: &Path, errs: &mut ErrorList) {
    let json_patch = get(m, "jsonPatch");
    let apply = get(m, "applyConfiguration");
    match string_at(m, "patchType") {
        "" => errs.push(Error::required(path.child("patchType"), "")),
        "JSONPatch" => {
            match json_patch {
                None => {
                    errs.push(Error::required(path.child("jsonPatch"), "must be specified when patchType is JSONPatch"))
                }
                Some(p) => patch_expression(p, decls, Returns::JsonPatchList, &path.child("jsonPatch"), errs),
            }
            if apply.is_some() {
                errs.push(Error::invalid(
                    path.child("applyConfiguration"),
                    "{applyConfiguration}",
                    "must not be specified when patchType is JSONPatch",
                ));
            }
        }
        "ApplyConfiguration" => {
            match apply {
                None => errs.push(Error::required(
                    path.child("applyConfiguration"),
                    "must be specified when patchType is ApplyConfiguration",
                )),
                Some(a) => {
                    patch_expression(a, decls, Returns::ApplyConfiguration, &path.child("applyConfiguration"), errs)
                }
            }
            if json_patch.is_some() {
                errs.push(Error::invalid(
                    path.child("jsonPatch"),
                    "{jsonPatch}",
                    "must not be specified when patchType is ApplyConfiguration",
                ));
            }
        }
        other => errs.push(Error::not_supported(path.child("patchType"), typed(other), PATCH_TYPES)),
    }
}

fn patch_expression(p: &Value, decls: &Declarations, returns: Returns, path: &Path, errs: &mut ErrorList) {
    let trimmed = string_at(p, "expression").trim();
    if trimmed.is_empty() {
        errs.push(Error::required(path.child("expression"), ""));
    } else {
        check_expression(trimmed, trimmed, decls, returns, path.child("expression"), errs);
    }
}
