//! Leases (standalone, `coordination.k8s.io/v1`; what client-go's, controller-runtime's and
//! kube-rs' leader election hold): kube's `ValidateLease` — `leaseDurationSeconds` above 0,
//! `leaseTransitions` not negative, `strategy` a known or qualified name, `preferredHolder` only
//! with a `strategy` — and kube's strategy, which drops `strategy` and `preferredHolder` unless
//! the stored Lease has them (the `CoordinatedLeaderElection` feature, off by default in 1.36,
//! as versa serves it); and `spec.acquireTime` / `spec.renewTime` as `metav1.MicroTime`: only
//! `2006-01-02T15:04:05.000000Z07:00` decodes (exactly six fractional digits, as Go's
//! `time.Parse` of that layout demands), and it is stored in UTC, as kube writes it back. No
//! `generation`; client-go's typed clients may send them as protobuf.

use serde_json::{Value, json};
use versa_schema::names::is_qualified_name;
use versa_schema::{Error as FieldError, ErrorList, Path};

use super::patch::{METADATA_ONLY, Schema};
use super::{CoreKind, KindRules, Part, core_definition, custom};
use crate::error::{Error, Result};
use crate::resource::{Builtin, Resource, Version};

/// The kind's identity and built-in definition.
pub const BUILTIN: Builtin = Builtin::new("leases.coordination.k8s.io", definition);

/// Its registration.
pub static KIND: CoreKind = CoreKind { builtin: BUILTIN, rules: &Lease };

/// The Lease strategies Kubernetes defines (`CoordinatedLeaseStrategy`).
const STRATEGIES: &[&str] = &["OldestEmulationVersion"];

/// The `MicroTime` fields of a Lease's `spec`.
const MICRO_TIMES: [&str; 2] = ["acquireTime", "renewTime"];

fn definition() -> Value {
    core_definition(
        BUILTIN.name(),
        "coordination.k8s.io",
        "Namespaced",
        json!({"plural": "leases", "singular": "lease", "kind": "Lease"}),
        json!({
            "additionalPrinterColumns": [
                {"name": "Holder", "type": "string", "jsonPath": ".spec.holderIdentity"},
                {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}],
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "properties": {
                    "holderIdentity": {"type": "string"},
                    "leaseDurationSeconds": {"type": "integer", "format": "int32"},
                    "acquireTime": {"type": "string", "format": "date-time"},
                    "renewTime": {"type": "string", "format": "date-time"},
                    "leaseTransitions": {"type": "integer", "format": "int32"},
                    "strategy": {"type": "string"},
                    "preferredHolder": {"type": "string"}}}}}},
        }),
    )
}

/// The rules of Leases.
#[derive(Debug)]
pub struct Lease;

impl KindRules for Lease {
    fn is_core(&self) -> bool {
        true
    }

    /// A time that is not a `MicroTime` is kube's 400 with Go's parse error.
    fn decode(&self, res: &Resource, ver: &Version, obj: &mut Value) -> Result<Vec<String>> {
        let unknown = custom::decode(ver, obj);
        for field in MICRO_TIMES {
            let Some(slot) = obj.get_mut("spec").and_then(|s| s.get_mut(field)) else { continue };
            let Value::String(text) = slot else { continue };
            match parse_micro_time(text) {
                Ok(utc) => *slot = json!(utc),
                Err(detail) => {
                    let kind = &res.kind;
                    return Err(Error::BadRequest(format!(
                        "{kind} in version {:?} cannot be handled as a {kind}: {detail}",
                        ver.name
                    )));
                }
            }
        }
        Ok(unknown)
    }

    fn prepare_create(&self, obj: &mut Value) {
        drop_coordinated_fields(obj, None);
    }

    fn prepare_update(&self, new: &mut Value, old: &Value, _part: Part) {
        drop_coordinated_fields(new, Some(old));
    }

    fn strategic_merge(&self) -> Option<&'static Schema> {
        Some(&METADATA_ONLY)
    }

    fn admit(
        &self,
        res: &Resource,
        ver: &Version,
        obj: &mut Value,
        old: Option<&Value>,
        part: Part,
        warnings: &mut Vec<String>,
    ) -> Result<Vec<String>> {
        custom::admit(res, ver, obj, old, part, warnings, |obj, _| validate_spec(obj))
    }
}

/// The fields of coordinated leader election, which kube drops while its feature is off (as
/// it is by default) unless the old object has them.
const COORDINATED_FIELDS: [&str; 2] = ["strategy", "preferredHolder"];

/// kube's `dropDisabledSpecFields` with `CoordinatedLeaderElection` off.
fn drop_coordinated_fields(new: &mut Value, old: Option<&Value>) {
    let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) else { return };
    for field in COORDINATED_FIELDS {
        let old_has = old.and_then(|o| o.get("spec")).and_then(|s| s.get(field)).is_some_and(|v| !v.is_null());
        if !old_has {
            spec.remove(field);
        }
    }
}

/// kube's `ValidateLeaseSpec`.
fn validate_spec(obj: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    let spec = Path::new("spec");
    let get = |field: &str| obj.get("spec").and_then(|s| s.get(field)).filter(|v| !v.is_null());
    if let Some(d) = get("leaseDurationSeconds").and_then(Value::as_i64).filter(|d| *d <= 0) {
        errs.push(FieldError::invalid(spec.child("leaseDurationSeconds"), d, "must be greater than 0"));
    }
    if let Some(t) = get("leaseTransitions").and_then(Value::as_i64).filter(|t| *t < 0) {
        errs.push(FieldError::invalid(spec.child("leaseTransitions"), t, "must be greater than or equal to 0"));
    }
    let strategy = get("strategy").and_then(Value::as_str);
    if let Some(strategy) = strategy {
        // kube names the field `spec.strategy.strategy` (its path is given the child twice).
        let path = spec.child("strategy").child("strategy");
        if strategy.contains('/') {
            for msg in is_qualified_name(strategy) {
                errs.push(FieldError::invalid(path.clone(), strategy, msg));
            }
        } else if !STRATEGIES.contains(&strategy) {
            errs.push(FieldError::not_supported(path, strategy, STRATEGIES));
        }
    }
    let preferred = get("preferredHolder").and_then(Value::as_str).is_some_and(|p| !p.is_empty());
    if preferred && strategy.is_none_or(str::is_empty) {
        errs.push(FieldError::forbidden(
            spec.child("preferredHolder"),
            "may only be specified if `strategy` is defined",
        ));
    }
    errs
}

/// The layout of a `metav1.MicroTime` (kube's `RFC3339Micro`).
const MICRO_TIME_LAYOUT: &str = "2006-01-02T15:04:05.000000Z07:00";

/// A time that is not a `metav1.MicroTime`: Go's `time.ParseError`, whose `Display` is Go's
/// text (`parsing time "<text>" as "<layout>": cannot parse "<rest>" as "<element>"`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("parsing time {text:?} as {MICRO_TIME_LAYOUT:?}: cannot parse {rest:?} as {element:?}")]
pub struct MicroTimeError {
    /// The whole text.
    pub text: String,
    /// What was left of it where parsing stopped.
    pub rest: String,
    /// The layout element it did not match (`2006`, `.000000`, `Z07:00`).
    pub element: &'static str,
}

/// A `metav1.MicroTime` as kube decodes it (Go's `time.Parse` with
/// `2006-01-02T15:04:05.000000Z07:00`) and writes it back (in UTC, at microseconds).
pub fn parse_micro_time(text: &str) -> std::result::Result<String, MicroTimeError> {
    let go_error = |rest: &str, element| MicroTimeError { text: text.to_owned(), rest: rest.to_owned(), element };
    // Up to the seconds: the layout's fixed part, checked by jiff below; first the fraction,
    // whose digits Go counts exactly.
    let Some(seconds_end) = text.get(..19).map(|_| 19) else {
        return Err(go_error(text, "2006"));
    };
    let rest = &text[seconds_end..];
    let digits = rest.strip_prefix('.').map(|r| r.bytes().take_while(u8::is_ascii_digit).count());
    if digits.is_none_or(|d| d < 6) {
        return Err(go_error(rest, ".000000"));
    }
    let zone = &rest[7..];
    if zone != "Z" && !(zone.len() == 6 && zone.as_bytes().first().is_some_and(|b| matches!(b, b'+' | b'-'))) {
        return Err(go_error(zone, "Z07:00"));
    }
    let parsed: jiff::Timestamp = text.parse().map_err(|_| go_error(text, "2006"))?;
    Ok(parsed.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]

    use super::*;

    /// What Go's `time.Parse` with kube's `RFC3339Micro` makes of other precisions (checked
    /// with Go 1.26).
    #[test]
    fn micro_times_decode_as_go_parses_them() {
        let layout = "\"2006-01-02T15:04:05.000000Z07:00\"";
        let cases = [
            ("2024-01-02T03:04:05.123456Z", Ok("2024-01-02T03:04:05.123456Z")),
            ("2024-01-02T03:04:05.123456+02:00", Ok("2024-01-02T01:04:05.123456Z")),
            ("2024-01-02T03:04:05Z", Err("cannot parse \"Z\" as \".000000\"")),
            ("2024-01-02T03:04:05.1Z", Err("cannot parse \".1Z\" as \".000000\"")),
            ("2024-01-02T03:04:05.123456789Z", Err("cannot parse \"789Z\" as \"Z07:00\"")),
            ("2024-01-02T03:04:05.000000z", Err("cannot parse \"z\" as \"Z07:00\"")),
        ];
        for (text, want) in cases {
            let got = parse_micro_time(text);
            match want {
                Ok(want) => assert_eq!(got.unwrap(), want, "{text}"),
                Err(tail) => {
                    assert_eq!(
                        got.unwrap_err().to_string(),
                        format!("parsing time {text:?} as {layout}: {tail}"),
                        "{text}"
                    )
                }
            }
        }
    }
}
