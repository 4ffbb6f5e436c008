//! `spec.conversion`: the strategy and, for `Webhook`, the client configuration and the
//! ConversionReview versions the webhook understands; for versa's `CEL`, the rules in
//! `spec.conversion.cel`, compiled ([`crate::cel_conversion`]).

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinitionSpec;
use serde_json::Value;
use versa_schema::field::{BadValue, Error, ErrorList, Path};
use versa_schema::names::is_dns1035_label;

use super::{Options, validate_enum, webhook};
use crate::defaults::{CEL_CONVERTER, DEFAULT_SERVICE_PORT, NONE_CONVERTER, WEBHOOK_CONVERTER};
use crate::types::ResourceDefinition;

/// ConversionReview versions this server can send, sorted as upstream prints them.
const ACCEPTED_REVIEW_VERSIONS: [&str; 2] = ["v1", "v1beta1"];

/// Whether the server can speak ConversionReview version `v`.
pub(super) fn is_accepted_review_version(v: &str) -> bool {
    ACCEPTED_REVIEW_VERSIONS.contains(&v)
}

/// Validates `spec.conversion`, including the rule that ties it to `preserveUnknownFields`.
pub(super) fn validate_conversion(spec: &CustomResourceDefinitionSpec, opts: &Options, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(conversion) = &spec.conversion else { return errs };
    let strategy = conversion.strategy.as_str();
    // Webhook conversion round-trips objects through JSON, which needs pruning to be on.
    if strategy != NONE_CONVERTER && spec.preserve_unknown_fields.unwrap_or(false) {
        errs.push(Error::invalid(
            path.child("strategy"),
            strategy,
            "must be None if spec.preserveUnknownFields is true",
        ));
    }
    errs.extend(validate_enum(strategy, &[NONE_CONVERTER, WEBHOOK_CONVERTER, CEL_CONVERTER], path.child("strategy")));

    let webhook_path = path.child("webhook");
    let client_config = conversion.webhook.as_ref().and_then(|w| w.client_config.as_ref());
    let review_versions =
        conversion.webhook.as_ref().map(|w| w.conversion_review_versions.as_slice()).unwrap_or_default();
    if strategy == WEBHOOK_CONVERTER {
        let cc_path = webhook_path.child("clientConfig");
        match client_config {
            None => errs.push(Error::required(cc_path, "required when strategy is set to Webhook")),
            Some(cc) => {
                match (&cc.url, &cc.service) {
                    (Some(u), None) => errs.extend(webhook::validate_webhook_url(&cc_path.child("url"), u, true)),
                    // kube passes the name as the namespace and the reverse (see `webhook`).
                    (None, Some(s)) => errs.extend(webhook::validate_webhook_service(
                        &cc_path.child("service"),
                        &s.name,
                        &s.namespace,
                        s.path.as_deref(),
                        s.port.unwrap_or(DEFAULT_SERVICE_PORT),
                    )),
                    _ => errs.push(Error::required(cc_path.clone(), "exactly one of url or service is required")),
                }
                let bundle = cc.ca_bundle.as_ref().map(|b| b.0.as_slice()).unwrap_or_default();
                if !bundle.is_empty() && !opts.allow_invalid_ca_bundle {
                    errs.extend(webhook::validate_ca_bundle(&cc_path.child("caBundle"), bundle));
                }
            }
        }
        errs.extend(validate_review_versions(
            review_versions,
            opts.require_recognized_conversion_review_version,
            &webhook_path.child("conversionReviewVersions"),
        ));
    } else {
        if client_config.is_some() {
            errs.push(Error::forbidden(
                webhook_path.child("clientConfig"),
                "should not be set when strategy is not set to Webhook",
            ));
        }
        if !review_versions.is_empty() {
            errs.push(Error::forbidden(
                webhook_path.child("conversionReviewVersions"),
                "should not be set when strategy is not set to Webhook",
            ));
        }
    }
    errs
}

/// `spec.conversion.cel`: set exactly when the strategy is `CEL`, and its rules compile against
/// the versions' schemas.
pub(super) fn validate_cel(def: &ResourceDefinition, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let strategy = def.spec.conversion.as_ref().map_or(NONE_CONVERTER, |c| c.strategy.as_str());
    let cel_path = path.child("cel");
    match (&def.conversion_cel, strategy == CEL_CONVERTER) {
        (None, true) => errs.push(Error::required(cel_path, "required when strategy is set to CEL")),
        (Some(_), false) => {
            errs.push(Error::forbidden(cel_path, "should not be set when strategy is not set to CEL"));
        }
        (Some(cel), true) => {
            let versions: Vec<String> = def.spec.versions.iter().map(|v| v.name.clone()).collect();
            let schemas = crate::cel_conversion::lower_schemas(def);
            errs.extend(crate::cel_conversion::compile(cel, &versions, &schemas, &cel_path).1);
        }
        (None, false) => {}
    }
    errs
}

/// Required, unique, DNS-1035 labels, and (unless ratcheted) including one the server speaks.
fn validate_review_versions(versions: &[String], require_recognized: bool, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    if versions.is_empty() {
        errs.push(Error::required(path.clone(), ""));
        return errs;
    }
    let mut seen = std::collections::HashSet::new();
    let mut has_accepted = false;
    for (i, v) in versions.iter().enumerate() {
        if !seen.insert(v.as_str()) {
            errs.push(Error::invalid(path.index(i), v.as_str(), "duplicate version"));
            continue;
        }
        for msg in is_dns1035_label(v) {
            errs.push(Error::invalid(path.index(i), v.as_str(), msg));
        }
        has_accepted |= is_accepted_review_version(v);
    }
    if require_recognized && !has_accepted {
        errs.push(Error::invalid(
            path.clone(),
            BadValue::Json(Value::from(versions.to_vec())),
            format!("must include at least one of {}", ACCEPTED_REVIEW_VERSIONS.join(", ")),
        ));
    }
    errs
}
