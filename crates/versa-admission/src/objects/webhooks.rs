//! ValidatingWebhookConfiguration and MutatingWebhookConfiguration, as validation.go checks
//! them: each webhook's name, rules, policies, side effects, timeout, selectors, client
//! configuration and match conditions, then its AdmissionReview versions and the uniqueness
//! of its name. An update is checked with [`Options::update`]: what the old object already
//! had (side effects, unrecognized review versions, duplicate names, loose selector values,
//! unchanged match conditions) is let through, as kube lets it.

use std::collections::BTreeSet;

use serde_json::Value;
use versa_schema::field::{Error, ErrorList, Path};
use versa_schema::names;

use super::common::{
    FAILURE_POLICIES, MATCH_POLICIES, REINVOCATION_POLICIES, check_enum, label_selector, list_value, match_conditions,
    rule_with_operations, selector_is_invalid, typed,
};
use super::{ObjectKind, get, items, str_at, string_at, strings};
use versa_apiextensions::validation::webhook;

const NO_SIDE_EFFECTS: &[&str] = &["None", "NoneOnDryRun"];
const SIDE_EFFECTS: &[&str] = &["None", "NoneOnDryRun", "Some", "Unknown"];
/// The AdmissionReview versions kube's previous release understands.
const REVIEW_VERSIONS: &[&str] = &["v1", "v1beta1"];

/// validation.go's `validationOptions` for webhook configurations.
#[derive(Clone, Copy, Debug)]
pub(super) struct Options {
    ignore_match_conditions: bool,
    require_no_side_effects: bool,
    require_recognized_review_version: bool,
    require_unique_names: bool,
    allow_invalid_label_value_in_selector: bool,
}

impl Options {
    /// A create: everything checked.
    pub fn create() -> Options {
        Options {
            ignore_match_conditions: false,
            require_no_side_effects: true,
            require_recognized_review_version: true,
            require_unique_names: true,
            allow_invalid_label_value_in_selector: false,
        }
    }

    /// An update of `old` to `new`: a rule the old object already broke is not enforced.
    pub fn update(new: &Value, old: &Value) -> Options {
        let old_hooks = items(old, "webhooks");
        let new_hooks = items(new, "webhooks");
        // reflect.DeepEqual: an empty list and no list differ.
        let unchanged_conditions = old_hooks.len() == new_hooks.len()
            && old_hooks.iter().zip(new_hooks).all(|(o, n)| get(o, "matchConditions") == get(n, "matchConditions"));
        let mut names = BTreeSet::new();
        Options {
            ignore_match_conditions: unchanged_conditions,
            require_no_side_effects: old_hooks
                .iter()
                .all(|h| str_at(h, "sideEffects").is_some_and(|s| NO_SIDE_EFFECTS.contains(&s))),
            require_recognized_review_version: old_hooks.iter().all(|h| {
                let versions = strings(h, "admissionReviewVersions");
                versions.is_empty() || versions.iter().any(|v| REVIEW_VERSIONS.contains(v))
            }),
            require_unique_names: old_hooks.iter().all(|h| names.insert(string_at(h, "name"))),
            allow_invalid_label_value_in_selector: old_hooks.iter().any(|h| {
                ["namespaceSelector", "objectSelector"].iter().any(|k| get(h, k).is_some_and(selector_is_invalid))
            }),
        }
    }
}

/// Validates a webhook configuration of `kind`.
pub(super) fn validate(kind: ObjectKind, obj: &Value, opts: &Options, errs: &mut ErrorList) {
    let mutating = kind == ObjectKind::MutatingWebhookConfiguration;
    let mut seen = BTreeSet::new();
    for (i, hook) in items(obj, "webhooks").iter().enumerate() {
        let path = Path::new("webhooks").index(i);
        webhook(hook, mutating, opts, &path, errs);
        review_versions(
            &strings(hook, "admissionReviewVersions"),
            opts.require_recognized_review_version,
            &path.child("admissionReviewVersions"),
            errs,
        );
        let name = string_at(hook, "name");
        if opts.require_unique_names && !name.is_empty() && !seen.insert(name) {
            errs.push(Error::duplicate(path.child("name"), name));
        }
    }
}

fn webhook(hook: &Value, mutating: bool, opts: &Options, path: &Path, errs: &mut ErrorList) {
    fully_qualified_name(string_at(hook, "name"), &path.child("name"), errs);
    for (i, rule) in items(hook, "rules").iter().enumerate() {
        rule_with_operations(rule, &path.child("rules").index(i), errs);
    }
    check_enum(hook, "failurePolicy", FAILURE_POLICIES, path, errs);
    check_enum(hook, "matchPolicy", MATCH_POLICIES, path, errs);
    let allowed = if opts.require_no_side_effects { NO_SIDE_EFFECTS } else { SIDE_EFFECTS };
    match str_at(hook, "sideEffects") {
        None => {
            errs.push(Error::required(path.child("sideEffects"), format!("must specify one of {}", allowed.join(", "))))
        }
        Some(s) if !allowed.contains(&s) => {
            errs.push(Error::not_supported(path.child("sideEffects"), typed(s), allowed));
        }
        Some(_) => {}
    }
    if let Some(t) = hook.get("timeoutSeconds").and_then(Value::as_i64)
        && !(1..=30).contains(&t)
    {
        errs.push(Error::invalid(
            path.child("timeoutSeconds"),
            t,
            "the timeout value must be between 1 and 30 seconds",
        ));
    }
    for key in ["namespaceSelector", "objectSelector"] {
        if let Some(sel) = get(hook, key) {
            label_selector(sel, opts.allow_invalid_label_value_in_selector, &path.child(key), errs);
        }
    }
    if mutating {
        check_enum(hook, "reinvocationPolicy", REINVOCATION_POLICIES, path, errs);
    }
    client_config(get(hook, "clientConfig"), &path.child("clientConfig"), errs);
    if !opts.ignore_match_conditions {
        match_conditions(items(hook, "matchConditions"), false, &path.child("matchConditions"), errs);
    }
}

/// apimachinery's `IsFullyQualifiedName`: a DNS subdomain of at least three labels.
fn fully_qualified_name(name: &str, path: &Path, errs: &mut ErrorList) {
    if name.is_empty() {
        errs.push(Error::required(path.clone(), ""));
        return;
    }
    let msgs = names::is_dns1123_subdomain(name);
    if !msgs.is_empty() {
        errs.push(Error::invalid(path.clone(), name, msgs.join(",")));
    } else if name.split('.').count() < 3 {
        errs.push(Error::invalid(
            path.clone(),
            name,
            "should be a domain with at least three segments separated by dots",
        ));
    }
}

fn review_versions(versions: &[&str], require_recognized: bool, path: &Path, errs: &mut ErrorList) {
    if versions.is_empty() {
        errs.push(Error::required(path.clone(), format!("must specify one of {}", REVIEW_VERSIONS.join(", "))));
        return;
    }
    let mut seen = BTreeSet::new();
    let mut recognized = false;
    for (i, &v) in versions.iter().enumerate() {
        if !seen.insert(v) {
            errs.push(Error::invalid(path.index(i), v, "duplicate version"));
            continue;
        }
        for msg in names::is_dns1035_label(v) {
            errs.push(Error::invalid(path.index(i), v, msg));
        }
        recognized |= REVIEW_VERSIONS.contains(&v);
    }
    if require_recognized && !recognized {
        errs.push(Error::invalid(
            path.clone(),
            list_value(versions),
            format!("must include at least one of {}", REVIEW_VERSIONS.join(", ")),
        ));
    }
}

/// Exactly one of `url` (https, with a host, no user, query or fragment) and `service`.
fn client_config(cc: Option<&Value>, path: &Path, errs: &mut ErrorList) {
    let url = cc.and_then(|c| str_at(c, "url"));
    let service = cc.and_then(|c| get(c, "service"));
    match (url, service) {
        (Some(u), None) => errs.extend(webhook::validate_webhook_url(&path.child("url"), u, true)),
        // validation.go passes the service's name where apiserver's validator takes the
        // namespace and the reverse: kube's answer, kept (`webhook` says more).
        (None, Some(s)) => errs.extend(webhook::validate_webhook_service(
            &path.child("service"),
            string_at(s, "name"),
            string_at(s, "namespace"),
            str_at(s, "path"),
            s.get("port").and_then(Value::as_i64).and_then(|p| i32::try_from(p).ok()).unwrap_or(0),
        )),
        _ => errs.push(Error::required(path.clone(), "exactly one of url or service is required")),
    }
}
