//! Field paths and field errors, printed exactly as Kubernetes prints them.
//!
//! Every validation in versa reports a list of [`Error`]s, each with a type, the path of the
//! offending field, the bad value and a detail — the shape of apimachinery's `field.Error`.
//! [`Error`]'s `Display` is the text kubectl users know
//! (`spec.replicas: Invalid value: 15: spec.replicas in body should be less than or equal to 10`),
//! and [`ErrorList::aggregate`] is the `[e1, e2]` form used in `Status` messages. The server turns
//! each error into a `Status.details.causes` entry from [`ErrorType::reason`], [`Error::field`]
//! and [`Error::body`].

use std::fmt::{self, Write as _};

use serde_json::Value;

/// A field path such as `spec.template.containers[0].ports[http]`.
///
/// Rendered eagerly: paths are only built on the error path or for fields that actually exist in
/// a definition, so the cheap representation is the string itself. The empty path is the "nil"
/// path of Kubernetes and prints as `<nil>`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Path(String);

impl Path {
    /// A path starting at `name` (Kubernetes `field.NewPath`).
    pub fn new(name: impl AsRef<str>) -> Path {
        Path(name.as_ref().to_owned())
    }

    /// The nil path, printed as `<nil>`.
    pub fn none() -> Path {
        Path(String::new())
    }

    /// Builds a path from dotted segments: `Path::from_parts(&["spec", "versions"])`.
    pub fn from_parts(parts: &[&str]) -> Path {
        let mut p = Path::none();
        for part in parts {
            p = p.child(part);
        }
        p
    }

    /// `self.name` (or `name` at the root).
    pub fn child(&self, name: impl AsRef<str>) -> Path {
        let name = name.as_ref();
        let mut s = String::with_capacity(self.0.len() + 1 + name.len());
        s.push_str(&self.0);
        if !s.is_empty() {
            s.push('.');
        }
        s.push_str(name);
        Path(s)
    }

    /// `self[i]`.
    pub fn index(&self, i: usize) -> Path {
        let mut s = self.0.clone();
        let _ = write!(s, "[{i}]");
        Path(s)
    }

    /// `self[key]` — map keys are printed unquoted, as in Kubernetes.
    pub fn key(&self, key: impl AsRef<str>) -> Path {
        let mut s = self.0.clone();
        s.push('[');
        s.push_str(key.as_ref());
        s.push(']');
        Path(s)
    }

    pub fn is_none(&self) -> bool {
        self.0.is_empty()
    }

    /// The rendered path; empty for the nil path.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() { f.write_str("<nil>") } else { f.write_str(&self.0) }
    }
}

/// Where a walk is in a value: a chain of stack frames, one per level, from which a path is
/// rendered only when something is reported — so a clean object costs no allocation per node.
/// Each walk renders it in its own notation: [`At::field_path`] as field errors print paths,
/// [`At::dotted`] as pruned fields are reported, [`At::openapi_name`] as kube-openapi names a
/// location in its messages.
#[derive(Clone, Copy, Debug)]
pub(crate) struct At<'a> {
    parent: Option<&'a At<'a>>,
    seg: Seg<'a>,
}

/// One step of an [`At`] chain.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Seg<'a> {
    Root,
    /// A key whose schema is a declared property.
    Prop(&'a str),
    /// A key whose schema is `additionalProperties` (or a key no schema speaks for).
    Extra(&'a str),
    Index(usize),
}

impl<'a> At<'a> {
    /// Where a walk starts.
    pub(crate) const ROOT: At<'static> = At { parent: None, seg: Seg::Root };

    pub(crate) fn child(&'a self, seg: Seg<'a>) -> At<'a> {
        At { parent: Some(self), seg }
    }

    pub(crate) fn prop(&'a self, key: &'a str) -> At<'a> {
        self.child(Seg::Prop(key))
    }

    pub(crate) fn extra(&'a self, key: &'a str) -> At<'a> {
        self.child(Seg::Extra(key))
    }

    pub(crate) fn index(&'a self, i: usize) -> At<'a> {
        self.child(Seg::Index(i))
    }

    /// The field path below `base`: `base.prop`, `base[extra]`, `base[0]`.
    pub(crate) fn field_path(&self, base: &Path) -> Path {
        let parent = || self.parent.map_or_else(|| base.clone(), |p| p.field_path(base));
        match self.seg {
            Seg::Root => base.clone(),
            Seg::Prop(k) => parent().child(k),
            Seg::Extra(k) => parent().key(k),
            Seg::Index(i) => parent().index(i),
        }
    }

    /// Every key dotted, indices in brackets (`spec.map.k`, `list[0].z`), appended to `out`.
    pub(crate) fn dotted(&self, out: &mut String) {
        if let Some(p) = self.parent {
            p.dotted(out);
        }
        match self.seg {
            Seg::Root => {}
            Seg::Prop(k) | Seg::Extra(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            Seg::Index(i) => {
                let _ = write!(out, "[{i}]");
            }
        }
    }

    /// kube-openapi's `Validation.Name`: properties dotted (`name` at the root), keys of
    /// `additionalProperties` always after a dot (`.key` at the root), indices in brackets.
    pub(crate) fn openapi_name(&self) -> String {
        let mut s = String::new();
        self.write_openapi_name(&mut s);
        s
    }

    fn write_openapi_name(&self, out: &mut String) {
        if let Some(p) = self.parent {
            p.write_openapi_name(out);
        }
        match self.seg {
            Seg::Root => {}
            Seg::Prop(n) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(n);
            }
            Seg::Extra(k) => {
                out.push('.');
                out.push_str(k);
            }
            Seg::Index(i) => {
                let _ = write!(out, "[{i}]");
            }
        }
    }
}

/// What kind of problem a field error reports; mirrors apimachinery's `field.ErrorType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorType {
    NotFound,
    Required,
    Duplicate,
    Invalid,
    NotSupported,
    Forbidden,
    TooLong,
    TooMany,
    Internal,
    TypeInvalid,
}

impl ErrorType {
    /// The `StatusCause.reason` for this type (`FieldValueInvalid`, ...).
    pub fn reason(self) -> &'static str {
        match self {
            ErrorType::NotFound => "FieldValueNotFound",
            ErrorType::Required => "FieldValueRequired",
            ErrorType::Duplicate => "FieldValueDuplicate",
            ErrorType::Invalid => "FieldValueInvalid",
            ErrorType::NotSupported => "FieldValueNotSupported",
            ErrorType::Forbidden => "FieldValueForbidden",
            ErrorType::TooLong => "FieldValueTooLong",
            ErrorType::TooMany => "FieldValueTooMany",
            ErrorType::Internal => "InternalError",
            ErrorType::TypeInvalid => "FieldValueTypeInvalid",
        }
    }

    /// The words printed in the message (`Invalid value`, `Required value`, ...).
    pub fn words(self) -> &'static str {
        match self {
            ErrorType::NotFound => "Not found",
            ErrorType::Required => "Required value",
            ErrorType::Duplicate => "Duplicate value",
            ErrorType::Invalid | ErrorType::TypeInvalid => "Invalid value",
            ErrorType::NotSupported => "Unsupported value",
            ErrorType::Forbidden => "Forbidden",
            ErrorType::TooLong => "Too long",
            ErrorType::TooMany => "Too many",
            ErrorType::Internal => "Internal error",
        }
    }

    /// Parses a `reason` as written in a definition (`x-kubernetes-validations[].reason`).
    pub fn from_reason(reason: &str) -> Option<ErrorType> {
        Some(match reason {
            "FieldValueNotFound" => ErrorType::NotFound,
            "FieldValueRequired" => ErrorType::Required,
            "FieldValueDuplicate" => ErrorType::Duplicate,
            "FieldValueInvalid" => ErrorType::Invalid,
            "FieldValueNotSupported" => ErrorType::NotSupported,
            "FieldValueForbidden" => ErrorType::Forbidden,
            "FieldValueTooLong" => ErrorType::TooLong,
            "FieldValueTooMany" => ErrorType::TooMany,
            "InternalError" => ErrorType::Internal,
            "FieldValueTypeInvalid" => ErrorType::TypeInvalid,
            _ => return None,
        })
    }
}

/// The value printed after the error type. Kubernetes prints scalars with Go's `%v`, strings
/// quoted, `nil` as `"null"` and composite values as JSON; some errors omit the value.
#[derive(Clone, Debug, PartialEq)]
pub enum BadValue {
    /// Nothing is printed (Required, Forbidden, TooLong, Internal, or an explicit omission).
    Omit,
    /// A JSON value, printed the Go way.
    Json(Value),
    /// Text printed as it is (values Go prints in a form JSON has no value for, such as the
    /// `0x0` of an unset resourceVersion).
    Raw(String),
}

impl From<Value> for BadValue {
    fn from(v: Value) -> Self {
        BadValue::Json(v)
    }
}
impl From<&Value> for BadValue {
    fn from(v: &Value) -> Self {
        BadValue::Json(v.clone())
    }
}
impl From<&str> for BadValue {
    fn from(v: &str) -> Self {
        BadValue::Json(Value::String(v.to_owned()))
    }
}
impl From<String> for BadValue {
    fn from(v: String) -> Self {
        BadValue::Json(Value::String(v))
    }
}
impl From<i64> for BadValue {
    fn from(v: i64) -> Self {
        BadValue::Json(Value::from(v))
    }
}
impl From<usize> for BadValue {
    fn from(v: usize) -> Self {
        BadValue::Json(Value::from(v))
    }
}
impl From<bool> for BadValue {
    fn from(v: bool) -> Self {
        BadValue::Json(Value::Bool(v))
    }
}

/// One field error: `<field>: <type words>[: <value>][: <detail>]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Error {
    pub type_: ErrorType,
    pub field: Path,
    pub value: BadValue,
    pub detail: String,
}

impl Error {
    pub fn new(type_: ErrorType, field: Path, value: impl Into<BadValue>, detail: impl Into<String>) -> Error {
        Error { type_, field, value: value.into(), detail: detail.into() }
    }

    pub fn invalid(field: Path, value: impl Into<BadValue>, detail: impl Into<String>) -> Error {
        Error::new(ErrorType::Invalid, field, value, detail)
    }

    pub fn type_invalid(field: Path, value: impl Into<BadValue>, detail: impl Into<String>) -> Error {
        Error::new(ErrorType::TypeInvalid, field, value, detail)
    }

    pub fn required(field: Path, detail: impl Into<String>) -> Error {
        Error::new(ErrorType::Required, field, BadValue::Omit, detail)
    }

    pub fn forbidden(field: Path, detail: impl Into<String>) -> Error {
        Error::new(ErrorType::Forbidden, field, BadValue::Omit, detail)
    }

    pub fn duplicate(field: Path, value: impl Into<BadValue>) -> Error {
        Error::new(ErrorType::Duplicate, field, value, "")
    }

    pub fn not_found(field: Path, value: impl Into<BadValue>) -> Error {
        Error::new(ErrorType::NotFound, field, value, "")
    }

    pub fn internal(field: Path, detail: impl Into<String>) -> Error {
        Error::new(ErrorType::Internal, field, BadValue::Omit, detail)
    }

    /// `Unsupported value: "x": supported values: "a", "b"`.
    pub fn not_supported<S: AsRef<str>>(field: Path, value: impl Into<BadValue>, valid: &[S]) -> Error {
        let detail = if valid.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = valid.iter().map(|v| go_quote(v.as_ref())).collect();
            format!("supported values: {}", quoted.join(", "))
        };
        Error::new(ErrorType::NotSupported, field, value, detail)
    }

    /// `Too long: may not be more than N bytes` (the value is never printed).
    pub fn too_long(field: Path, max: i64) -> Error {
        let detail = if max >= 0 { format!("may not be more than {max} bytes") } else { "value is too long".into() };
        Error::new(ErrorType::TooLong, field, BadValue::Omit, detail)
    }

    /// `Too many: 3: must have at most 2 items`.
    pub fn too_many(field: Path, actual: Option<i64>, max: i64) -> Error {
        let detail = if max >= 0 { format!("must have at most {max} items") } else { "has too many items".into() };
        let value = match actual {
            Some(n) => BadValue::Json(Value::from(n)),
            None => BadValue::Omit,
        };
        Error::new(ErrorType::TooMany, field, value, detail)
    }

    /// The message without the field: `Invalid value: 15: ...` (Kubernetes `ErrorBody`).
    pub fn body(&self) -> String {
        let mut s = String::from(self.type_.words());
        let omit =
            matches!(self.type_, ErrorType::Required | ErrorType::Forbidden | ErrorType::TooLong | ErrorType::Internal);
        if !omit {
            match &self.value {
                BadValue::Json(v) => {
                    s.push_str(": ");
                    s.push_str(&go_value(v));
                }
                BadValue::Raw(text) => {
                    s.push_str(": ");
                    s.push_str(text);
                }
                BadValue::Omit => {}
            }
        }
        if !self.detail.is_empty() {
            s.push_str(": ");
            s.push_str(&self.detail);
        }
        s
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.body())
    }
}

impl std::error::Error for Error {}

/// A list of field errors, in the order they were found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ErrorList(pub Vec<Error>);

impl ErrorList {
    pub fn new() -> ErrorList {
        ErrorList(Vec::new())
    }

    pub fn push(&mut self, e: Error) {
        self.0.push(e);
    }

    pub fn extend(&mut self, other: ErrorList) {
        self.0.extend(other.0);
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn iter(&self) -> std::slice::Iter<'_, Error> {
        self.0.iter()
    }

    /// The errors with duplicates (same text) removed, first occurrence kept — what
    /// `ToAggregate` does before building a message.
    pub fn deduplicated(&self) -> Vec<&Error> {
        let mut seen = std::collections::HashSet::new();
        self.0.iter().filter(|e| seen.insert(e.to_string())).collect()
    }

    /// `e1` for one error, `[e1, e2]` for several, as Kubernetes' aggregate error prints.
    pub fn aggregate(&self) -> String {
        let errs = self.deduplicated();
        match errs.len() {
            0 => String::new(),
            1 => errs[0].to_string(),
            _ => {
                let parts: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
                format!("[{}]", parts.join(", "))
            }
        }
    }

    /// The whole message of a 422 `Invalid` Status: `Kind.group "name" is invalid: ...`.
    pub fn invalid_message(&self, qualified_kind: &str, name: &str) -> String {
        let agg = self.aggregate();
        if agg.is_empty() {
            format!("{qualified_kind} {} is invalid", go_quote(name))
        } else {
            format!("{qualified_kind} {} is invalid: {agg}", go_quote(name))
        }
    }
}

impl IntoIterator for ErrorList {
    type Item = Error;
    type IntoIter = std::vec::IntoIter<Error>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl<'a> IntoIterator for &'a ErrorList {
    type Item = &'a Error;
    type IntoIter = std::slice::Iter<'a, Error>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl From<Vec<Error>> for ErrorList {
    fn from(v: Vec<Error>) -> Self {
        ErrorList(v)
    }
}

impl fmt::Display for ErrorList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.aggregate())
    }
}

/// Prints a JSON value as Kubernetes prints a bad value: numbers and booleans with Go's `%v`,
/// strings with `%q`, `null` (a nil value; before 1.36 kube printed it as the string `"null"`),
/// objects and arrays as JSON.
pub fn go_value(v: &Value) -> String {
    match v {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => go_number(n),
        Value::String(s) => go_quote(s),
        Value::Array(_) | Value::Object(_) => go_json(v),
    }
}

/// A JSON value as Go's `%v` prints it once decoded into an `interface{}` (integers as `int64`,
/// as kube's decoder keeps them): strings bare, `<nil>`, `map[k:v ...]` with sorted keys,
/// `[a b]` — how `unstructured`'s accessor errors show a value.
pub fn go_v(value: &Value) -> String {
    match value {
        Value::Null => "<nil>".to_owned(),
        Value::Bool(b) => b.to_string(),
        // Beyond int64 the decoder gives a float64.
        Value::Number(n) => n.as_i64().map_or_else(|| go_float(n.as_f64().unwrap_or(0.0)), |i| i.to_string()),
        Value::String(s) => s.clone(),
        Value::Object(map) => {
            let mut members: Vec<String> = map.iter().map(|(k, v)| format!("{k}:{}", go_v(v))).collect();
            members.sort();
            format!("map[{}]", members.join(" "))
        }
        Value::Array(items) => format!("[{}]", items.iter().map(go_v).collect::<Vec<_>>().join(" ")),
    }
}

/// Go's `%T` of a JSON value decoded into an `interface{}` (integers as `int64`).
pub fn go_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.as_i64().is_some() => "int64",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Object(_) => "map[string]interface {}",
        Value::Array(_) => "[]interface {}",
    }
}

/// A JSON number as Go's `%v` prints an `int64` or a `float64`.
pub fn go_number(n: &serde_json::Number) -> String {
    if let Some(i) = n.as_i64() {
        return i.to_string();
    }
    if let Some(u) = n.as_u64() {
        return u.to_string();
    }
    go_float(n.as_f64().unwrap_or(0.0))
}

/// Go's `%v` for a `float64`: `strconv.FormatFloat(f, 'g', -1, 64)` — the shortest digits
/// that round-trip, in exponent form when the decimal exponent is below -4 or at least 6 (the
/// precision `'g'` uses for that decision when printing shortest), with at least two exponent
/// digits: `1.5`, `15`, `123456`, `1e+06`, `1.2345678e+07`, `0.0001`, `1e-05`.
pub fn go_float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf".into() } else { "-Inf".into() };
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    // Shortest round-trip digits and decimal exponent from Rust's `{:e}` formatting.
    let e_repr = format!("{f:e}");
    let (mantissa, exp) = match e_repr.split_once('e') {
        Some((m, e)) => (m, e.parse::<i32>().unwrap_or(0)),
        None => (e_repr.as_str(), 0),
    };
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        let abs = exp.unsigned_abs();
        if abs < 10 { format!("{mantissa}e{sign}0{abs}") } else { format!("{mantissa}e{sign}{abs}") }
    } else {
        // Plain decimal with the shortest digits.
        format!("{f}")
    }
}

/// Go's `strconv.Quote`: double quotes, `\"` and `\\`, and escapes for control and
/// non-printable characters; printable non-ASCII characters are kept.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{07}' => out.push_str("\\a"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            '\u{0b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if c.is_control() => {
                let cp = c as u32;
                if cp <= 0xffff {
                    let _ = write!(out, "\\u{cp:04x}");
                } else {
                    let _ = write!(out, "\\U{cp:08x}");
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Go's `json.Marshal` of a decoded JSON value: keys sorted; numbers as Go encodes an `int64` or
/// a `float64` (`1`, not `1.0`; `1e+21`; `1e-7`); `<`, `>`, `&`, U+2028 and U+2029 escaped as Go
/// does.
pub fn go_json(v: &Value) -> String {
    let mut s = String::new();
    write_go_json(v, &mut s);
    s
}

fn write_go_json(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match n.as_i64() {
            Some(i) => {
                let _ = write!(out, "{i}");
            }
            // Go decodes an integer beyond int64 (and every fraction) to a float64.
            None => out.push_str(&go_json_float(n.as_f64().unwrap_or(0.0))),
        },
        Value::String(s) => write_go_json_string(s, out),
        Value::Array(a) => {
            out.push('[');
            for (i, item) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_go_json(item, out);
            }
            out.push(']');
        }
        Value::Object(m) => {
            // Go sorts map keys; serde_json's map is sorted unless `preserve_order` is on.
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_go_json_string(k, out);
                out.push(':');
                if let Some(val) = m.get(k) {
                    write_go_json(val, out);
                }
            }
            out.push('}');
        }
    }
}

/// `encoding/json`'s float64: shortest digits, plain notation unless the magnitude is below
/// 1e-6 or at least 1e21, exponents without leading zeros (`1e-7`, `1e+21`).
fn go_json_float(f: f64) -> String {
    if !f.is_finite() {
        return "null".into();
    }
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let e = format!("{f:e}");
        match e.split_once('e') {
            Some((m, exp)) if !exp.starts_with('-') => format!("{m}e+{exp}"),
            _ => e,
        }
    } else {
        format!("{f}")
    }
}

fn write_go_json_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_render_like_kubernetes() {
        let p = Path::new("spec").child("containers").index(0).child("ports").key("http");
        assert_eq!(p.to_string(), "spec.containers[0].ports[http]");
        assert_eq!(Path::none().to_string(), "<nil>");
        assert_eq!(Path::none().child("spec").to_string(), "spec");
    }

    #[test]
    fn error_texts() {
        let cases: Vec<(Error, &str)> = vec![
            (
                Error::invalid(
                    Path::new("spec").child("replicas"),
                    15i64,
                    "spec.replicas in body should be less than or equal to 10",
                ),
                "spec.replicas: Invalid value: 15: spec.replicas in body should be less than or equal to 10",
            ),
            (
                Error::not_supported(Path::new("spec").child("level"), "x", &["low", "medium", "high"]),
                r#"spec.level: Unsupported value: "x": supported values: "low", "medium", "high""#,
            ),
            (Error::required(Path::new("spec").child("image"), ""), "spec.image: Required value"),
            (Error::duplicate(Path::new("spec").child("tags").index(2), "a"), r#"spec.tags[2]: Duplicate value: "a""#),
            (
                Error::too_many(Path::new("spec").child("few"), Some(3), 2),
                "spec.few: Too many: 3: must have at most 2 items",
            ),
            (
                Error::too_long(Path::new("spec").child("name"), 10),
                "spec.name: Too long: may not be more than 10 bytes",
            ),
            (
                Error::duplicate(Path::new("spec").child("m").index(1), json!({"k": "v"})),
                r#"spec.m[1]: Duplicate value: {"k":"v"}"#,
            ),
            (Error::invalid(Path::none(), Value::Null, "some"), r#"<nil>: Invalid value: null: some"#),
            (Error::invalid(Path::new("x"), json!(1.5), "d"), "x: Invalid value: 1.5: d"),
            (Error::forbidden(Path::new("x"), "no"), "x: Forbidden: no"),
        ];
        for (err, want) in cases {
            assert_eq!(err.to_string(), want);
        }
    }

    #[test]
    fn go_floats() {
        for (f, want) in [
            (1.5, "1.5"),
            (15.0, "15"),
            (1e21, "1e+21"),
            (1e20, "1e+20"),
            (123456.0, "123456"),
            (1e6, "1e+06"),
            (12345678.5, "1.23456785e+07"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-2.5e-7, "-2.5e-07"),
        ] {
            assert_eq!(go_float(f), want, "{f}");
        }
    }

    #[test]
    fn aggregate_dedups_and_brackets() {
        let e = Error::required(Path::new("a"), "");
        let list = ErrorList(vec![e.clone(), e.clone(), Error::required(Path::new("b"), "")]);
        assert_eq!(list.aggregate(), "[a: Required value, b: Required value]");
        assert_eq!(
            ErrorList(vec![e]).invalid_message("CronTab.stable.example.com", "x"),
            r#"CronTab.stable.example.com "x" is invalid: a: Required value"#
        );
    }
}
