//! Reading an audit policy file as kube does ([`Policy::load`], [`Policy::parse`]):
//! `audit.k8s.io/v1` `Policy` only, unknown and duplicate fields a warning (kube's strict
//! decoding falls back to lenient), `null` read as Go's zero value, then kube's
//! `ValidatePolicy` with its field-error texts, and at least one rule. The result is the
//! validated [`Policy`] of `policy`.

use std::path::Path;

use serde::Deserialize;
use serde_json::{Value, json};
use versa_schema::{Error as FieldError, ErrorList, Path as FieldPath};

use super::error::{Error, PolicyError, Result};
use super::policy::{GroupResources, Level, Policy, PolicyRule, Stage, Stages};

/// The policy file as written (levels and stages still text: kube validates them after
/// decoding, with field errors).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PolicyDoc {
    #[serde(default)]
    rules: Vec<RuleDoc>,
    #[serde(default)]
    omit_stages: Vec<String>,
    #[serde(default)]
    omit_managed_fields: bool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RuleDoc {
    #[serde(default)]
    level: String,
    #[serde(default)]
    users: Vec<String>,
    #[serde(default)]
    user_groups: Vec<String>,
    #[serde(default)]
    verbs: Vec<String>,
    #[serde(default)]
    resources: Vec<GroupResources>,
    #[serde(default)]
    namespaces: Vec<String>,
    #[serde(default, rename = "nonResourceURLs")]
    non_resource_urls: Vec<String>,
    #[serde(default)]
    omit_stages: Vec<String>,
    #[serde(default)]
    omit_managed_fields: Option<bool>,
}

const POLICY_FIELDS: &[&str] = &["apiVersion", "kind", "metadata", "rules", "omitStages", "omitManagedFields"];
const RULE_FIELDS: &[&str] = &[
    "level",
    "users",
    "userGroups",
    "verbs",
    "resources",
    "namespaces",
    "nonResourceURLs",
    "omitStages",
    "omitManagedFields",
];
const GROUP_RESOURCES_FIELDS: &[&str] = &["group", "resources", "resourceNames"];

impl Policy {
    /// Reads and validates a policy file; the warnings are kube's lenient-decoding ones
    /// (unknown or duplicate fields), for the caller to log.
    pub fn load(path: &Path) -> Result<(Policy, Vec<String>)> {
        let text = std::fs::read(path).map_err(|source| Error::ReadPolicy { path: path.to_owned(), source })?;
        Policy::parse(&text).map_err(|source| Error::Policy { path: path.to_owned(), source })
    }

    /// Parses and validates a policy (YAML or JSON); the error is the whole message.
    pub fn parse(text: &[u8]) -> std::result::Result<(Policy, Vec<String>), PolicyError> {
        let decoded = crate::codec::decode(text, crate::codec::Format::Yaml)
            .map_err(|s| PolicyError::Decode { reason: s.message })?;
        let mut warnings: Vec<String> = decoded.duplicates.iter().map(|d| format!("duplicate field {d:?}")).collect();
        let mut doc = decoded.value;
        let Some(map) = doc.as_object() else {
            return Err(PolicyError::Decode { reason: "the policy is not an object".into() });
        };
        let api_version = map.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        let kind = map.get("kind").and_then(Value::as_str).unwrap_or("");
        if api_version != "audit.k8s.io/v1" || kind != "Policy" {
            return Err(PolicyError::WrongKind { api_version: api_version.to_owned(), kind: kind.to_owned() });
        }
        unknown_fields(&doc, &mut warnings);
        drop_nulls(&mut doc);
        let doc: PolicyDoc = serde_json::from_value(doc).map_err(|e| PolicyError::Decode { reason: e.to_string() })?;
        let errs = validate(&doc);
        if !errs.is_empty() {
            return Err(PolicyError::Invalid(errs));
        }
        if doc.rules.is_empty() {
            return Err(PolicyError::NoRules);
        }
        let stages = |names: &[String]| Stages::of(&names.iter().filter_map(|s| Stage::parse(s)).collect::<Vec<_>>());
        let omit_stages = stages(&doc.omit_stages);
        let rules = doc
            .rules
            .into_iter()
            .map(|r| PolicyRule {
                level: Level::parse(&r.level),
                omit_stages: stages(&r.omit_stages).union(omit_stages),
                users: r.users,
                user_groups: r.user_groups,
                verbs: r.verbs,
                resources: r.resources,
                namespaces: r.namespaces,
                non_resource_urls: r.non_resource_urls,
                omit_managed_fields: r.omit_managed_fields,
            })
            .collect();
        Ok((Policy { rules, omit_stages, omit_managed_fields: doc.omit_managed_fields }, warnings))
    }
}

/// kube's `ValidatePolicy`, with its paths and texts (including its `resources.group` path,
/// which names no index).
fn validate(doc: &PolicyDoc) -> ErrorList {
    let mut errs = ErrorList::new();
    validate_stages(&doc.omit_stages, &FieldPath::new("omitStages"), &mut errs);
    for (i, rule) in doc.rules.iter().enumerate() {
        let path = FieldPath::new("rules").index(i);
        match rule.level.as_str() {
            "" => errs.push(FieldError::required(path.child("level"), "")),
            level if Level::parse(level).is_none() => {
                let valid: Vec<&str> = Level::ALL.iter().map(|l| l.as_str()).collect();
                errs.push(FieldError::not_supported(path.child("level"), level, &valid));
            }
            _ => {}
        }
        let urls = path.child("nonResourceURLs");
        for (j, url) in rule.non_resource_urls.iter().enumerate() {
            if url == "*" {
                continue;
            }
            if !url.starts_with('/') {
                errs.push(FieldError::invalid(
                    urls.index(j),
                    url.as_str(),
                    "non-resource URL rules must begin with a '/' character",
                ));
            }
            if url.len() > 1 && url[..url.len() - 1].contains('*') {
                errs.push(FieldError::invalid(
                    urls.index(j),
                    url.as_str(),
                    "non-resource URL wildcards '*' must be the final character of the rule",
                ));
            }
        }
        let resources = path.child("resources");
        for gr in &rule.resources {
            if !gr.group.is_empty() && gr.group != "*" {
                let msgs = versa_schema::names::is_dns1123_subdomain(&gr.group);
                if !msgs.is_empty() {
                    errs.push(FieldError::invalid(resources.child("group"), gr.group.as_str(), msgs.join(",")));
                }
            }
            if !gr.resource_names.is_empty() && gr.resources.is_empty() {
                errs.push(FieldError::invalid(
                    resources.child("resourceNames"),
                    json!(gr.resource_names),
                    "using resourceNames requires at least one resource",
                ));
            }
        }
        validate_stages(&rule.omit_stages, &path.child("omitStages"), &mut errs);
        if !rule.non_resource_urls.is_empty() && (!rule.resources.is_empty() || !rule.namespaces.is_empty()) {
            errs.push(FieldError::invalid(
                urls,
                json!(rule.non_resource_urls),
                "rules cannot apply to both regular resources and non-resource URLs",
            ));
        }
    }
    errs
}

fn validate_stages(stages: &[String], path: &FieldPath, errs: &mut ErrorList) {
    let allowed: Vec<&str> = Stage::ALL.iter().map(|s| s.as_str()).collect();
    for (i, stage) in stages.iter().enumerate() {
        if Stage::parse(stage).is_none() {
            errs.push(FieldError::invalid(
                path.index(i),
                stage.as_str(),
                format!("allowed stages are {}", allowed.join(",")),
            ));
        }
    }
}

/// Fields the policy types do not have (kube's strict decoder names them, then decodes
/// leniently and logs a warning).
fn unknown_fields(doc: &Value, warnings: &mut Vec<String>) {
    let mut check = |value: &Value, known: &[&str], at: &str| {
        if let Some(map) = value.as_object() {
            for key in map.keys().filter(|k| !known.contains(&k.as_str())) {
                let path = if at.is_empty() { key.clone() } else { format!("{at}.{key}") };
                warnings.push(format!("unknown field {path:?}"));
            }
        }
    };
    check(doc, POLICY_FIELDS, "");
    for (i, rule) in doc.get("rules").and_then(Value::as_array).into_iter().flatten().enumerate() {
        check(rule, RULE_FIELDS, &format!("rules[{i}]"));
        for (j, gr) in rule.get("resources").and_then(Value::as_array).into_iter().flatten().enumerate() {
            check(gr, GROUP_RESOURCES_FIELDS, &format!("rules[{i}].resources[{j}]"));
        }
    }
}

/// `null` decodes to Go's zero value: drop such keys so serde's defaults apply.
fn drop_nulls(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(drop_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_nulls),
        _ => {}
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]
mod tests {
    use super::*;

    /// A bad policy is refused at start with kube's messages.
    #[test]
    fn bad_policies() {
        let cases: &[(&str, &str)] = &[
            ("kind: Policy\nrules: [{level: Metadata}]", "must be apiVersion audit.k8s.io/v1, kind Policy"),
            (
                "apiVersion: audit.k8s.io/v1beta1\nkind: Policy\nrules: [{level: Metadata}]",
                "apiVersion \"audit.k8s.io/v1beta1\", kind \"Policy\": an audit policy must be",
            ),
            ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: []", "loaded illegal policy with 0 rules"),
            ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: {level: Metadata}", "failed decoding"),
            ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{}]", "rules[0].level: Required value"),
            (
                "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: Everything}]",
                "rules[0].level: Unsupported value: \"Everything\": supported values: \"None\", \"Metadata\", \"Request\", \"RequestResponse\"",
            ),
            (
                "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [Done]\nrules: [{level: None}]",
                "omitStages[0]: Invalid value: \"Done\": allowed stages are RequestReceived,ResponseStarted,ResponseComplete,Panic",
            ),
            (
                "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: None, nonResourceURLs: [version, '/a*b']}]",
                "[rules[0].nonResourceURLs[0]: Invalid value: \"version\": non-resource URL rules must begin with a '/' character, rules[0].nonResourceURLs[1]: Invalid value: \"/a*b\": non-resource URL wildcards '*' must be the final character of the rule]",
            ),
            (
                "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: None, nonResourceURLs: [/x], namespaces: [a]}]",
                "rules[0].nonResourceURLs: Invalid value: [\"/x\"]: rules cannot apply to both regular resources and non-resource URLs",
            ),
            (
                "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: None, resources: [{group: Bad_Group}]}]",
                "rules[0].resources.group: Invalid value: \"Bad_Group\": a lowercase RFC 1123 subdomain",
            ),
            (
                "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: None, resources: [{group: apps/v1}]}]",
                "rules[0].resources.group: Invalid value: \"apps/v1\"",
            ),
            (
                "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: None, resources: [{resourceNames: [x]}]}]",
                "rules[0].resources.resourceNames: Invalid value: [\"x\"]: using resourceNames requires at least one resource",
            ),
        ];
        for (text, want) in cases {
            let err = Policy::parse(text.as_bytes()).unwrap_err().to_string();
            assert!(err.contains(want), "{text}\n  got: {err}\n want: {want}");
        }
    }

    #[test]
    fn unknown_fields_warn_and_nulls_are_empty() {
        let text = "apiVersion: audit.k8s.io/v1\nkind: Policy\nmetadata: {name: p}\nlevel: Metadata\n\
                    rules:\n- level: Metadata\n  users: ~\n  resource: [pods]\n  resources: [{group: '', resource: [x]}]\n";
        let (p, warnings) = Policy::parse(text.as_bytes()).unwrap();
        assert_eq!(
            warnings,
            [
                "unknown field \"level\"",
                "unknown field \"rules[0].resource\"",
                "unknown field \"rules[0].resources[0].resource\""
            ]
        );
        assert_eq!(p.rules[0].users, Vec::<String>::new());
        // JSON is YAML too.
        let json = r#"{"apiVersion":"audit.k8s.io/v1","kind":"Policy","rules":[{"level":"RequestResponse"}]}"#;
        assert_eq!(Policy::parse(json.as_bytes()).unwrap().0.rules[0].level, Some(Level::RequestResponse));
    }
}
