//! Static checks of `x-kubernetes-validations` rules: everything that can be judged without
//! compiling CEL (the rule is present, messages are usable, the reason is one the API can report,
//! `fieldPath` points into the schema). Compiling the rules is the CEL crate's job.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{JSONSchemaProps, ValidationRule};
use versa_schema::Structural;
use versa_schema::field::{Error, ErrorList, Path};

use crate::validation::has_newlines;
use versa_cel::field_path::valid_field_path;

/// The reasons a rule may report, sorted as upstream lists them.
const SUPPORTED_REASONS: [&str; 4] =
    ["FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"];

/// Checks the rules of the node `schema`; `path` is its `x-kubernetes-validations`.
pub(super) fn validate_rules(schema: &JSONSchemaProps, rules: &[ValidationRule], path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    // The node is lowered only if a rule names a fieldPath, and at most once.
    let mut lowered: Option<Option<Structural>> = None;
    for (i, rule) in rules.iter().enumerate() {
        let rpath = path.index(i);
        let message = rule.message.as_deref().unwrap_or_default();
        let trimmed_rule = rule.rule.trim();
        let trimmed_msg = message.trim();
        if trimmed_rule.is_empty() {
            errs.push(Error::required(rpath.child("rule"), "rule is not specified"));
        } else if !message.is_empty() && trimmed_msg.is_empty() {
            errs.push(Error::invalid(rpath.child("message"), message, "message must be non-empty if specified"));
        } else if has_newlines(trimmed_msg) {
            errs.push(Error::invalid(rpath.child("message"), message, "message must not contain line breaks"));
        } else if has_newlines(trimmed_rule) && trimmed_msg.is_empty() {
            errs.push(Error::required(
                rpath.child("message"),
                "message must be specified if rule contains line breaks",
            ));
        }

        let message_expression = rule.message_expression.as_deref().unwrap_or_default();
        if !message_expression.is_empty() && message_expression.trim().is_empty() {
            errs.push(Error::required(
                rpath.child("messageExpression"),
                "messageExpression must be non-empty if specified",
            ));
        }

        if let Some(reason) = rule.reason.as_deref().filter(|r| !SUPPORTED_REASONS.contains(r)) {
            errs.push(Error::not_supported(rpath.child("reason"), reason, &SUPPORTED_REASONS));
        }

        let field_path = rule.field_path.as_deref().unwrap_or_default();
        let fpath = rpath.child("fieldPath");
        if !field_path.is_empty() && field_path.trim().is_empty() {
            errs.push(Error::invalid(fpath.clone(), field_path, "fieldPath must be non-empty if specified"));
        }
        if has_newlines(field_path) {
            errs.push(Error::invalid(fpath.clone(), field_path, "fieldPath must not contain line breaks"));
        }
        if !field_path.is_empty() {
            let node = lowered.get_or_insert_with(|| Structural::lower(schema).ok());
            // A node that cannot be lowered is reported elsewhere; its paths are not judged.
            let valid = node.as_ref().is_none_or(|ss| valid_field_path(field_path, ss, true).is_ok());
            if !valid {
                errs.push(Error::invalid(fpath, field_path, "fieldPath must be a valid path"));
            }
        }
    }
    errs
}
