//! What webhooks, policies and bindings share in validation.go: rules (operations, groups,
//! versions, resources and subresources, scope), label selectors (apimachinery's
//! `ValidateLabelSelector`), match resources, match conditions, `paramKind`, `paramRef`,
//! and the compilation of CEL expressions for their errors (the checker of `expression`,
//! the one the dispatch compiles with).

use std::collections::BTreeSet;

use serde_json::Value;
use versa_schema::field::{BadValue, Error, ErrorList, Path, go_json};
use versa_schema::names;

use super::{get, items, str_at, string_at, strings};
use crate::expression::{Declarations, Expression, Returns};

pub(super) const FAILURE_POLICIES: &[&str] = &["Fail", "Ignore"];
pub(super) const MATCH_POLICIES: &[&str] = &["Equivalent", "Exact"];
pub(super) const REINVOCATION_POLICIES: &[&str] = &["IfNeeded", "Never"];
const OPERATIONS: &[&str] = &["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];
const SCOPES: &[&str] = &["*", "Cluster", "Namespaced"];
const MAX_MATCH_CONDITIONS: usize = 64;

/// A value of a named Go string type (`FailurePolicyType`, ...): kube prints it as JSON, not
/// with `%q` (its error printer only quotes plain `string`s).
pub(super) fn typed(s: &str) -> BadValue {
    BadValue::Raw(go_json(&Value::String(s.to_owned())))
}

/// A list of strings as kube prints a slice: JSON.
pub(super) fn list_value(list: &[&str]) -> BadValue {
    BadValue::Json(Value::Array(list.iter().map(|s| Value::String((*s).to_owned())).collect()))
}

/// `field: Unsupported value` for an enum field that is set to something else.
pub(super) fn check_enum(v: &Value, key: &str, valid: &[&str], path: &Path, errs: &mut ErrorList) {
    if let Some(s) = str_at(v, key)
        && !valid.contains(&s)
    {
        errs.push(Error::not_supported(path.child(key), typed(s), valid));
    }
}

/// The compile error of `source` (kube's detail text), if any.
pub(super) fn compile_error(source: &str, decls: &Declarations, returns: Returns) -> Option<String> {
    Expression::compile(source, decls, returns).compiled.err()
}

/// A CEL expression that does not compile, as validation.go reports it: the invalid value is
/// the expression as it was compiled (trimmed for some fields, as kube trims them).
pub(super) fn check_expression(
    source: &str,
    shown: &str,
    decls: &Declarations,
    returns: Returns,
    path: Path,
    errs: &mut ErrorList,
) {
    if let Some(detail) = compile_error(source, decls, returns) {
        errs.push(Error::invalid(path, shown, detail));
    }
}

/// `validateRuleWithOperations` (subresources allowed: v1 has no rule without them).
pub(super) fn rule_with_operations(rule: &Value, path: &Path, errs: &mut ErrorList) {
    let operations = strings(rule, "operations");
    if operations.is_empty() {
        errs.push(Error::required(path.child("operations"), ""));
    }
    if operations.len() > 1 && operations.contains(&"*") {
        errs.push(Error::invalid(
            path.child("operations"),
            list_value(&operations),
            "if '*' is present, must not specify other operations",
        ));
    }
    for (i, op) in operations.iter().enumerate() {
        if !OPERATIONS.contains(op) {
            errs.push(Error::not_supported(path.child("operations").index(i), typed(op), OPERATIONS));
        }
    }
    let groups = strings(rule, "apiGroups");
    if groups.is_empty() {
        errs.push(Error::required(path.child("apiGroups"), ""));
    }
    if groups.len() > 1 && groups.contains(&"*") {
        errs.push(Error::invalid(
            path.child("apiGroups"),
            list_value(&groups),
            "if '*' is present, must not specify other API groups",
        ));
    }
    // A group may be empty: the legacy core group.
    let versions = strings(rule, "apiVersions");
    if versions.is_empty() {
        errs.push(Error::required(path.child("apiVersions"), ""));
    }
    if versions.len() > 1 && versions.contains(&"*") {
        errs.push(Error::invalid(
            path.child("apiVersions"),
            list_value(&versions),
            "if '*' is present, must not specify other API versions",
        ));
    }
    for (i, v) in versions.iter().enumerate() {
        if v.is_empty() {
            errs.push(Error::required(path.child("apiVersions").index(i), ""));
        }
    }
    resources(&strings(rule, "resources"), &path.child("resources"), errs);
    check_enum(rule, "scope", SCOPES, path, errs);
}

/// `validateResources`: `x/*` and `*/x` exclude what they cover, `*/*` and `*` stand alone.
fn resources(resources: &[&str], path: &Path, errs: &mut ErrorList) {
    if resources.is_empty() {
        errs.push(Error::required(path.clone(), ""));
    }
    let mut with_any_subresource: BTreeSet<&str> = BTreeSet::new();
    let mut subresource_of_any: BTreeSet<&str> = BTreeSet::new();
    let mut double_wildcard = false;
    let mut single_wildcard = false;
    let mut without_subresource = false;
    for (i, &r) in resources.iter().enumerate() {
        if r.is_empty() {
            errs.push(Error::required(path.index(i), ""));
            continue;
        }
        double_wildcard |= r == "*/*";
        single_wildcard |= r == "*";
        let Some((res, sub)) = r.split_once('/') else {
            // As kube: the last resource without a subresource decides.
            without_subresource = r != "*";
            continue;
        };
        if with_any_subresource.contains(res) {
            errs.push(Error::invalid(path.index(i), r, format!("if '{res}/*' is present, must not specify {r}")));
        }
        if subresource_of_any.contains(sub) {
            errs.push(Error::invalid(path.index(i), r, format!("if '*/{sub}' is present, must not specify {r}")));
        }
        if sub == "*" {
            with_any_subresource.insert(res);
        }
        if res == "*" {
            subresource_of_any.insert(sub);
        }
    }
    if resources.len() > 1 && double_wildcard {
        errs.push(Error::invalid(
            path.clone(),
            list_value(resources),
            "if '*/*' is present, must not specify other resources",
        ));
    }
    if single_wildcard && without_subresource {
        errs.push(Error::invalid(
            path.clone(),
            list_value(resources),
            "if '*' is present, must not specify other resources without subresources",
        ));
    }
}

/// apimachinery's `ValidateLabelSelector`; `allow_invalid_values` keeps label values kube
/// accepted before 1.21 (a webhook whose old object already had them).
pub(super) fn label_selector(sel: &Value, allow_invalid_values: bool, path: &Path, errs: &mut ErrorList) {
    if let Some(Value::Object(labels)) = get(sel, "matchLabels") {
        errs.extend(names::validate_labels(names::string_entries(labels), &path.child("matchLabels")));
    }
    for (i, req) in items(sel, "matchExpressions").iter().enumerate() {
        let path = path.child("matchExpressions").index(i);
        let values = strings(req, "values");
        match string_at(req, "operator") {
            "In" | "NotIn" => {
                if values.is_empty() {
                    errs.push(Error::required(
                        path.child("values"),
                        "must be specified when `operator` is 'In' or 'NotIn'",
                    ));
                }
            }
            "Exists" | "DoesNotExist" => {
                if !values.is_empty() {
                    errs.push(Error::forbidden(
                        path.child("values"),
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    ));
                }
            }
            other => errs.push(Error::invalid(path.child("operator"), typed(other), "not a valid selector operator")),
        }
        let key = string_at(req, "key");
        for msg in names::is_qualified_name(key) {
            errs.push(Error::invalid(path.child("key"), key, msg));
        }
        if !allow_invalid_values {
            for (j, v) in values.iter().enumerate() {
                for msg in names::is_valid_label_value(v) {
                    errs.push(Error::invalid(path.child("values").index(j), *v, msg));
                }
            }
        }
    }
}

/// Whether a selector breaks the strict rules (kube then lets an update keep it).
pub(super) fn selector_is_invalid(sel: &Value) -> bool {
    let mut errs = ErrorList::new();
    label_selector(sel, false, &Path::none(), &mut errs);
    !errs.is_empty()
}

/// `validateMatchConditions`: at most 64, unique names, qualified names, boolean
/// expressions. Checked without `variables` (kube's stateless compiler), with `params` only
/// for a policy with a `paramKind`.
pub(super) fn match_conditions(list: &[Value], params: bool, path: &Path, errs: &mut ErrorList) {
    if list.len() > MAX_MATCH_CONDITIONS {
        errs.push(Error::too_many(path.clone(), i64::try_from(list.len()).ok(), MAX_MATCH_CONDITIONS as i64));
    }
    let decls = Declarations { params, authorizer: true, without_variables: true, ..Declarations::default() };
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    for (i, c) in list.iter().enumerate() {
        let path = path.index(i);
        let expression = string_at(c, "expression").trim();
        if expression.is_empty() {
            errs.push(Error::required(path.child("expression"), ""));
        } else {
            check_expression(expression, expression, &decls, Returns::Bool, path.child("expression"), errs);
        }
        let name = string_at(c, "name");
        if name.is_empty() {
            errs.push(Error::required(path.child("name"), ""));
        } else {
            for msg in names::is_qualified_name(name) {
                errs.push(Error::invalid(path.child("name"), name, msg));
            }
            if !seen.insert(name) {
                errs.push(Error::duplicate(path.child("name"), name));
            }
        }
    }
}

/// `validateMatchResources` (policies and bindings; their selectors are always strict).
pub(super) fn match_resources(mc: &Value, path: &Path, errs: &mut ErrorList) {
    match str_at(mc, "matchPolicy") {
        None => errs.push(Error::required(path.child("matchPolicy"), "")),
        Some(_) => check_enum(mc, "matchPolicy", MATCH_POLICIES, path, errs),
    }
    for key in ["namespaceSelector", "objectSelector"] {
        match get(mc, key) {
            None => errs.push(Error::required(path.child(key), "")),
            Some(sel) => label_selector(sel, false, &path.child(key), errs),
        }
    }
    for key in ["resourceRules", "excludeResourceRules"] {
        for (i, rule) in items(mc, key).iter().enumerate() {
            named_rule_with_operations(rule, &path.child(key).index(i), errs);
        }
    }
}

fn named_rule_with_operations(rule: &Value, path: &Path, errs: &mut ErrorList) {
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    for (i, name) in strings(rule, "resourceNames").into_iter().enumerate() {
        let at = path.child("resourceNames").index(i);
        for msg in names::is_valid_path_segment_name(name) {
            errs.push(Error::invalid(at.clone(), name, msg));
        }
        if !seen.insert(name) {
            errs.push(Error::duplicate(at, name));
        }
    }
    rule_with_operations(rule, path, errs);
}

/// `validateParamKind`: a group/version as an APIService names one, a kind that lowercases
/// to a DNS-1035 label.
pub(super) fn param_kind(pk: &Value, path: &Path, errs: &mut ErrorList) {
    let api_version = string_at(pk, "apiVersion");
    let at = path.child("apiVersion");
    if api_version.is_empty() {
        errs.push(Error::required(at, ""));
    } else if api_version.matches('/').count() > 1 {
        errs.push(Error::invalid(at, api_version, format!("unexpected GroupVersion string: {api_version}")));
    } else {
        let (group, version) = match api_version {
            "/" => ("", ""),
            gv => gv.split_once('/').unwrap_or(("", gv)),
        };
        if !group.is_empty() {
            let msgs = names::is_dns1123_subdomain(group);
            if !msgs.is_empty() {
                errs.push(Error::invalid(at.clone(), group, msgs.join(",")));
            }
        }
        if version.is_empty() {
            errs.push(Error::invalid(at, api_version, "version must be specified"));
        } else {
            let msgs = names::is_dns1035_label(version);
            if !msgs.is_empty() {
                errs.push(Error::invalid(at, version, msgs.join(",")));
            }
        }
    }
    let kind = string_at(pk, "kind");
    if kind.is_empty() {
        errs.push(Error::required(path.child("kind"), ""));
    } else {
        let msgs = names::is_dns1035_label(&kind.to_lowercase());
        if !msgs.is_empty() {
            errs.push(Error::invalid(
                path.child("kind"),
                kind,
                format!("may have mixed case, but should otherwise match: {}", msgs.join(",")),
            ));
        }
    }
}

/// `validateParamRef`: a name or a selector (not both), and what to do when none is found.
pub(super) fn param_ref(pr: &Value, path: &Path, errs: &mut ErrorList) {
    let name = string_at(pr, "name");
    let selector = get(pr, "selector");
    const EXCLUSIVE: &str = "name and selector are mutually exclusive";
    if !name.is_empty() {
        for msg in names::is_valid_path_segment_name(name) {
            errs.push(Error::invalid(path.child("name"), name, msg));
        }
        if selector.is_some() {
            errs.push(Error::forbidden(path.child("name"), EXCLUSIVE));
        }
    }
    if let Some(sel) = selector {
        label_selector(sel, false, &path.child("selector"), errs);
        if !name.is_empty() {
            errs.push(Error::forbidden(path.child("selector"), EXCLUSIVE));
        }
    }
    if name.is_empty() && selector.is_none() {
        errs.push(Error::required(path.clone(), "one of name or selector must be specified"));
    }
    match string_at(pr, "parameterNotFoundAction") {
        "" => errs.push(Error::required(path.child("parameterNotFoundAction"), "")),
        "Deny" | "Allow" => {}
        other => {
            errs.push(Error::not_supported(path.child("parameterNotFoundAction"), typed(other), &["Deny", "Allow"]))
        }
    }
}

/// Whether `name` is a CEL identifier that is not a reserved word (a variable's name).
pub(super) fn is_cel_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    let first_ok = chars.next().is_some_and(|c| c == '_' || c.is_ascii_alphabetic());
    first_ok && chars.all(|c| c == '_' || c.is_ascii_alphanumeric()) && !versa_cel::types::CEL_RESERVED.contains(&name)
}
