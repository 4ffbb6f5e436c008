//! Type checking of a ValidatingAdmissionPolicy against the schemas of the kinds it matches:
//! kube's `TypeChecker`, which writes the result as warnings to `status.typeChecking`.
//!
//! The kinds are those of the `matchConstraints.resourceRules` with no wildcard in their groups
//! and versions (resources with `*` or a subresource are skipped), at most 10, sorted. Each
//! validation's `expression` and `messageExpression` is compiled once per kind with `object`
//! and `oldObject` typed by that kind's schema (and `params` by the parameter kind's, when it
//! has one); each compile error is a warning line `<group>/<version>, Kind=<kind>: <error>`.
//! Nothing here changes what the policy does at admission time, where objects are `dyn`.

use std::collections::BTreeSet;
use std::sync::Arc;

use k8s_openapi::api::admissionregistration::v1::{ExpressionWarning, TypeChecking, ValidatingAdmissionPolicy};
use versa_cel::DeclType;
use versa_schema::Structural;

use crate::attributes::{GroupVersionKind, GroupVersionResource};
use crate::expression::{Declarations, Expression, Returns, Variables};

/// kube checks at most this many kinds per policy.
const MAX_TYPES_TO_CHECK: usize = 10;

/// What the server knows about served kinds (kube's REST mapper and schema resolver).
pub trait SchemaResolver {
    /// The kinds of `resource` (kube's `RESTMapper.KindsFor`), none when it is not served.
    fn kinds_for(&self, resource: &GroupVersionResource) -> Vec<GroupVersionKind>;
    /// The structural schema of `kind`, `None` when there is none.
    fn schema(&self, kind: &GroupVersionKind) -> Option<Arc<Structural>>;
}

/// The `status.typeChecking` of `policy`: `None` when there is nothing to warn about.
pub fn type_checking(policy: &ValidatingAdmissionPolicy, resolver: &dyn SchemaResolver) -> Option<TypeChecking> {
    let spec = policy.spec.as_ref()?;
    let kinds: Vec<(GroupVersionKind, DeclType)> = kinds_to_check(policy, resolver)
        .into_iter()
        .filter_map(|gvk| {
            let schema = resolver.schema(&gvk)?;
            let decl = DeclType::from_structural_named(&schema, true, &gvk.kind)?;
            Some((gvk, decl))
        })
        .collect();
    let params_type = spec.param_kind.as_ref().and_then(|k| {
        let api_version = k.api_version.as_deref().unwrap_or("");
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let gvk = GroupVersionKind::new(group, version, k.kind.as_deref().unwrap_or(""));
        let schema = resolver.schema(&gvk)?;
        DeclType::from_structural_named(&schema, true, &gvk.kind).map(|d| d.cel_type())
    });
    let vars: Vec<(String, String)> =
        spec.variables.iter().flatten().map(|v| (v.name.clone(), v.expression.clone())).collect();
    let check = |source: &str| -> String {
        let mut lines = Vec::new();
        for (gvk, decl) in &kinds {
            let base = Declarations {
                params: spec.param_kind.is_some(),
                object_type: Some(decl.cel_type()),
                params_type: params_type.clone(),
                authorizer: true,
                ..Declarations::default()
            };
            let variables = Variables::compile_in(&vars, &base);
            let decls = Declarations { variables: variables.ty.clone(), ..base };
            if let Err(e) = Expression::compile(source, &decls, Returns::Any).compiled {
                lines.push(format!("{gvk}: {e}\n"));
            }
        }
        lines.join("\n")
    };
    let mut warnings = Vec::new();
    for (i, v) in spec.validations.iter().flatten().enumerate() {
        let w = check(&v.expression);
        if !w.is_empty() {
            warnings.push(ExpressionWarning { field_ref: format!("spec.validations[{i}].expression"), warning: w });
        }
        if let Some(m) = v.message_expression.as_deref().filter(|m| !m.is_empty()) {
            let w = check(m);
            if !w.is_empty() {
                warnings.push(ExpressionWarning {
                    field_ref: format!("spec.validations[{i}].messageExpression"),
                    warning: w,
                });
            }
        }
    }
    (!warnings.is_empty()).then_some(TypeChecking { expression_warnings: Some(warnings) })
}

/// kube's `typesToCheck`.
fn kinds_to_check(policy: &ValidatingAdmissionPolicy, resolver: &dyn SchemaResolver) -> Vec<GroupVersionKind> {
    let Some(rules) =
        policy.spec.as_ref().and_then(|s| s.match_constraints.as_ref()).and_then(|m| m.resource_rules.as_ref())
    else {
        return Vec::new();
    };
    let mut kinds = BTreeSet::new();
    let mut count = 0;
    for rule in rules {
        let plain = |l: &Option<Vec<String>>| -> Option<Vec<String>> {
            let l = l.as_deref().unwrap_or_default();
            if l.iter().any(|s| s.contains('*')) {
                return None;
            }
            let mut v = l.to_vec();
            v.sort();
            Some(v)
        };
        let (Some(groups), Some(versions)) = (plain(&rule.api_groups), plain(&rule.api_versions)) else { continue };
        let mut resources: Vec<String> =
            rule.resources.iter().flatten().filter(|r| !r.contains(['*', '/'])).cloned().collect();
        resources.sort();
        for g in &groups {
            for v in &versions {
                for r in &resources {
                    for k in resolver.kinds_for(&GroupVersionResource::new(g, v, r)) {
                        if k.is_empty() {
                            continue;
                        }
                        kinds.insert(k);
                        count += 1;
                        if count == MAX_TYPES_TO_CHECK {
                            return kinds.into_iter().collect();
                        }
                    }
                }
            }
        }
    }
    kinds.into_iter().collect()
}
