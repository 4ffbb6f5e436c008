//! The walk of one value against a schema node: kube-openapi's validator chain for each node —
//! type, junctors, string, format, number, array, enum, object — with its children in
//! between, and kube-openapi's `MatchCount`, which decides whose errors `anyOf` and `oneOf`
//! report.

use serde_json::Value;

use super::go::{Kind, Numeric, kind};
use super::keywords::Keywords;
use super::node::{Additional, Node, Types};
use crate::field::{At, Error, go_quote};
use crate::structural::{ValueValidation, with_props};

/// One validation's walk; its keyword checks report under their root path.
pub(super) struct Walker<'p> {
    pub(super) keywords: Keywords<'p>,
}

impl Walker<'_> {
    /// Validates `v` against `node` and returns kube-openapi's `MatchCount` for it.
    ///
    /// The count mirrors `SchemaValidator.Validate`: one per validator that applies, plus what
    /// each returns (the type validator 1 when it passes; the junctor validator 1 plus the
    /// counts of the branches it keeps; the number validator 1; the array validator 1 plus its
    /// items; the object validator the sum of its children unless it stopped at a property
    /// count), plus one at the end. A `null` only meets the type and enum checks.
    pub(super) fn value<N: Node>(&self, node: &N, v: &Value, frame: &At<'_>, out: &mut Vec<Error>) -> usize {
        let k = kind(v);
        if let Kind::Null = k {
            let types = Types::of(node);
            let mut count = 0;
            if !types.is_empty() && !types.contains_null() && !node.nullable() {
                self.keywords.type_error(out, &frame.openapi_name(), types.joined(), "null");
            } else {
                count += 1;
            }
            if let Some(vv) = node.vv() {
                self.keywords.check_enum(vv, v, frame, out);
            }
            return count;
        }
        let (mut count, descend) = self.before_children(node, v, k, frame, out);
        if descend {
            count += self.children(node, k, frame, out);
        }
        count + self.after_children(node, v, k, descend, frame, out)
    }

    /// The checks of [`Walker::value`] on a value that is not `null` that come before the errors
    /// of its items or properties: type, junctors, string, format and number, and for an object
    /// `enum` and the object validator's own checks. Returns the count so far and whether the
    /// children are validated at all (not after a property count violation).
    pub(super) fn before_children<N: Node>(
        &self,
        node: &N,
        v: &Value,
        k: Kind<'_>,
        frame: &At<'_>,
        out: &mut Vec<Error>,
    ) -> (usize, bool) {
        let types = Types::of(node);
        // Lowering leaves `None` for a node without value validations, so no emptiness check
        // is needed here; an empty set inside a junctor only costs a few no-op tests.
        let vv = node.vv();
        let format = vv.map_or("", ValueValidation::effective_format);
        let mut count = 0;

        // Type (applies when a type or a format is declared).
        if !types.is_empty() || !format.is_empty() {
            count += 1;
            if self.keywords.check_type(types, format, k, frame, out) {
                count += 1;
            }
        }

        // allOf/anyOf/oneOf/not (always applies; counts itself once more, and once for the
        // validator's own result).
        count += 1 + match vv {
            Some(vv) if vv.has_junctors() => self.junctors(vv, v, frame, out),
            _ => 1,
        };

        match k {
            Kind::Str(s) => {
                count += 1;
                if let Some(vv) = vv {
                    self.keywords.check_string(vv, s, frame, out);
                    if let Some(f) = vv.format_kind {
                        count += 1;
                        if !f.matches(s) {
                            self.keywords.type_error(out, &frame.openapi_name(), &vv.format, s);
                        }
                    }
                }
            }
            Kind::Int(_) | Kind::Float(_) => {
                count += 2;
                match vv {
                    Some(vv) => self.keywords.check_number(Numeric::of(node), vv, k, frame, out),
                    None => self.keywords.check_range(Numeric::of(node), k, frame, out),
                }
            }
            Kind::Array(_) => count += 2,
            Kind::Object(map) => {
                // Enum (always applies), then the object validator.
                count += 2;
                if let Some(vv) = vv {
                    if !vv.enum_.is_empty() {
                        self.keywords.check_enum(vv, v, frame, out);
                    }
                    if !self.keywords.check_property_count(vv, map, frame, out) {
                        return (count, false);
                    }
                }
                if let Additional::Forbidden = node.additional() {
                    self.keywords.check_forbidden_properties(node, map, frame, out);
                }
            }
            Kind::Null | Kind::Bool => {}
        }
        (count, true)
    }

    /// The items of an array, or the properties of an object (those of `additionalProperties`
    /// first, then the declared ones, each in key order); returns the sum of their counts.
    pub(super) fn children<N: Node>(&self, node: &N, k: Kind<'_>, frame: &At<'_>, out: &mut Vec<Error>) -> usize {
        let mut count = 0;
        match k {
            Kind::Array(items) => {
                if let Some(item_schema) = node.items() {
                    for (i, item) in items.iter().enumerate() {
                        count += self.value(item_schema, item, &frame.index(i), out);
                    }
                }
            }
            Kind::Object(map) => {
                let props = node.properties();
                if let Additional::Schema(ap) = node.additional() {
                    for (key, val, prop) in with_props(props, map.iter()) {
                        if prop.is_none() {
                            count += self.value(ap, val, &frame.extra(key), out);
                        }
                    }
                }
                // Declared properties present in the value, in key order (one merge of two
                // sorted maps).
                if !props.is_empty() {
                    for (name, val, prop) in with_props(props, map.iter()) {
                        if let Some(schema) = prop {
                            count += self.value(schema, val, &frame.prop(name), out);
                        }
                    }
                }
            }
            _ => {}
        }
        count
    }

    /// The checks of [`Walker::value`] that come after the errors of the children: an array's
    /// item counts and uniqueness and its `enum`, an object's `required` (unless the object
    /// validator stopped before the children, `descended` false), a scalar's `enum`. Returns
    /// their count, with the final one.
    pub(super) fn after_children<N: Node>(
        &self,
        node: &N,
        v: &Value,
        k: Kind<'_>,
        descended: bool,
        frame: &At<'_>,
        out: &mut Vec<Error>,
    ) -> usize {
        let vv = node.vv();
        match k {
            Kind::Object(map) => {
                if descended && let Some(vv) = vv {
                    for req in &vv.required {
                        if !map.contains_key(req) {
                            self.keywords.missing(req, frame, out);
                        }
                    }
                }
                1
            }
            _ => {
                if let Some(vv) = vv {
                    if let Kind::Array(items) = k {
                        self.keywords.check_array(vv, items, frame, out);
                    }
                    if !vv.enum_.is_empty() {
                        self.keywords.check_enum(vv, v, frame, out);
                    }
                }
                2
            }
        }
    }

    /// `allOf`, `anyOf`, `oneOf`, `not` (kube-openapi `schemaPropsValidator`). Returns the
    /// validator's own `MatchCount`.
    pub(super) fn junctors(&self, vv: &ValueValidation, v: &Value, frame: &At<'_>, out: &mut Vec<Error>) -> usize {
        let mut count = 0;

        if !vv.any_of.is_empty() {
            // The first passing branch wins; otherwise the failing branch with the highest
            // count (the first among equals) explains the failure.
            let mut best: Option<(Vec<Error>, usize)> = None;
            let mut success = None;
            for branch in &vv.any_of {
                let mut errs = Vec::new();
                let c = self.value(branch, v, frame, &mut errs);
                if errs.is_empty() {
                    success = Some(c);
                    break;
                }
                if best.as_ref().is_none_or(|(_, bc)| c > *bc) {
                    best = Some((errs, c));
                }
            }
            match success {
                Some(c) => count += c,
                None => {
                    self.keywords.composite(
                        out,
                        format!("{} must validate at least one schema (anyOf)", go_quote(&frame.openapi_name())),
                    );
                    if let Some((errs, c)) = best {
                        out.extend(errs);
                        count += c;
                    }
                }
            }
        }

        if !vv.one_of.is_empty() {
            let mut best: Option<(Vec<Error>, usize)> = None;
            let mut first_success = None;
            let mut validated = 0usize;
            for branch in &vv.one_of {
                let mut errs = Vec::new();
                let c = self.value(branch, v, frame, &mut errs);
                if errs.is_empty() {
                    validated += 1;
                    best = None;
                    first_success.get_or_insert(c);
                    continue;
                }
                if validated == 0 && best.as_ref().is_none_or(|(_, bc)| c > *bc) {
                    best = Some((errs, c));
                }
            }
            if validated == 1 {
                count += first_success.unwrap_or(0);
            } else {
                let extra = if validated == 0 {
                    "Found none valid".to_owned()
                } else {
                    format!("Found {validated} valid alternatives")
                };
                self.keywords.composite(
                    out,
                    format!(
                        "{} must validate one and only one schema (oneOf). {extra}",
                        go_quote(&frame.openapi_name())
                    ),
                );
                if let Some((errs, c)) = best {
                    out.extend(errs);
                    count += c;
                }
            }
        }

        if !vv.all_of.is_empty() {
            let mut validated = 0;
            for branch in &vv.all_of {
                let before = out.len();
                count += self.value(branch, v, frame, out);
                if out.len() == before {
                    validated += 1;
                }
            }
            if validated != vv.all_of.len() {
                let extra = if validated == 0 { ". None validated" } else { "" };
                self.keywords.composite(
                    out,
                    format!("{} must validate all the schemas (allOf){extra}", go_quote(&frame.openapi_name())),
                );
            }
        }

        if let Some(not) = &vv.not {
            let mut errs = Vec::new();
            self.value(not.as_ref(), v, frame, &mut errs);
            if errs.is_empty() {
                self.keywords
                    .composite(out, format!("{} must not validate the schema (not)", go_quote(&frame.openapi_name())));
            }
        }

        count + 1
    }
}
