//! The checks of single keywords — type, string, number, array, enum, object — with
//! kube-openapi's message templates, each error mapped to a field error as kube-apiserver maps
//! kube-openapi's results (`kubeOpenAPIResultToFieldErrors`): under the validated value's
//! path, or at it for errors kube-openapi attaches to no field.

use serde_json::{Map, Value};

use super::go::{Kind, Numeric, as_f64, enum_matches, go_f64_to_i64, has_duplicates, is_json_integer, number_value};
use super::node::{Node, Types, type_word};
use crate::field::{At, BadValue, Error, ErrorType, Path, go_float, go_json, go_quote};
use crate::structural::{Type, ValueValidation, with_props};

/// The keyword checks of one validation, reporting under `root` (the `fldPath` of
/// `ValidateCustomResource`).
#[derive(Clone, Copy)]
pub(super) struct Keywords<'p> {
    pub(super) root: &'p Path,
}

impl Keywords<'_> {
    /// The field path of an error kube-openapi named `name`: `fldPath.Child(name without its
    /// leading ".")`, or `fldPath` itself for an empty name.
    pub(super) fn field(&self, name: &str) -> Path {
        if name.is_empty() || name == "." {
            self.root.clone()
        } else {
            self.root.child(name.strip_prefix('.').unwrap_or(name))
        }
    }

    /// An error with kube-openapi's generic mapping (`field.Invalid` with its message).
    pub(super) fn invalid(&self, out: &mut Vec<Error>, name: &str, value: BadValue, msg: String) {
        out.push(Error { type_: ErrorType::Invalid, field: self.field(name), value, detail: msg });
    }

    /// A type error: `<name> in body must be of type <t>: "<got>"`, value `<got>`.
    pub(super) fn type_error(&self, out: &mut Vec<Error>, name: &str, type_name: &str, got: &str) {
        let detail = format!("{name} in body must be of type {type_name}: {}", go_quote(got));
        out.push(Error { type_: ErrorType::TypeInvalid, field: self.field(name), value: got.into(), detail });
    }

    /// An error kube-openapi does not attach to a field (`allOf` & co.): reported at the root
    /// path with an empty value.
    pub(super) fn composite(&self, out: &mut Vec<Error>, msg: String) {
        out.push(Error { type_: ErrorType::Invalid, field: self.root.clone(), value: "".into(), detail: msg });
    }

    /// kube-openapi's type validator. Returns whether it passed.
    pub(super) fn check_type(
        &self,
        types: Types<'_>,
        format: &str,
        k: Kind<'_>,
        frame: &At<'_>,
        out: &mut Vec<Error>,
    ) -> bool {
        // The JSON type and Go-derived format kube-openapi infers from the value.
        let (sch_type, val_format) = match k {
            Kind::Bool => (Type::Boolean, ""),
            Kind::Str(_) => (Type::String, ""),
            Kind::Int(_) => (Type::Integer, "int64"),
            Kind::Float(_) => (Type::Number, "float64"),
            Kind::Array(_) => (Type::Array, ""),
            Kind::Object(_) | Kind::Null => (Type::Object, ""),
        };
        // 1.0 is an integer, and an integer is a number.
        let declared = types.contains(sch_type)
            || match k {
                Kind::Float(f) => types.contains(Type::Integer) && is_json_integer(f),
                Kind::Int(_) => types.contains(Type::Number),
                _ => false,
            };
        let str_or_array = matches!(k, Kind::Str(_) | Kind::Array(_));

        if !format.is_empty() {
            if !str_or_array && !declared && val_format != format {
                // A value that is neither string nor array against a declared (string) format
                // is reported against the format, with the value's Go format as the "type".
                self.type_error(out, &frame.openapi_name(), format, val_format);
                return false;
            }
            let numeric = types.contains(Type::Number) || types.contains(Type::Integer);
            if str_or_array && !numeric {
                // kube-openapi lets strings and arrays through once a non-numeric format is set.
                return true;
            }
        }
        if !declared {
            self.type_error(out, &frame.openapi_name(), types.joined(), type_word(sch_type));
            return false;
        }
        true
    }

    /// maxLength, minLength, pattern — the first failure only, as kube-openapi's string
    /// validator returns on it. Lengths count Unicode code points.
    pub(super) fn check_string(&self, vv: &ValueValidation, s: &str, frame: &At<'_>, out: &mut Vec<Error>) {
        if vv.max_length.is_none() && vv.min_length.is_none() && vv.pattern.is_none() {
            return;
        }
        // Byte length bounds the code point count; count only when it can matter.
        let len = || s.chars().count() as i64;
        if let Some(max) = vv.max_length
            && s.len() as i64 > max
            && len() > max
        {
            out.push(Error::too_long(self.field(&frame.openapi_name()), max));
            return;
        }
        if let Some(min) = vv.min_length
            && len() < min
        {
            let name = frame.openapi_name();
            self.invalid(out, &name, s.into(), format!("{name} in body should be at least {min} chars long"));
            return;
        }
        if let Some(p) = &vv.pattern {
            let name;
            let detail = match p.error() {
                Some(err) => {
                    name = frame.openapi_name();
                    format!("{name} in body should match '{}, but pattern is invalid: {err}'", p.source())
                }
                None if p.is_match(s) => return,
                None => {
                    name = frame.openapi_name();
                    format!("{name} in body should match '{}'", p.source())
                }
            };
            self.invalid(out, &name, s.into(), detail);
        }
    }

    /// The number validator's first check: does the value fit the schema's numeric type and
    /// format ([`Numeric::range_error`])?
    pub(super) fn check_range(&self, num: Numeric<'_>, k: Kind<'_>, frame: &At<'_>, out: &mut Vec<Error>) {
        self.fits_range(num, k, "Checked", &frame.openapi_name(), out);
    }

    /// Whether `k` fits `num`; if not, kube-openapi's error (a plain error, which kube maps to
    /// `<nil>: Invalid value: ""`) is reported with `prefix`.
    pub(super) fn fits_range(
        &self,
        num: Numeric<'_>,
        k: Kind<'_>,
        prefix: &str,
        name: &str,
        out: &mut Vec<Error>,
    ) -> bool {
        let Some(detail) = num.range_error(k, prefix, name) else { return true };
        out.push(Error { type_: ErrorType::Invalid, field: Path::none(), value: "".into(), detail });
        false
    }

    /// The range check, then multipleOf, minimum, maximum — in that order, all reported
    /// (kube-openapi's number validator). A bound that fits the numeric type and format is
    /// compared natively: with an `int64` value, the bound truncated to `int64`, which is what
    /// the message prints. A bound that does not fit is reported (`Maximum boundary value must
    /// be of type integer ...`) and compared as a float.
    pub(super) fn check_number(
        &self,
        num: Numeric<'_>,
        vv: &ValueValidation,
        k: Kind<'_>,
        frame: &At<'_>,
        out: &mut Vec<Error>,
    ) {
        self.check_range(num, k, frame, out);
        let name = frame.openapi_name();
        if let Some(factor) = vv.multiple_of {
            let native = self.fits_range(num, Kind::Float(factor), "MultipleOf", &name, out);
            let msg = match k {
                // Deviation: Go divides by `int64(factor)` and panics when it is 0 (a factor
                // below one); we fall back to the float check instead of failing the request.
                Kind::Int(i) if native && go_f64_to_i64(factor) != 0 => {
                    let fi = go_f64_to_i64(factor);
                    if fi < 0 {
                        Some((true, fi.to_string()))
                    } else if i.wrapping_div(fi).wrapping_mul(fi) != i {
                        Some((false, fi.to_string()))
                    } else {
                        None
                    }
                }
                _ => {
                    let f = as_f64(k);
                    if factor < 0.0 {
                        Some((true, go_float(factor)))
                    } else {
                        let mult = if factor < 1.0 { 1.0 / factor * f } else { f / factor };
                        if is_json_integer(mult) { None } else { Some((false, go_float(factor))) }
                    }
                }
            };
            if let Some((negative, factor_text)) = msg {
                if negative {
                    let value = match k {
                        Kind::Int(_) if native => BadValue::Json(Value::from(go_f64_to_i64(factor))),
                        _ => BadValue::Json(Value::from(factor)),
                    };
                    self.invalid(
                        out,
                        &name,
                        value,
                        format!("factor MultipleOf declared for {name} must be positive: {factor_text}"),
                    );
                } else {
                    self.invalid(
                        out,
                        &name,
                        number_value(k),
                        format!("{name} in body should be a multiple of {factor_text}"),
                    );
                }
            }
        }
        // kube-openapi checks the maximum first but reports the minimum first (neither check
        // depends on the other).
        if let Some(min) = vv.minimum {
            let ex = vv.exclusive_minimum;
            let native = self.fits_range(num, Kind::Float(min), "Minimum boundary", &name, out);
            let bound = match k {
                Kind::Int(i) if native => {
                    let m = go_f64_to_i64(min);
                    ((!ex && i < m) || (ex && i <= m)).then(|| m.to_string())
                }
                _ => {
                    let f = as_f64(k);
                    ((!ex && f < min) || (ex && f <= min)).then(|| go_float(min))
                }
            };
            if let Some(bound) = bound {
                let rel = if ex { "greater than" } else { "greater than or equal to" };
                self.invalid(out, &name, number_value(k), format!("{name} in body should be {rel} {bound}"));
            }
        }
        if let Some(max) = vv.maximum {
            let ex = vv.exclusive_maximum;
            let native = self.fits_range(num, Kind::Float(max), "Maximum boundary", &name, out);
            let bound = match k {
                Kind::Int(i) if native => {
                    let m = go_f64_to_i64(max);
                    ((!ex && i > m) || (ex && i >= m)).then(|| m.to_string())
                }
                _ => {
                    let f = as_f64(k);
                    ((!ex && f > max) || (ex && f >= max)).then(|| go_float(max))
                }
            };
            if let Some(bound) = bound {
                let rel = if ex { "less than" } else { "less than or equal to" };
                self.invalid(out, &name, number_value(k), format!("{name} in body should be {rel} {bound}"));
            }
        }
    }

    /// minItems, maxItems, uniqueItems — after the items, all reported.
    pub(super) fn check_array(&self, vv: &ValueValidation, items: &[Value], frame: &At<'_>, out: &mut Vec<Error>) {
        let size = items.len() as i64;
        if let Some(min) = vv.min_items
            && size < min
        {
            let name = frame.openapi_name();
            self.invalid(
                out,
                &name,
                BadValue::Json(Value::from(size)),
                format!("{name} in body should have at least {min} items"),
            );
        }
        if let Some(max) = vv.max_items
            && size > max
        {
            out.push(Error::too_many(self.field(&frame.openapi_name()), Some(size), max));
        }
        if vv.unique_items && has_duplicates(items) {
            let name = frame.openapi_name();
            self.invalid(out, &name, "".into(), format!("{name} in body shouldn't contain duplicates"));
        }
    }

    /// `enum`, with Go's reflect conversion rules (see [`enum_matches`]).
    pub(super) fn check_enum(&self, vv: &ValueValidation, v: &Value, frame: &At<'_>, out: &mut Vec<Error>) {
        if vv.enum_.is_empty() || vv.enum_.iter().any(|e| enum_matches(v, e)) {
            return;
        }
        let values: Vec<String> = vv
            .enum_
            .iter()
            .map(|e| match e {
                Value::String(s) => s.clone(),
                other => go_json(other),
            })
            .collect();
        out.push(Error::not_supported(self.field(&frame.openapi_name()), v, &values));
    }

    /// A `required` property `req` that the object at `frame` lacks.
    pub(super) fn missing(&self, req: &str, frame: &At<'_>, out: &mut Vec<Error>) {
        let name = format!("{}.{req}", frame.openapi_name());
        out.push(Error::required(self.field(&name), ""));
    }

    /// `additionalProperties: false`: every key that is not a declared property is reported.
    pub(super) fn check_forbidden_properties<N: Node>(
        &self,
        node: &N,
        map: &Map<String, Value>,
        frame: &At<'_>,
        out: &mut Vec<Error>,
    ) {
        for (key, _, prop) in with_props(node.properties(), map.iter()) {
            if prop.is_none() {
                let name = frame.openapi_name();
                self.invalid(out, &name, key.as_str().into(), format!("{name}.{key} in body is a forbidden property"));
            }
        }
    }

    /// minProperties and maxProperties; a violation stops the object validator (nothing below
    /// is checked). Returns whether the count is within bounds.
    pub(super) fn check_property_count(
        &self,
        vv: &ValueValidation,
        map: &Map<String, Value>,
        frame: &At<'_>,
        out: &mut Vec<Error>,
    ) -> bool {
        let n = map.len() as i64;
        if let Some(min) = vv.min_properties
            && n < min
        {
            let name = frame.openapi_name();
            self.invalid(
                out,
                &name,
                BadValue::Json(Value::from(n)),
                format!("{name} in body should have at least {min} properties"),
            );
            return false;
        }
        if let Some(max) = vv.max_properties
            && n > max
        {
            out.push(Error::too_many(self.field(&frame.openapi_name()), Some(n), max));
            return false;
        }
        true
    }
}
