//! Decoding one message by its table (`kinds`) into the JSON Go's `encoding/json` writes for the
//! struct it decodes into: kube's field names; `omitempty` fields left out when zero; other
//! fields and struct-valued ones written even when absent; pointers written exactly when on
//! the wire; `metav1.Time` at seconds and `metav1.MicroTime` at microseconds in UTC (Go's zero
//! time as null); `fieldsV1` as the JSON text it carries. Nesting is only as deep as the tables.

use jiff::{SignedDuration, civil};
use serde_json::{Map, Value};

use super::error::{ProtobufError, Result};
use super::kinds::Rule::{Keep, Omit, Pointer};
use super::kinds::{MICRO_TIME, Message, TIME, Ty};
use super::wire::{Reader, expect, payloads, string};

/// Decodes `data` as `desc` into its JSON object.
pub(super) fn message(desc: &'static Message, data: &[u8]) -> Result<Map<String, Value>> {
    let name = desc.name;
    let mut values: Vec<Option<Value>> = vec![None; desc.fields.len()];
    let mut reader = Reader::new(data, name);
    while let Some((number, wire)) = reader.key()? {
        let Some((field, slot)) = desc.fields.iter().zip(values.iter_mut()).find(|(f, _)| f.number == number) else {
            return Err(ProtobufError::UnknownField { message: name, number, wire });
        };
        let json = field.json;
        expect(wire, field.ty.wire(), name, json)?;
        let value = match field.ty {
            // Negative numbers are sign-extended to 64 bits on the wire.
            Ty::Int64 => Value::from(reader.varint()? as i64),
            Ty::Int32 => {
                let value = reader.varint()? as i64;
                let value =
                    i32::try_from(value).map_err(|_| ProtobufError::Int32 { message: name, field: json, value })?;
                Value::from(value)
            }
            Ty::Bool => Value::Bool(reader.varint()? != 0),
            Ty::Str => Value::String(string(reader.bytes()?, name, json)?),
            Ty::Bytes => {
                use base64::Engine as _;
                Value::String(base64::engine::general_purpose::STANDARD.encode(reader.bytes()?))
            }
            Ty::Time => time(reader.bytes()?, &TIME)?,
            Ty::MicroTime => time(reader.bytes()?, &MICRO_TIME)?,
            Ty::FieldsV1 => fields_v1(reader.bytes()?)?,
            Ty::Message(inner) => Value::Object(message(inner, reader.bytes()?)?),
            Ty::Strings | Ty::Messages(_) => {
                let element = match field.ty {
                    Ty::Messages(inner) => Value::Object(message(inner, reader.bytes()?)?),
                    _ => Value::String(string(reader.bytes()?, name, json)?),
                };
                match slot.get_or_insert_with(|| Value::Array(Vec::new())) {
                    Value::Array(elements) => elements.push(element),
                    _ => return Err(ProtobufError::Duplicate { message: name, field: json }),
                }
                continue;
            }
            Ty::Map(entry) => {
                let mut pair = message(entry, reader.bytes()?)?;
                let text = |value: Option<Value>| match value {
                    Some(Value::String(s)) => s,
                    _ => String::new(),
                };
                let (key, value) = (text(pair.remove("key")), text(pair.remove("value")));
                let Value::Object(map) = slot.get_or_insert_with(|| Value::Object(Map::new())) else {
                    return Err(ProtobufError::Duplicate { message: name, field: json });
                };
                if map.contains_key(&key) {
                    return Err(ProtobufError::DuplicateKey { message: name, field: json, key });
                }
                map.insert(key, Value::String(value));
                continue;
            }
        };
        if slot.replace(value).is_some() {
            return Err(ProtobufError::Duplicate { message: name, field: json });
        }
    }
    let mut object = Map::new();
    for (field, value) in desc.fields.iter().zip(values) {
        let value = match (value, field.rule) {
            (Some(value), Omit) if is_zero(&value) => continue,
            (Some(value), _) => value,
            (None, Keep) => zero(field.ty)?,
            (None, Omit | Pointer) => continue,
        };
        object.insert(field.json.to_owned(), value);
    }
    Ok(object)
}

/// What Go writes for a field of type `ty` left at its zero value.
fn zero(ty: Ty) -> Result<Value> {
    Ok(match ty {
        Ty::Str | Ty::Bytes => Value::String(String::new()),
        Ty::Int64 | Ty::Int32 => Value::from(0),
        Ty::Bool => Value::Bool(false),
        Ty::Message(inner) => Value::Object(message(inner, &[])?),
        // Zero times and nil slices and maps.
        Ty::Time | Ty::MicroTime | Ty::FieldsV1 | Ty::Strings | Ty::Messages(_) | Ty::Map(_) => Value::Null,
    })
}

/// Whether `omitempty` (or a time's `omitzero`) leaves the value out.
fn is_zero(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_i64() == Some(0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
    }
}

/// A `metav1.Time` (`desc` = [`TIME`]) or `metav1.MicroTime` ([`MICRO_TIME`]): a
/// `Timestamp`-shaped message (`seconds` 1, `nanos` 2), empty for the zero time. Time ignores
/// the nanoseconds, as kube does; MicroTime truncates them to microseconds.
fn time(data: &[u8], desc: &'static Message) -> Result<Value> {
    if data.is_empty() {
        return Ok(Value::Null);
    }
    let fields = message(desc, data)?;
    let seconds = fields.get("seconds").and_then(Value::as_i64).unwrap_or(0);
    if !std::ptr::eq(desc, &MICRO_TIME) {
        return rfc3339(desc.name, seconds, None);
    }
    let nanos = fields.get("nanos").and_then(Value::as_i64).unwrap_or(0);
    // Go's time.Unix: nanoseconds outside 0..1e9 carry into the seconds.
    let nanos = nanos - nanos % 1_000;
    let carried = seconds
        .checked_add(nanos.div_euclid(1_000_000_000))
        .ok_or(ProtobufError::TimeRange { message: desc.name, seconds })?;
    rfc3339(desc.name, carried, Some(nanos.rem_euclid(1_000_000_000) / 1_000))
}

/// `2006-01-02T15:04:05Z`, or with `micros` `2006-01-02T15:04:05.000000Z`; Go's zero time is
/// null. A civil date-time rather than a `jiff::Timestamp`, whose range stops a day short of
/// the end of year 9999 (so that every offset can be applied to it); Go's reaches it.
fn rfc3339(message: &'static str, seconds: i64, micros: Option<i64>) -> Result<Value> {
    const EPOCH: civil::DateTime = civil::DateTime::constant(1970, 1, 1, 0, 0, 0, 0);
    let sub_micros = micros.unwrap_or(0);
    if seconds == versa_registry::meta::go_zero_time().as_second() && sub_micros == 0 {
        return Ok(Value::Null);
    }
    let out_of_range = || ProtobufError::TimeRange { message, seconds };
    let nanos = i32::try_from(sub_micros * 1_000).map_err(|_| out_of_range())?;
    let time = EPOCH.checked_add(SignedDuration::new(seconds, nanos)).map_err(|_| out_of_range())?;
    if !(0..=9_999).contains(&time.year()) {
        return Err(out_of_range());
    }
    Ok(Value::String(match micros {
        None => format!("{time:.0}Z"),
        Some(_) => format!("{time:.6}Z"),
    }))
}

/// `metav1.FieldsV1` (`Raw` 1): the JSON text it holds, null when empty (kube's
/// `MarshalJSON`). kube also accepts CBOR there (first byte a CBOR map, tag or null); versa
/// refuses it rather than convert it.
fn fields_v1(data: &[u8]) -> Result<Value> {
    let [raw] = payloads(data, "FieldsV1", [(1, "Raw")])?;
    let raw = raw.unwrap_or_default();
    match raw.first() {
        None => Ok(Value::Null),
        Some(0xf6 | 0xa0..=0xbf | 0xc6..=0xdb) => Err(ProtobufError::FieldsV1Cbor),
        Some(_) => serde_json::from_slice(raw).map_err(|e| ProtobufError::FieldsV1Json(e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn times_at_year_zero() {
        // One second before Go's zero time is still a time (year 0000), and the start of year
        // 0000 the first one.
        for (seconds, expected) in
            [(-62_135_596_801i64, "0000-12-31T23:59:59Z"), (-62_167_219_200, "0000-01-01T00:00:00Z")]
        {
            assert_eq!(rfc3339("Time", seconds, None), Ok(json!(expected)));
        }
        let go_zero_time = versa_registry::meta::go_zero_time().as_second();
        assert_eq!(rfc3339("MicroTime", go_zero_time, Some(1)), Ok(json!("0001-01-01T00:00:00.000001Z")));
        // Leap days, year boundaries and times before 1970, as Go writes them.
        for (seconds, micros, expected) in [
            (951_868_799, None, "2000-02-29T23:59:59Z"),
            (4_107_542_399, None, "2100-02-28T23:59:59Z"),
            (1_735_689_599, Some(999_999), "2024-12-31T23:59:59.999999Z"),
            (1_735_689_600, Some(0), "2025-01-01T00:00:00.000000Z"),
            (-1, None, "1969-12-31T23:59:59Z"),
            (-1, Some(999_999), "1969-12-31T23:59:59.999999Z"),
            (-11_670_998_400, None, "1600-02-29T00:00:00Z"),
        ] {
            assert_eq!(rfc3339("Time", seconds, micros), Ok(json!(expected)), "{seconds} {micros:?}");
        }
    }
}
