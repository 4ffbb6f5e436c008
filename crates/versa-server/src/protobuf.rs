//! Request bodies in Kubernetes' protobuf (`application/vnd.kubernetes.protobuf`), decoded
//! into the JSON the same object has in kube's JSON form. client-go's typed clientsets — so
//! `kubectl create namespace`, and the event recorders of Go operators — send built-in kinds
//! this way, and kube-apiserver accepts it; versa serves a few core kinds itself, so it must
//! read them too. Answers stay JSON (those clients accept both). This module owns the wire
//! format: the envelope (the magic bytes `k8s\0`, then a `runtime.Unknown` whose `typeMeta`
//! names the kind and whose `raw` holds the object), and the messages of the kinds it decodes —
//! v1 `Namespace`, v1 `Event`, v1 `Secret` and meta/v1 `DeleteOptions` (the body of a typed client's
//! DELETE, in whatever group version it names, as kube decodes it) with everything they
//! contain: `ObjectMeta` in full, owner references, managed fields, times.
//!
//! The JSON is what Go's `encoding/json` writes for the struct the bytes decode into: kube's
//! field names; fields tagged `omitempty` left out when zero; fields that are not, and
//! struct-valued ones (which `omitempty` never omits), written even when absent
//! (`"reportingComponent": ""`, `"spec": {}`, a zero time as `null`); pointer fields written
//! exactly when present on the wire (`"gracePeriodSeconds": 0`). `metav1.Time` is RFC 3339 at
//! seconds (its protobuf nanoseconds are dropped, as kube drops them), `metav1.MicroTime` at
//! microseconds (truncated), both in UTC; `metadata.creationTimestamp` is left out when zero
//! (its `omitzero`, kube 1.34); `fieldsV1` is the JSON text it carries; int64s are JSON numbers.
//!
//! Hand-written because no crate decodes Kubernetes' protobuf into JSON values (k8s-openapi's
//! types are JSON-only; prost would generate structs for the nearly 300 messages of upstream's
//! core/v1 and meta/v1 `.proto` files, and the JSON rules above would still have to be written
//! over them), and the set of kinds is small: the field tables below, checked against
//! upstream's `generated.proto` and the json tags of its Go types (excerpts of the `.proto`
//! files, under `proto/k8s/`, let the tests encode real bytes with `protoc`), drive one small
//! reader.
//!
//! Bounds: nothing is dropped — a field number or wire type the tables do not list, a
//! singular field or map key given twice, a string that is not UTF-8, an int32 out of range, a
//! time outside the years 0000–9999, `fieldsV1` that is not JSON (kube also allows CBOR
//! there), an encoded `raw`, or any other kind is an error rather than a guess. Every length
//! is checked against what is left of its buffer, varints stop at ten bytes, and nesting is as
//! deep as the tables (five messages, then `fieldsV1`'s JSON under serde_json's own limit), so
//! no input recurses further or panics; the output grows linearly with the input, which the
//! caller has already bounded ([`crate::codec::MAX_BODY_BYTES`]).

use jiff::{SignedDuration, civil};
use serde_json::{Map, Value};

/// The four bytes every Kubernetes protobuf body starts with.
const MAGIC: &[u8] = b"k8s\0";

/// The values `runtime.Unknown.contentType` may have: unset (how client-go writes it) or
/// protobuf itself.
const PROTOBUF_CONTENT_TYPES: [&str; 2] = ["", "application/vnd.kubernetes.protobuf"];

/// Why a body could not be decoded. Messages name the protobuf message (`ObjectMeta`) and the
/// field (by its JSON name) where the input went wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtobufError {
    #[error("not a Kubernetes protobuf body: it does not start with the bytes \"k8s\\x00\"")]
    Magic,
    #[error("the protobuf body is empty after its \"k8s\\x00\" prefix")]
    Empty,
    #[error("{message}: the protobuf data ends inside a field")]
    Truncated { message: &'static str },
    #[error("{message}: a protobuf varint runs past 64 bits")]
    Varint { message: &'static str },
    #[error("{message}: protobuf field number 0 is invalid")]
    FieldZero { message: &'static str },
    #[error(
        "{message}: field number {number} (wire type {wire}) is not one versa decodes; \
         refusing the object rather than dropping the field"
    )]
    UnknownField { message: &'static str, number: u64, wire: u8 },
    #[error("{message}.{field}: protobuf wire type {wire}, expected {expected}")]
    WireType { message: &'static str, field: &'static str, wire: u8, expected: u8 },
    #[error("{message}.{field} is given more than once")]
    Duplicate { message: &'static str, field: &'static str },
    #[error("{message}.{field}: the key {key:?} is given more than once")]
    DuplicateKey { message: &'static str, field: &'static str, key: String },
    #[error("{message}.{field}: {value} does not fit in an int32")]
    Int32 { message: &'static str, field: &'static str, value: i64 },
    #[error("{message}.{field} is not valid UTF-8")]
    Utf8 { message: &'static str, field: &'static str },
    #[error("{message}: {seconds} seconds from 1970 is outside the years 0000 to 9999")]
    TimeRange { message: &'static str, seconds: i64 },
    #[error("ManagedFieldsEntry.fieldsV1 is CBOR, which versa does not decode")]
    FieldsV1Cbor,
    #[error("ManagedFieldsEntry.fieldsV1 is not valid JSON: {0}")]
    FieldsV1Json(String),
    #[error("runtime.Unknown.contentEncoding is {0:?}: versa decodes only unencoded objects")]
    ContentEncoding(String),
    #[error("runtime.Unknown.contentType is {0:?}: versa decodes only protobuf objects")]
    ContentType(String),
    #[error("the protobuf envelope names no kind")]
    NoKind,
    #[error("versa does not decode kind {kind:?} (apiVersion {api_version:?}) from protobuf; send it as JSON")]
    Kind { api_version: String, kind: String },
}

type Result<T> = std::result::Result<T, ProtobufError>;

/// Decodes a Kubernetes protobuf body (magic, `runtime.Unknown` envelope, object) into the
/// object's JSON form, `kind` and `apiVersion` taken from the envelope.
pub fn decode(body: &[u8]) -> Result<Value> {
    let data = body.strip_prefix(MAGIC).ok_or(ProtobufError::Magic)?;
    if data.is_empty() {
        return Err(ProtobufError::Empty);
    }
    let envelope = Envelope::read(data)?;
    if !envelope.content_encoding.is_empty() {
        return Err(ProtobufError::ContentEncoding(envelope.content_encoding));
    }
    if !PROTOBUF_CONTENT_TYPES.contains(&envelope.content_type.as_str()) {
        return Err(ProtobufError::ContentType(envelope.content_type));
    }
    if envelope.kind.is_empty() {
        return Err(ProtobufError::NoKind);
    }
    let desc = match (envelope.api_version.as_str(), envelope.kind.as_str()) {
        ("v1", "Namespace") => &NAMESPACE,
        ("v1", "Event") => &EVENT,
        ("v1", "Secret") => &SECRET,
        // kube decodes DeleteOptions in every group version (it is one message in all of them).
        (_, "DeleteOptions") => &DELETE_OPTIONS,
        _ => return Err(ProtobufError::Kind { api_version: envelope.api_version, kind: envelope.kind }),
    };
    // TypeMeta's fields, both `omitempty`.
    let mut object = Map::new();
    object.insert("kind".to_owned(), Value::String(envelope.kind));
    if !envelope.api_version.is_empty() {
        object.insert("apiVersion".to_owned(), Value::String(envelope.api_version));
    }
    object.extend(message(desc, envelope.raw)?);
    Ok(Value::Object(object))
}

// -- the wire --------------------------------------------------------------------------------

/// Wire type of varint fields.
const VARINT: u8 = 0;
/// Wire type of length-delimited fields (strings, bytes, messages, map entries).
const LEN: u8 = 2;

/// Reads one message's fields from its buffer; `message` names it in errors.
struct Reader<'a> {
    buf: &'a [u8],
    message: &'static str,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8], message: &'static str) -> Self {
        Reader { buf, message }
    }

    fn varint(&mut self) -> Result<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let (&byte, rest) = self.buf.split_first().ok_or(ProtobufError::Truncated { message: self.message })?;
            self.buf = rest;
            // The tenth byte holds bit 63 only.
            if shift == 63 && byte > 1 {
                break;
            }
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(ProtobufError::Varint { message: self.message })
    }

    /// The next field's number and wire type, or `None` at the end of the message.
    fn key(&mut self) -> Result<Option<(u64, u8)>> {
        if self.buf.is_empty() {
            return Ok(None);
        }
        let key = self.varint()?;
        let number = key >> 3;
        if number == 0 {
            return Err(ProtobufError::FieldZero { message: self.message });
        }
        Ok(Some((number, (key & 7) as u8)))
    }

    /// A length-delimited field's payload.
    fn bytes(&mut self) -> Result<&'a [u8]> {
        let truncated = ProtobufError::Truncated { message: self.message };
        let len = usize::try_from(self.varint()?).map_err(|_| truncated.clone())?;
        if len > self.buf.len() {
            return Err(truncated);
        }
        let (payload, rest) = self.buf.split_at(len);
        self.buf = rest;
        Ok(payload)
    }
}

/// A `string` field's text.
fn string(bytes: &[u8], message: &'static str, field: &'static str) -> Result<String> {
    String::from_utf8(bytes.to_vec()).map_err(|_| ProtobufError::Utf8 { message, field })
}

/// A payload's wire type is the one its field expects, or the error naming both.
fn expect(wire: u8, expected: u8, message: &'static str, field: &'static str) -> Result<()> {
    if wire == expected { Ok(()) } else { Err(ProtobufError::WireType { message, field, wire, expected }) }
}

/// `runtime.Unknown`, the envelope: `typeMeta` (1: `apiVersion` 1, `kind` 2), `raw` (2),
/// `contentEncoding` (3), `contentType` (4). client-go writes all four, the strings empty.
struct Envelope<'a> {
    api_version: String,
    kind: String,
    raw: &'a [u8],
    content_encoding: String,
    content_type: String,
}

impl<'a> Envelope<'a> {
    fn read(data: &'a [u8]) -> Result<Self> {
        const NAME: &str = "runtime.Unknown";
        let [type_meta, raw, content_encoding, content_type] =
            payloads(data, NAME, [(1, "typeMeta"), (2, "raw"), (3, "contentEncoding"), (4, "contentType")])?;
        let type_meta = message(&TYPE_META, type_meta.unwrap_or_default())?;
        let text = |key: &str| type_meta.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
        Ok(Envelope {
            api_version: text("apiVersion"),
            kind: text("kind"),
            raw: raw.unwrap_or_default(),
            content_encoding: string(content_encoding.unwrap_or_default(), NAME, "contentEncoding")?,
            content_type: string(content_type.unwrap_or_default(), NAME, "contentType")?,
        })
    }
}

/// The payloads of a message whose fields are all singular and length-delimited
/// (`runtime.Unknown`, `FieldsV1`), one per entry of `fields` (number, name), `None` when
/// absent; any other field, or one given twice, is an error.
fn payloads<'a, const N: usize>(
    data: &'a [u8],
    message: &'static str,
    fields: [(u64, &'static str); N],
) -> Result<[Option<&'a [u8]>; N]> {
    let mut found = [None; N];
    let mut reader = Reader::new(data, message);
    while let Some((number, wire)) = reader.key()? {
        let Some(((_, field), slot)) = fields.iter().zip(found.iter_mut()).find(|((n, _), _)| *n == number) else {
            return Err(ProtobufError::UnknownField { message, number, wire });
        };
        expect(wire, LEN, message, field)?;
        let payload = reader.bytes()?;
        if slot.replace(payload).is_some() {
            return Err(ProtobufError::Duplicate { message, field });
        }
    }
    Ok(found)
}

// -- the messages ----------------------------------------------------------------------------

/// How a field is read from the wire and what it becomes in JSON.
#[derive(Debug, Clone, Copy)]
enum Ty {
    /// `string` (varint length, UTF-8 checked): a JSON string.
    Str,
    /// `int64`: a JSON number.
    Int64,
    /// `int32`, refused outside its range (a 64-bit varint on the wire).
    Int32,
    /// `bool`: any non-zero varint is true, as in Go.
    Bool,
    /// `metav1.Time`: RFC 3339 at seconds, or null when empty or Go's zero time.
    Time,
    /// `metav1.MicroTime`: RFC 3339 at microseconds, or null likewise.
    MicroTime,
    /// `metav1.FieldsV1`: the JSON its `Raw` bytes hold, null when they are empty.
    FieldsV1,
    /// A singular message: a JSON object.
    Message(&'static Message),
    /// `repeated string`, one element per occurrence (never packed).
    Strings,
    /// A repeated message.
    Messages(&'static Message),
    /// `map<string, string>` (or `map<string, bytes>` with [`BYTES_ENTRY`]): repeated entries
    /// (key 1, value 2), each key once.
    Map(&'static Message),
    /// `bytes`: a JSON string in standard base64, as Go writes `[]byte`.
    Bytes,
}

impl Ty {
    fn wire(self) -> u8 {
        match self {
            Ty::Int64 | Ty::Int32 | Ty::Bool => VARINT,
            _ => LEN,
        }
    }
}

/// When Go's `encoding/json` writes a field of the struct the message decodes into.
#[derive(Debug, Clone, Copy)]
enum Rule {
    /// `omitempty` on a string, number, bool, slice or map, or `omitzero` on a time: written
    /// unless zero or empty.
    Omit,
    /// No `omitempty`, or `omitempty` on a struct (which never omits it): always written, its
    /// zero value when absent (`""`, `{}` with the struct's own defaults, a time's null).
    Keep,
    /// A pointer with `omitempty`: written exactly when the field is on the wire.
    Pointer,
}

/// One field: its number, its JSON name, its type and when it is written.
#[derive(Debug)]
struct Field {
    number: u64,
    json: &'static str,
    ty: Ty,
    rule: Rule,
}

/// A message: its protobuf name (for errors) and its fields, in the Go struct's order.
#[derive(Debug)]
struct Message {
    name: &'static str,
    fields: &'static [Field],
}

const fn field(number: u64, json: &'static str, ty: Ty, rule: Rule) -> Field {
    Field { number, json, ty, rule }
}

use Rule::{Keep, Omit, Pointer};

// Field numbers as in upstream's generated.proto: k8s.io/apimachinery pkg/runtime (TypeMeta),
// pkg/apis/meta/v1 (ObjectMeta to Preconditions) and k8s.io/api core/v1 (the rest); the
// rules follow the json tags of the Go types.

static TYPE_META: Message = Message {
    name: "runtime.TypeMeta",
    fields: &[field(1, "apiVersion", Ty::Str, Keep), field(2, "kind", Ty::Str, Keep)],
};

static OBJECT_META: Message = Message {
    name: "ObjectMeta",
    fields: &[
        field(1, "name", Ty::Str, Omit),
        field(2, "generateName", Ty::Str, Omit),
        field(3, "namespace", Ty::Str, Omit),
        field(4, "selfLink", Ty::Str, Omit),
        field(5, "uid", Ty::Str, Omit),
        field(6, "resourceVersion", Ty::Str, Omit),
        field(7, "generation", Ty::Int64, Omit),
        // `omitempty,omitzero` since kube 1.34 (before it, a zero time was `null`).
        field(8, "creationTimestamp", Ty::Time, Omit),
        field(9, "deletionTimestamp", Ty::Time, Pointer),
        field(10, "deletionGracePeriodSeconds", Ty::Int64, Pointer),
        field(11, "labels", Ty::Map(&LABELS_ENTRY), Omit),
        field(12, "annotations", Ty::Map(&ANNOTATIONS_ENTRY), Omit),
        field(13, "ownerReferences", Ty::Messages(&OWNER_REFERENCE), Omit),
        field(14, "finalizers", Ty::Strings, Omit),
        // 15 (initializers) and 16 (clusterName) are gone upstream.
        field(17, "managedFields", Ty::Messages(&MANAGED_FIELDS_ENTRY), Omit),
    ],
};

static LABELS_ENTRY: Message = Message { name: "ObjectMeta.LabelsEntry", fields: MAP_ENTRY };
static ANNOTATIONS_ENTRY: Message = Message { name: "ObjectMeta.AnnotationsEntry", fields: MAP_ENTRY };
static MAP_ENTRY: &[Field] = &[field(1, "key", Ty::Str, Keep), field(2, "value", Ty::Str, Keep)];

static OWNER_REFERENCE: Message = Message {
    name: "OwnerReference",
    fields: &[
        field(5, "apiVersion", Ty::Str, Keep),
        field(1, "kind", Ty::Str, Keep),
        field(3, "name", Ty::Str, Keep),
        field(4, "uid", Ty::Str, Keep),
        field(6, "controller", Ty::Bool, Pointer),
        field(7, "blockOwnerDeletion", Ty::Bool, Pointer),
    ],
};

static MANAGED_FIELDS_ENTRY: Message = Message {
    name: "ManagedFieldsEntry",
    fields: &[
        field(1, "manager", Ty::Str, Omit),
        field(2, "operation", Ty::Str, Omit),
        field(3, "apiVersion", Ty::Str, Omit),
        field(4, "time", Ty::Time, Pointer),
        // 5 (fields) is gone upstream.
        field(6, "fieldsType", Ty::Str, Omit),
        field(7, "fieldsV1", Ty::FieldsV1, Pointer),
        field(8, "subresource", Ty::Str, Omit),
    ],
};

static TIME: Message = Message { name: "Time", fields: TIMESTAMP };
static MICRO_TIME: Message = Message { name: "MicroTime", fields: TIMESTAMP };
static TIMESTAMP: &[Field] = &[field(1, "seconds", Ty::Int64, Keep), field(2, "nanos", Ty::Int32, Keep)];

static DELETE_OPTIONS: Message = Message {
    name: "DeleteOptions",
    fields: &[
        field(1, "gracePeriodSeconds", Ty::Int64, Pointer),
        field(2, "preconditions", Ty::Message(&PRECONDITIONS), Pointer),
        field(3, "orphanDependents", Ty::Bool, Pointer),
        field(4, "propagationPolicy", Ty::Str, Pointer),
        field(5, "dryRun", Ty::Strings, Omit),
        field(6, "ignoreStoreReadErrorWithClusterBreakingPotential", Ty::Bool, Pointer),
    ],
};

static PRECONDITIONS: Message = Message {
    name: "Preconditions",
    fields: &[field(1, "uid", Ty::Str, Pointer), field(2, "resourceVersion", Ty::Str, Pointer)],
};

/// v1 `Secret` (helm keeps its releases in Secrets, through client-go's typed client).
static SECRET: Message = Message {
    name: "Secret",
    fields: &[
        field(1, "metadata", Ty::Message(&OBJECT_META), Keep),
        field(2, "data", Ty::Map(&BYTES_ENTRY), Omit),
        field(3, "type", Ty::Str, Omit),
        field(4, "stringData", Ty::Map(&STRING_DATA_ENTRY), Omit),
        field(5, "immutable", Ty::Bool, Pointer),
    ],
};

static BYTES_ENTRY: Message =
    Message { name: "Secret.DataEntry", fields: &[field(1, "key", Ty::Str, Keep), field(2, "value", Ty::Bytes, Keep)] };
static STRING_DATA_ENTRY: Message = Message { name: "Secret.StringDataEntry", fields: MAP_ENTRY };

static NAMESPACE: Message = Message {
    name: "Namespace",
    fields: &[
        field(1, "metadata", Ty::Message(&OBJECT_META), Keep),
        field(2, "spec", Ty::Message(&NAMESPACE_SPEC), Keep),
        field(3, "status", Ty::Message(&NAMESPACE_STATUS), Keep),
    ],
};

static NAMESPACE_SPEC: Message =
    Message { name: "NamespaceSpec", fields: &[field(1, "finalizers", Ty::Strings, Omit)] };

static NAMESPACE_STATUS: Message = Message {
    name: "NamespaceStatus",
    fields: &[field(1, "phase", Ty::Str, Omit), field(2, "conditions", Ty::Messages(&NAMESPACE_CONDITION), Omit)],
};

static NAMESPACE_CONDITION: Message = Message {
    name: "NamespaceCondition",
    fields: &[
        field(1, "type", Ty::Str, Keep),
        field(2, "status", Ty::Str, Keep),
        // 3 is unused upstream.
        field(4, "lastTransitionTime", Ty::Time, Keep),
        field(5, "reason", Ty::Str, Omit),
        field(6, "message", Ty::Str, Omit),
    ],
};

static EVENT: Message = Message {
    name: "Event",
    fields: &[
        field(1, "metadata", Ty::Message(&OBJECT_META), Keep),
        field(2, "involvedObject", Ty::Message(&OBJECT_REFERENCE), Keep),
        field(3, "reason", Ty::Str, Omit),
        field(4, "message", Ty::Str, Omit),
        field(5, "source", Ty::Message(&EVENT_SOURCE), Keep),
        field(6, "firstTimestamp", Ty::Time, Keep),
        field(7, "lastTimestamp", Ty::Time, Keep),
        field(8, "count", Ty::Int32, Omit),
        field(9, "type", Ty::Str, Omit),
        field(10, "eventTime", Ty::MicroTime, Keep),
        field(11, "series", Ty::Message(&EVENT_SERIES), Pointer),
        field(12, "action", Ty::Str, Omit),
        field(13, "related", Ty::Message(&OBJECT_REFERENCE), Pointer),
        field(14, "reportingComponent", Ty::Str, Keep),
        field(15, "reportingInstance", Ty::Str, Keep),
    ],
};

static OBJECT_REFERENCE: Message = Message {
    name: "ObjectReference",
    fields: &[
        field(1, "kind", Ty::Str, Omit),
        field(2, "namespace", Ty::Str, Omit),
        field(3, "name", Ty::Str, Omit),
        field(4, "uid", Ty::Str, Omit),
        field(5, "apiVersion", Ty::Str, Omit),
        field(6, "resourceVersion", Ty::Str, Omit),
        field(7, "fieldPath", Ty::Str, Omit),
    ],
};

static EVENT_SOURCE: Message =
    Message { name: "EventSource", fields: &[field(1, "component", Ty::Str, Omit), field(2, "host", Ty::Str, Omit)] };

static EVENT_SERIES: Message = Message {
    name: "EventSeries",
    fields: &[field(1, "count", Ty::Int32, Omit), field(2, "lastObservedTime", Ty::MicroTime, Keep)],
};

// -- decoding ------------------------------------------------------------------------------

/// Decodes `data` as `desc` into its JSON object.
fn message(desc: &'static Message, data: &[u8]) -> Result<Map<String, Value>> {
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
    use super::*;
    use serde_json::json;

    // -- real bytes, from protoc and the excerpted upstream schema --------------------------

    /// `protoc --encode=<message>` of text-format `text` against `proto/k8s/` (protoc is a
    /// build requirement of the workspace: hack/install-deps.sh).
    fn protoc(message: &str, text: &str) -> Vec<u8> {
        use std::io::Write as _;
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/proto/k8s");
        let mut child = std::process::Command::new("protoc")
            .arg(format!("-I{dir}"))
            .arg(format!("--encode={message}"))
            .args(["core.proto", "meta.proto", "runtime.proto"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("protoc must be installed (hack/install-deps.sh)");
        child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success(), "protoc --encode={message}: {}", String::from_utf8_lossy(&output.stderr));
        output.stdout
    }

    /// A text-format string literal holding `bytes`.
    fn text_bytes(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("\\{b:03o}")).collect()
    }

    /// The body client-go sends: the magic, then the `runtime.Unknown` (encoded by protoc, its
    /// empty strings written as client-go writes them) around `raw`.
    fn body(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
        let unknown = protoc(
            "k8s.io.apimachinery.pkg.runtime.Unknown",
            &format!(
                "typeMeta {{ apiVersion: {api_version:?} kind: {kind:?} }} raw: \"{}\" contentEncoding: \"\" contentType: \"\"",
                text_bytes(raw)
            ),
        );
        [MAGIC, &unknown].concat()
    }

    const CORE: &str = "k8s.io.api.core.v1";
    const META: &str = "k8s.io.apimachinery.pkg.apis.meta.v1";

    /// What `kubectl create namespace team` (v1.32) sent, from its `-v=9` log: every field of
    /// ObjectMeta up to creationTimestamp written though empty, an empty spec, a status with
    /// an empty phase, empty contentEncoding and contentType.
    const KUBECTL_CREATE_NAMESPACE: &[u8] = b"k8s\x00\x0a\x0f\x0a\x02v1\x12\x09Namespace\x12\x1c\x0a\x14\x0a\x04team\
        \x12\x00\x1a\x00\x22\x00\x2a\x00\x32\x00\x38\x00\x42\x00\x12\x00\x1a\x02\x0a\x00\x1a\x00\x22\x00";

    #[test]
    fn decodes_what_clients_send() {
        // (case, message, apiVersion, kind, text-format object, expected JSON)
        let cases: &[(&str, &str, &str, &str, &str, Value)] = &[
            (
                "a Secret as helm stores a release (bytes in base64, immutable as sent)",
                "Secret",
                "v1",
                "Secret",
                r#"
                metadata { name: "sh.helm.release.v1.demo.v1" namespace: "default" labels { key: "owner" value: "helm" } }
                data { key: "release" value: "H4sI\000\377" }
                type: "helm.sh/release.v1"
                stringData { key: "note" value: "plain" }
                immutable: false
                "#,
                json!({"kind": "Secret", "apiVersion": "v1",
                       "metadata": {"name": "sh.helm.release.v1.demo.v1", "namespace": "default", "labels": {"owner": "helm"}},
                       "data": {"release": "SDRzSQD/"}, "type": "helm.sh/release.v1",
                       "stringData": {"note": "plain"}, "immutable": false}),
            ),
            (
                "kubectl create namespace",
                "Namespace",
                "v1",
                "Namespace",
                r#"metadata { name: "team" }"#,
                json!({"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": "team"}, "spec": {}, "status": {}}),
            ),
            (
                "namespace with every ObjectMeta field",
                "Namespace",
                "v1",
                "Namespace",
                r#"
                metadata {
                  name: "team" generateName: "team-" namespace: "" selfLink: "/api/v1/namespaces/team"
                  uid: "6b1a3c3e-0000-4000-8000-000000000001" resourceVersion: "42" generation: 3
                  creationTimestamp { seconds: 1700000000 nanos: 999 }
                  deletionTimestamp { seconds: 1700000600 }
                  deletionGracePeriodSeconds: 0
                  labels { key: "team" value: "a" }
                  labels { key: "kubernetes.io/metadata.name" value: "team" }
                  annotations { key: "note" value: "" }
                  ownerReferences { apiVersion: "v1" kind: "ConfigMap" name: "owner" uid: "u-1" controller: true blockOwnerDeletion: false }
                  ownerReferences { kind: "Secret" }
                  finalizers: "example.com/a" finalizers: "example.com/b"
                  managedFields {
                    manager: "kubectl-create" operation: "Update" apiVersion: "v1" time { seconds: 1700000000 }
                    fieldsType: "FieldsV1" fieldsV1 { Raw: "{\"f:metadata\":{\"f:labels\":{\".\":{},\"f:team\":{}}}}" }
                  }
                  managedFields { manager: "versa" operation: "Apply" subresource: "status" fieldsV1 { } }
                }
                spec { finalizers: "kubernetes" }
                status {
                  phase: "Terminating"
                  conditions {
                    type: "NamespaceDeletionContentFailure" status: "False" lastTransitionTime { seconds: 1700000601 }
                    reason: "ContentDeleted" message: "All content successfully deleted"
                  }
                  conditions { type: "NamespaceFinalizersRemaining" status: "True" }
                }"#,
                json!({
                    "kind": "Namespace",
                    "apiVersion": "v1",
                    "metadata": {
                        "name": "team",
                        "generateName": "team-",
                        "selfLink": "/api/v1/namespaces/team",
                        "uid": "6b1a3c3e-0000-4000-8000-000000000001",
                        "resourceVersion": "42",
                        "generation": 3,
                        "creationTimestamp": "2023-11-14T22:13:20Z",
                        "deletionTimestamp": "2023-11-14T22:23:20Z",
                        "deletionGracePeriodSeconds": 0,
                        "labels": {"team": "a", "kubernetes.io/metadata.name": "team"},
                        "annotations": {"note": ""},
                        "ownerReferences": [
                            {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": "u-1",
                             "controller": true, "blockOwnerDeletion": false},
                            {"apiVersion": "", "kind": "Secret", "name": "", "uid": ""},
                        ],
                        "finalizers": ["example.com/a", "example.com/b"],
                        "managedFields": [
                            {"manager": "kubectl-create", "operation": "Update", "apiVersion": "v1",
                             "time": "2023-11-14T22:13:20Z", "fieldsType": "FieldsV1",
                             "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:team": {}}}}},
                            {"manager": "versa", "operation": "Apply", "fieldsV1": null, "subresource": "status"},
                        ],
                    },
                    "spec": {"finalizers": ["kubernetes"]},
                    "status": {
                        "phase": "Terminating",
                        "conditions": [
                            {"type": "NamespaceDeletionContentFailure", "status": "False",
                             "lastTransitionTime": "2023-11-14T22:23:21Z", "reason": "ContentDeleted",
                             "message": "All content successfully deleted"},
                            {"type": "NamespaceFinalizersRemaining", "status": "True", "lastTransitionTime": null},
                        ],
                    },
                }),
            ),
            (
                "event with every field",
                "Event",
                "v1",
                "Event",
                r#"
                metadata { name: "web.17a" namespace: "default" }
                involvedObject {
                  kind: "Pod" namespace: "default" name: "web" uid: "u-2" apiVersion: "v1"
                  resourceVersion: "7" fieldPath: "spec.containers{app}"
                }
                reason: "Pulled" message: "Container image pulled"
                source { component: "kubelet" host: "node-1" }
                firstTimestamp { seconds: 1700000000 } lastTimestamp { seconds: 1700000060 }
                count: 2 type: "Normal"
                eventTime { seconds: 1700000000 nanos: 123456789 }
                series { count: 2 lastObservedTime { seconds: 1700000060 nanos: 5000 } }
                action: "Pulling"
                related { kind: "Node" name: "node-1" apiVersion: "v1" }
                reportingComponent: "kubelet" reportingInstance: "node-1""#,
                json!({
                    "kind": "Event",
                    "apiVersion": "v1",
                    "metadata": {"name": "web.17a", "namespace": "default"},
                    "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web", "uid": "u-2",
                                       "apiVersion": "v1", "resourceVersion": "7", "fieldPath": "spec.containers{app}"},
                    "reason": "Pulled",
                    "message": "Container image pulled",
                    "source": {"component": "kubelet", "host": "node-1"},
                    "firstTimestamp": "2023-11-14T22:13:20Z",
                    "lastTimestamp": "2023-11-14T22:14:20Z",
                    "count": 2,
                    "type": "Normal",
                    "eventTime": "2023-11-14T22:13:20.123456Z",
                    "series": {"count": 2, "lastObservedTime": "2023-11-14T22:14:20.000005Z"},
                    "action": "Pulling",
                    "related": {"kind": "Node", "name": "node-1", "apiVersion": "v1"},
                    "reportingComponent": "kubelet",
                    "reportingInstance": "node-1",
                }),
            ),
            (
                // What Go writes for an Event whose fields are all zero.
                "empty event",
                "Event",
                "v1",
                "Event",
                "",
                json!({
                    "kind": "Event", "apiVersion": "v1", "metadata": {}, "involvedObject": {}, "source": {},
                    "firstTimestamp": null, "lastTimestamp": null, "eventTime": null,
                    "reportingComponent": "", "reportingInstance": "",
                }),
            ),
            (
                "times at their edges",
                "Event",
                "v1",
                "Event",
                r#"
                metadata { creationTimestamp { seconds: 253402300799 } deletionTimestamp { } }
                firstTimestamp { seconds: 0 }
                lastTimestamp { seconds: 951782400 }
                count: -1
                eventTime { seconds: -62135596800 }
                series { count: 0 lastObservedTime { seconds: 10 nanos: -1500 } }"#,
                json!({
                    "kind": "Event", "apiVersion": "v1",
                    // A present but empty deletionTimestamp is a pointer to the zero time.
                    "metadata": {"creationTimestamp": "9999-12-31T23:59:59Z", "deletionTimestamp": null},
                    "involvedObject": {}, "source": {},
                    "firstTimestamp": "1970-01-01T00:00:00Z",
                    "lastTimestamp": "2000-02-29T00:00:00Z",
                    "count": -1,
                    // Go's zero time.
                    "eventTime": null,
                    // Negative nanoseconds borrow from the seconds, as Go's time.Unix does.
                    "series": {"lastObservedTime": "1970-01-01T00:00:09.999999Z"},
                    "reportingComponent": "", "reportingInstance": "",
                }),
            ),
            (
                "delete options",
                "DeleteOptions",
                "v1",
                "DeleteOptions",
                r#"
                gracePeriodSeconds: 0 preconditions { uid: "u-1" resourceVersion: "42" }
                propagationPolicy: "Foreground" dryRun: "All"
                ignoreStoreReadErrorWithClusterBreakingPotential: false"#,
                json!({
                    "kind": "DeleteOptions", "apiVersion": "v1",
                    "gracePeriodSeconds": 0,
                    "preconditions": {"uid": "u-1", "resourceVersion": "42"},
                    "propagationPolicy": "Foreground",
                    "dryRun": ["All"],
                    "ignoreStoreReadErrorWithClusterBreakingPotential": false,
                }),
            ),
            (
                "delete options in another group version",
                "DeleteOptions",
                "meta.k8s.io/v1",
                "DeleteOptions",
                r#"preconditions { uid: "" } orphanDependents: true gracePeriodSeconds: 30"#,
                json!({
                    "kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1",
                    "gracePeriodSeconds": 30, "preconditions": {"uid": ""}, "orphanDependents": true,
                }),
            ),
            ("empty delete options", "DeleteOptions", "", "DeleteOptions", "", json!({"kind": "DeleteOptions"})),
        ];
        for (case, message, api_version, kind, text, expected) in cases {
            let package = if *message == "DeleteOptions" { META } else { CORE };
            let raw = protoc(&format!("{package}.{message}"), text);
            assert_eq!(decode(&body(api_version, kind, &raw)).as_ref(), Ok(expected), "{case}");
        }
    }

    #[test]
    fn decodes_kubectl_bytes() {
        assert_eq!(
            decode(KUBECTL_CREATE_NAMESPACE),
            Ok(
                json!({"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": "team"}, "spec": {}, "status": {}})
            )
        );
        // protoc writes the same object more tersely; both read alike.
        let terse = body("v1", "Namespace", &protoc(&format!("{CORE}.Namespace"), r#"metadata { name: "team" }"#));
        assert_ne!(terse, KUBECTL_CREATE_NAMESPACE);
        assert_eq!(decode(&terse), decode(KUBECTL_CREATE_NAMESPACE));
    }

    // -- refusals ------------------------------------------------------------------------

    fn varint(mut value: u64) -> Vec<u8> {
        let mut out = Vec::new();
        while value >= 0x80 {
            out.push((value as u8) | 0x80);
            value >>= 7;
        }
        out.push(value as u8);
        out
    }

    /// A length-delimited field.
    fn ld(number: u64, payload: &[u8]) -> Vec<u8> {
        [varint(number << 3 | 2), varint(payload.len() as u64), payload.to_vec()].concat()
    }

    /// A varint field.
    fn vi(number: u64, value: u64) -> Vec<u8> {
        [varint(number << 3), varint(value)].concat()
    }

    /// The envelope as [`body`] builds it, by hand (a test checks the two agree).
    fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
        let type_meta = [ld(1, api_version.as_bytes()), ld(2, kind.as_bytes())].concat();
        [MAGIC.to_vec(), ld(1, &type_meta), ld(2, raw), ld(3, b""), ld(4, b"")].concat()
    }

    fn namespace(metadata: &[u8]) -> Vec<u8> {
        envelope("v1", "Namespace", &ld(1, metadata))
    }

    #[test]
    fn hand_built_envelope_is_protocs() {
        let raw = protoc(&format!("{CORE}.Namespace"), r#"metadata { name: "team" }"#);
        assert_eq!(envelope("v1", "Namespace", &raw), body("v1", "Namespace", &raw));
        assert_eq!(namespace(&ld(1, b"team")), envelope("v1", "Namespace", &raw));
    }

    #[test]
    fn refuses() {
        use ProtobufError as E;
        let name = ld(1, b"team");
        let short = &KUBECTL_CREATE_NAMESPACE[..KUBECTL_CREATE_NAMESPACE.len() - 1];
        let cut_raw = &KUBECTL_CREATE_NAMESPACE[..30];
        let time = |seconds: u64| namespace(&[name.clone(), ld(8, &vi(1, seconds))].concat());
        let fields_v1 = |raw: &[u8]| namespace(&ld(17, &ld(7, &ld(1, raw))));
        let cases: Vec<(&str, Vec<u8>, ProtobufError)> = vec![
            ("JSON", br#"{"kind":"Namespace"}"#.to_vec(), E::Magic),
            ("short magic", b"k8s".to_vec(), E::Magic),
            ("wrong magic", [b"k8s\x01".as_slice(), &KUBECTL_CREATE_NAMESPACE[4..]].concat(), E::Magic),
            ("nothing after the magic", MAGIC.to_vec(), E::Empty),
            ("last byte cut", short.to_vec(), E::Truncated { message: "runtime.Unknown" }),
            ("raw cut", cut_raw.to_vec(), E::Truncated { message: "runtime.Unknown" }),
            (
                "metadata longer than raw",
                envelope("v1", "Namespace", &[0x0a, 0x14, 0x0a, 0x04, b't', b'e']),
                E::Truncated { message: "Namespace" },
            ),
            ("string longer than metadata", namespace(&[0x0a, 0x09, b't']), E::Truncated { message: "ObjectMeta" }),
            (
                "varint past 64 bits",
                namespace(&[vec![0x38], vec![0xff; 9], vec![0x02]].concat()),
                E::Varint { message: "ObjectMeta" },
            ),
            ("field number 0", namespace(&[0x02, 0x00]), E::FieldZero { message: "ObjectMeta" }),
            (
                "removed ObjectMeta field (clusterName)",
                namespace(&[name.clone(), ld(16, b"c1")].concat()),
                E::UnknownField { message: "ObjectMeta", number: 16, wire: 2 },
            ),
            (
                "unknown Namespace field",
                envelope("v1", "Namespace", &vi(4, 1)),
                E::UnknownField { message: "Namespace", number: 4, wire: 0 },
            ),
            (
                "unknown fixed64 field",
                envelope("v1", "Namespace", &[0x49, 0, 0, 0, 0, 0, 0, 0, 0]),
                E::UnknownField { message: "Namespace", number: 9, wire: 1 },
            ),
            (
                "unknown envelope field",
                [KUBECTL_CREATE_NAMESPACE, &ld(5, b"x")].concat(),
                E::UnknownField { message: "runtime.Unknown", number: 5, wire: 2 },
            ),
            (
                "unknown Time field",
                namespace(&ld(8, &vi(3, 1))),
                E::UnknownField { message: "Time", number: 3, wire: 0 },
            ),
            (
                "name as a varint",
                namespace(&vi(1, 7)),
                E::WireType { message: "ObjectMeta", field: "name", wire: 0, expected: 2 },
            ),
            (
                "generation as bytes",
                namespace(&ld(7, b"7")),
                E::WireType { message: "ObjectMeta", field: "generation", wire: 2, expected: 0 },
            ),
            (
                "name twice",
                namespace(&[name.clone(), ld(1, b"other")].concat()),
                E::Duplicate { message: "ObjectMeta", field: "name" },
            ),
            (
                "raw twice",
                [KUBECTL_CREATE_NAMESPACE, &ld(2, b"")].concat(),
                E::Duplicate { message: "runtime.Unknown", field: "raw" },
            ),
            (
                "label key twice",
                namespace(
                    &[ld(11, &[ld(1, b"a"), ld(2, b"1")].concat()), ld(11, &[ld(1, b"a"), ld(2, b"2")].concat())]
                        .concat(),
                ),
                E::DuplicateKey { message: "ObjectMeta", field: "labels", key: "a".to_owned() },
            ),
            (
                "count beyond int32",
                envelope("v1", "Event", &vi(8, 1 << 40)),
                E::Int32 { message: "Event", field: "count", value: 1 << 40 },
            ),
            ("name not UTF-8", namespace(&ld(1, &[0xff])), E::Utf8 { message: "ObjectMeta", field: "name" }),
            ("year 10000", time(253_402_300_800), E::TimeRange { message: "Time", seconds: 253_402_300_800 }),
            ("year -1", time(-62_167_219_201i64 as u64), E::TimeRange { message: "Time", seconds: -62_167_219_201 }),
            ("fieldsV1 in CBOR", fields_v1(&[0xa1, 0x61, b'a', 0xa0]), E::FieldsV1Cbor),
            (
                "fieldsV1 not JSON",
                fields_v1(b"{\"f:a\""),
                E::FieldsV1Json("EOF while parsing an object at line 1 column 6".to_owned()),
            ),
            (
                "gzip",
                [MAGIC, &ld(1, &ld(2, b"Namespace")), &ld(3, b"gzip")].concat(),
                E::ContentEncoding("gzip".to_owned()),
            ),
            (
                "JSON inside",
                [MAGIC, &ld(1, &ld(2, b"Namespace")), &ld(4, b"application/json")].concat(),
                E::ContentType("application/json".to_owned()),
            ),
            ("no kind", envelope("v1", "", b""), E::NoKind),
            ("Pod", envelope("v1", "Pod", b""), E::Kind { api_version: "v1".to_owned(), kind: "Pod".to_owned() }),
            (
                "Namespace in another version",
                envelope("v2", "Namespace", b""),
                E::Kind { api_version: "v2".to_owned(), kind: "Namespace".to_owned() },
            ),
        ];
        for (case, input, expected) in cases {
            assert_eq!(decode(&input), Err(expected), "{case}");
        }
    }

    #[test]
    fn error_messages_name_what_went_wrong() {
        let pod = decode(&envelope("v1", "Pod", b"")).unwrap_err().to_string();
        assert_eq!(pod, r#"versa does not decode kind "Pod" (apiVersion "v1") from protobuf; send it as JSON"#);
        let unknown = decode(&namespace(&ld(16, b"c1"))).unwrap_err().to_string();
        assert_eq!(
            unknown,
            "ObjectMeta: field number 16 (wire type 2) is not one versa decodes; refusing the object rather than \
             dropping the field"
        );
    }

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
