//! Compiling `x-kubernetes-validations` when a definition is written: every rule (and
//! `messageExpression`) at every node of a version's structural schema is parsed and type checked
//! by `versa-cel` against the CEL type of its node, as kube-apiserver does in
//! `ValidateCustomResourceDefinitionOpenAPISchema` with `cel.Compile`.
//!
//! What decides whether and how a node's rules are compiled, all as upstream:
//!
//! - Nothing is compiled unless the whole schema is structural and its defaults are valid (the
//!   caller passes the lowered schema only then), and a node's rules are skipped when the keyword
//!   walk reported anything at that node or below it: a broken schema gives CEL errors nobody can
//!   act on.
//! - `self` has the node's CEL type ([`DeclType::from_structural`]); at the root and at
//!   `x-kubernetes-embedded-resource` nodes it also has `apiVersion`, `kind` and
//!   `metadata.name`/`generateName`. A node with rules but no CEL type (untyped data kept by
//!   `x-kubernetes-preserve-unknown-fields`) is an internal error, as upstream.
//! - `oldSelf` may only be used where old and new values can be correlated: not below a list
//!   that is not `x-kubernetes-list-type: map`, nor below a map type other than granular/atomic.
//!   The error names the highest such ancestor.
//! - `optionalOldSelf`, when set at all (even `false`), requires a rule that uses `oldSelf`.
//! - A `messageExpression` is compiled only when its rule compiled.
//!
//! Errors come out children first, then the node's own rules in order (upstream's recursion);
//! properties in name order. Upstream prints the rule of a compile error with Go's `%#v` of its
//! internal `ValidationRule`; a set `reason` or `optionalOldSelf` is a pointer there, which Go
//! prints as a memory address — versa prints a fixed one, the only part that cannot match.
//!
//! Cost (upstream `getExpressionCost`, `CELSchemaContext`, `TotalCost`): a rule's estimated cost
//! is multiplied by how many times it can run — the product of `maxItems`/`maxProperties` of the
//! enclosing lists and maps, or, below an unbounded one, how many values of the node's type fit in
//! a request — and must stay within [`STATIC_ESTIMATED_COST_LIMIT`]. All rule costs of one
//! version's schema together must stay within [`STATIC_ESTIMATED_CRD_COST_LIMIT`]; over it, the
//! (at most four) rules costing at least 1% of that limit are named, most expensive first (ties
//! in schema order; upstream's sort is unstable).
//!
//! A `messageExpression` that compiles is estimated too: its cost is not multiplied (it runs only
//! when its rule fails), must stay within the same per-expression limit (`estimated
//! messageExpression cost exceeds budget ...` at its own path), and counts towards the schema's
//! total, where it can be one of the expressions named. As upstream, concatenating a conversion
//! (`'limit ' + string(self.max)`) is refused: cel-go knows no size for the result of
//! `string(int)`, so the concatenation's estimate is unbounded.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::ValidationRule;
use versa_cel::{
    CompileOptions, DeclType, STATIC_ESTIMATED_COST_LIMIT, STATIC_ESTIMATED_CRD_COST_LIMIT, compile_message_expression,
    compile_rule, estimate_cost, max_cardinality,
};
use versa_schema::Structural;
use versa_schema::field::{BadValue, Error, ErrorList, Path, go_json};
use versa_schema::structural::Type as SchemaType;

/// Compiles the rules of the structural schema `root`, found at `path`
/// (`spec.versions[i].schema.openAPIV3Schema`). `schema_errs` are the keyword errors already
/// reported for this schema; nodes with any of them at or below are not compiled.
pub(super) fn validate_schema_rules(root: &Structural, path: &Path, schema_errs: &ErrorList) -> ErrorList {
    let mut walk = Walk { schema_errs, errs: ErrorList::new(), total: 0, most_expensive: Vec::new() };
    walk.node(root, path, true, None, Some(1));
    if walk.total > STATIC_ESTIMATED_CRD_COST_LIMIT {
        for (at, _) in &walk.most_expensive {
            walk.errs.push(Error::forbidden(
                at.clone(),
                "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
            ));
        }
        walk.errs.push(Error::forbidden(
            path.clone(),
            cost_error_message(
                "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
                walk.total,
                STATIC_ESTIMATED_CRD_COST_LIMIT,
            ),
        ));
    }
    walk.errs
}

/// The detail of a cost error (upstream `getCostErrorMessage`): the factor by which `cost`
/// exceeds `limit`, with six decimals below 1.5, one up to 100, and `more than 100x` above.
pub(crate) fn cost_error_message(cost_name: &str, cost: u64, limit: u64) -> String {
    let factor = cost as f64 / limit as f64;
    let factor = if factor > 100.0 {
        "more than 100x".to_owned()
    } else if factor < 1.5 {
        format!("{factor:.6}x")
    } else {
        format!("{factor:.1}x")
    };
    format!(
        "{cost_name} exceeds budget by factor of {factor} (try simplifying the rule, or adding maxItems, \
         maxProperties, and maxLength where arrays, maps, and strings are declared)"
    )
}

struct Walk<'a> {
    schema_errs: &'a ErrorList,
    errs: ErrorList,
    /// The estimated cost of every expression so far.
    total: u64,
    /// The (at most four) most expensive expressions costing at least 1% of the schema limit.
    most_expensive: Vec<(Path, u64)>,
}

impl Walk<'_> {
    /// `uncorrelatable` is the highest ancestor below which `oldSelf` cannot be correlated;
    /// `cardinality` how many times the node can occur (`None`: below an unbounded list or map).
    fn node(
        &mut self,
        s: &Structural,
        path: &Path,
        is_root: bool,
        uncorrelatable: Option<&Path>,
        cardinality: Option<u64>,
    ) {
        let vv = s.value_validation.as_deref();
        // Upstream `extractMaxElements`: how many children each occurrence has.
        let bound = |max: Option<i64>| max.map(|m| m.max(0) as u64);
        let per_parent = match s.type_ {
            SchemaType::Object if s.additional_properties.is_some() => bound(vv.and_then(|v| v.max_properties)),
            SchemaType::Array => bound(vv.and_then(|v| v.max_items)),
            _ => Some(1),
        };
        let child_cardinality = cardinality.zip(per_parent).map(|(c, n)| c.saturating_mul(n));
        if let Some(ap) = s.additional_properties.as_ref().and_then(|ap| ap.schema()) {
            self.node(ap, &path.child("additionalProperties"), false, uncorrelatable, child_cardinality);
        }
        // A third map type would not be correlatable; only granular (the default) and atomic are.
        let map_correlatable = matches!(s.map_type.as_deref(), None | Some("granular" | "atomic"));
        let props_uncorrelatable = if map_correlatable { uncorrelatable } else { uncorrelatable.or(Some(path)) };
        for (name, prop) in &s.properties {
            self.node(prop, &path.child("properties").key(name), false, props_uncorrelatable, child_cardinality);
        }
        if let Some(items) = s.items.as_deref() {
            let items_uncorrelatable =
                if s.list_type.as_deref() == Some("map") { uncorrelatable } else { uncorrelatable.or(Some(path)) };
            self.node(items, &path.child("items"), false, items_uncorrelatable, child_cardinality);
        }
        if !s.validations.is_empty() && !self.has_schema_errors_at_or_below(path) {
            self.rules(s, path, is_root, uncorrelatable, cardinality);
        }
    }

    fn rules(
        &mut self,
        s: &Structural,
        path: &Path,
        is_root: bool,
        uncorrelatable: Option<&Path>,
        cardinality: Option<u64>,
    ) {
        let vpath = path.child("x-kubernetes-validations");
        let Some(decl) = DeclType::from_structural(s, is_root || s.embedded_resource) else {
            self.errs.push(Error::internal(
                vpath,
                "internal error: failed to construct type information for x-kubernetes-validations rules: \
                 unable to convert structural schema to CEL declarations",
            ));
            return;
        };
        let cardinality = cardinality.unwrap_or_else(|| max_cardinality(decl.min_serialized_size));
        for (i, rule) in s.validations.iter().enumerate() {
            let rpath = vpath.index(i);
            let opts =
                CompileOptions { optional_old_self: rule.optional_old_self == Some(true), ..CompileOptions::default() };
            let compiled = compile_rule(&rule.rule, &decl, &opts);
            // A rule that does not compile costs nothing.
            let cost = compiled.as_ref().map_or(0, |c| estimate_cost(c, &decl).max.saturating_mul(cardinality));
            if cost > STATIC_ESTIMATED_COST_LIMIT {
                self.errs.push(Error::forbidden(
                    rpath.child("rule"),
                    cost_error_message("estimated rule cost", cost, STATIC_ESTIMATED_COST_LIMIT),
                ));
            }
            self.observe(rpath.child("rule"), cost);
            let mut uses_old_self = false;
            match compiled {
                Err(e) => self.errs.push(Error::invalid(rpath.child("rule"), go_validation_rule(rule), e.to_string())),
                Ok(compiled) => {
                    uses_old_self = compiled.uses_old_self;
                    let expr = rule.message_expression.as_deref().unwrap_or_default();
                    if !expr.is_empty() {
                        let mpath = rpath.child("messageExpression");
                        match compile_message_expression(expr, &decl, &opts) {
                            Err(e) => self.errs.push(Error::invalid(mpath, go_validation_rule(rule), e.to_string())),
                            // Runs once per failure of its rule, so it is not multiplied by the
                            // cardinality; it counts towards the schema's total all the same.
                            Ok(message) => {
                                let cost = estimate_cost(&message, &decl).max;
                                if cost > STATIC_ESTIMATED_COST_LIMIT {
                                    self.errs.push(Error::forbidden(
                                        mpath.clone(),
                                        cost_error_message(
                                            "estimated messageExpression cost",
                                            cost,
                                            STATIC_ESTIMATED_COST_LIMIT,
                                        ),
                                    ));
                                }
                                self.observe(mpath, cost);
                            }
                        }
                    }
                }
            }
            if uses_old_self {
                if let Some(at) = uncorrelatable {
                    self.errs.push(Error::invalid(
                        rpath.child("rule"),
                        rule.rule.as_str(),
                        format!("oldSelf cannot be used on the uncorrelatable portion of the schema within {at}"),
                    ));
                }
            } else if let Some(set) = rule.optional_old_self {
                self.errs.push(Error::invalid(
                    rpath.child("optionalOldSelf"),
                    set,
                    "may not be set if oldSelf is not used in rule",
                ));
            }
        }
    }

    /// Adds an expression's cost (a rule's or a `messageExpression`'s) to the schema's total
    /// (upstream `TotalCost.ObserveExpressionCost`).
    fn observe(&mut self, at: Path, cost: u64) {
        self.total = self.total.saturating_add(cost);
        if cost < STATIC_ESTIMATED_CRD_COST_LIMIT / 100 {
            return;
        }
        let pos = self.most_expensive.iter().position(|(_, c)| *c < cost).unwrap_or(self.most_expensive.len());
        self.most_expensive.insert(pos, (at, cost));
        self.most_expensive.truncate(4);
    }

    /// Whether the keyword walk reported an error for `path` or a field below it.
    fn has_schema_errors_at_or_below(&self, path: &Path) -> bool {
        let p = path.as_str();
        self.schema_errs.iter().any(|e| {
            e.field.as_str().strip_prefix(p).is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
        })
    }
}

/// kube-apiserver's internal `apiextensions.ValidationRule` as 1.36 shows it with a rule's
/// compile error: the bad value's `json.Marshal` (fields in declaration order, no tags, unset
/// pointers `null`). Before 1.36 kube printed Go's `%#v` of it instead.
fn go_validation_rule(rule: &ValidationRule) -> BadValue {
    let string = |s: Option<&str>| go_json(&serde_json::Value::String(s.unwrap_or_default().to_owned()));
    let reason = rule.reason.as_deref().map_or_else(|| "null".to_owned(), |r| string(Some(r)));
    let old_self = rule.optional_old_self.map_or_else(|| "null".to_owned(), |b| b.to_string());
    BadValue::Raw(format!(
        r#"{{"Rule":{},"Message":{},"MessageExpression":{},"Reason":{reason},"FieldPath":{},"OptionalOldSelf":{old_self}}}"#,
        string(Some(&rule.rule)),
        string(rule.message.as_deref()),
        string(rule.message_expression.as_deref()),
        string(rule.field_path.as_deref()),
    ))
}
