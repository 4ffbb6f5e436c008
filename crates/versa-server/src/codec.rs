//! Request bodies in, response bodies out.
//!
//! Bodies are JSON or YAML (by `Content-Type`) — for the core kinds also Kubernetes' protobuf,
//! decoded by `protobuf.rs` — bounded before parsing: at most
//! [`MAX_BODY_BYTES`] (3 MiB, kube-apiserver's `MaxRequestBodyBytes`; more is 413) and
//! [`MAX_DEPTH`] levels of nesting (deeper is 400, never a stack overflow). Decoding also reports
//! duplicate object keys by path, which `fieldValidation` turns into warnings or errors exactly as
//! kube-apiserver's strict decoder does. Responses are JSON unless the client asks for YAML.

use std::fmt;

use http::HeaderMap;
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::status::Status;

/// Largest request body accepted (kube-apiserver's default `MaxRequestBodyBytes`).
pub const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

/// Deepest nesting accepted in a request body. serde_json refuses more than 128 levels; YAML is
/// held to the same bound so that every recursive walk over an object runs on bounded depth.
pub const MAX_DEPTH: usize = 128;

/// Stack size for threads that decode and process request bodies: a body nested
/// [`MAX_DEPTH`] levels deep takes a few MiB of stack in the YAML decoder and the schema walks
/// (measured: about 25 KiB per level in an unoptimised build), so 2 MiB (tokio's default) is not
/// enough; 32 MiB leaves a wide margin.
pub const WORKER_STACK_BYTES: usize = 32 * 1024 * 1024;

/// A decoded body and the keys that appeared more than once in it (dotted paths, later values
/// win as in Kubernetes' decoder).
#[derive(Debug, Clone, PartialEq)]
pub struct Decoded {
    pub value: Value,
    pub duplicates: Vec<String>,
}

/// The body formats a request may carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    Yaml,
    /// Kubernetes' protobuf (`application/vnd.kubernetes.protobuf`), for the core kinds only:
    /// what client-go's typed clients send (`kubectl create namespace`, event recorders).
    /// Decoded by `protobuf.rs`, which refuses any field it does not know.
    Protobuf,
}

/// Media types accepted for request bodies, for the 415 message.
const ACCEPTED: &str = "application/json, application/yaml";

/// The format of a request body from its `Content-Type` (absent: JSON, as kubectl always sets
/// one); anything else is 415.
pub fn body_format(headers: &HeaderMap) -> Result<Format, Status> {
    let Some(ct) = headers.get(http::header::CONTENT_TYPE) else { return Ok(Format::Json) };
    let media = ct.to_str().unwrap_or("").split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    match media.as_str() {
        "application/json" | "" => Ok(Format::Json),
        "application/yaml" => Ok(Format::Yaml),
        other => Err(Status::unsupported_media_type(other, ACCEPTED)),
    }
}

/// The format of a request body to a core kind (`registry::Builtin`): JSON, YAML, or
/// Kubernetes' protobuf as kube-apiserver accepts it for its compiled kinds.
pub fn body_format_builtin(headers: &HeaderMap) -> Result<Format, Status> {
    let media = headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|ct| ct.to_str().ok())
        .and_then(|ct| ct.split(';').next())
        .map(|m| m.trim().to_ascii_lowercase());
    match media.as_deref() {
        Some("application/vnd.kubernetes.protobuf") => Ok(Format::Protobuf),
        _ => body_format(headers).map_err(|e| Status { message: e.message.replace(ACCEPTED, ACCEPTED_BUILTIN), ..e }),
    }
}

/// Media types accepted for bodies of the core kinds.
const ACCEPTED_BUILTIN: &str = "application/json, application/yaml, application/vnd.kubernetes.protobuf";

/// Decodes a body in `format`; errors are 413 or 400 with the decoder's message.
pub fn decode(body: &[u8], format: Format) -> Result<Decoded, Status> {
    decode_raw(body, format).map_err(|e| match e {
        DecodeError::TooLarge => Status::too_large(MAX_BODY_BYTES),
        DecodeError::Malformed(message) => Status::bad_request(message),
    })
}

/// Decodes the body of a create or update of a `kind` object: a malformed body is kube's
/// `the object provided is unrecognized (must be of type <Kind>): <error> (<body start>)`.
pub fn decode_object(body: &[u8], format: Format, kind: &str) -> Result<Decoded, Status> {
    decode_raw(body, format).map_err(|e| match e {
        DecodeError::TooLarge => Status::too_large(MAX_BODY_BYTES),
        DecodeError::Malformed(message) => Status::bad_request(format!(
            "the object provided is unrecognized (must be of type {kind}): {message} ({})",
            truncate_body(body)
        )),
    })
}

/// kube quotes at most the first 100 bytes of a body it cannot decode.
fn truncate_body(body: &[u8]) -> String {
    const MAX: usize = 100;
    let text = String::from_utf8_lossy(body);
    if text.len() <= MAX {
        return text.into_owned();
    }
    let mut end = MAX;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &text[..end])
}

enum DecodeError {
    TooLarge,
    Malformed(String),
}

fn decode_raw(body: &[u8], format: Format) -> Result<Decoded, DecodeError> {
    if body.len() > MAX_BODY_BYTES {
        return Err(DecodeError::TooLarge);
    }
    let node = match format {
        Format::Json => {
            let mut de = serde_json::Deserializer::from_slice(body);
            let node = Node::deserialize(&mut de).and_then(|n| de.end().map(|()| n));
            node.map_err(|e| DecodeError::Malformed(format!("error decoding JSON: {}", json_message(&e))))?
        }
        Format::Protobuf => {
            let value = crate::protobuf::decode(body).map_err(|e| DecodeError::Malformed(e.to_string()))?;
            return Ok(Decoded { value, duplicates: Vec::new() });
        }
        Format::Yaml => {
            let mut options = serde_saphyr::Options::default();
            let mut budget = options.budget.unwrap_or_default();
            budget.max_depth = MAX_DEPTH;
            options.budget = Some(budget);
            options.duplicate_keys = serde_saphyr::DuplicateKeyPolicy::PassThrough;
            serde_saphyr::from_slice_with_options::<Node>(body, options)
                .map_err(|e| DecodeError::Malformed(format!("error decoding YAML: {e}")))?
        }
    };
    Ok(Decoded { value: node.value, duplicates: node.duplicates })
}

fn json_message(e: &serde_json::Error) -> String {
    if e.to_string().contains("recursion limit exceeded") {
        format!("the object nests more than {MAX_DEPTH} levels deep: {e}")
    } else {
        e.to_string()
    }
}

/// A value and the duplicate keys found under it (paths relative to it).
struct Node {
    value: Value,
    duplicates: Vec<String>,
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

fn leaf(value: Value) -> Node {
    Node { value, duplicates: Vec::new() }
}

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Node, E> {
        Ok(leaf(Value::Bool(v)))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Node, E> {
        Ok(leaf(Value::from(v)))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Node, E> {
        Ok(leaf(Value::from(v)))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Node, E> {
        serde_json::Number::from_f64(v)
            .map(|n| leaf(Value::Number(n)))
            .ok_or_else(|| E::custom(format!("unsupported number {v}")))
    }
    fn visit_str<E>(self, v: &str) -> Result<Node, E> {
        Ok(leaf(Value::String(v.to_owned())))
    }
    fn visit_string<E>(self, v: String) -> Result<Node, E> {
        Ok(leaf(Value::String(v)))
    }
    fn visit_none<E>(self) -> Result<Node, E> {
        Ok(leaf(Value::Null))
    }
    fn visit_unit<E>(self) -> Result<Node, E> {
        Ok(leaf(Value::Null))
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Node, D::Error> {
        Node::deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        let mut duplicates = Vec::new();
        while let Some(node) = seq.next_element::<Node>()? {
            let index = items.len();
            duplicates.extend(node.duplicates.into_iter().map(|p| format!("[{index}]{}", dotted(&p))));
            items.push(node.value);
        }
        Ok(Node { value: Value::Array(items), duplicates })
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut out = Map::new();
        let mut duplicates = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            let node: Node = map.next_value()?;
            duplicates.extend(node.duplicates.into_iter().map(|p| join(&key, &p)));
            if out.insert(key.clone(), node.value).is_some() {
                duplicates.push(key);
            }
        }
        Ok(Node { value: Value::Object(out), duplicates })
    }
}

/// `key` + a relative path (`a`, `[0].b`) → `key.a`, `key[0].b`.
fn join(key: &str, rel: &str) -> String {
    if rel.starts_with('[') { format!("{key}{rel}") } else { format!("{key}.{rel}") }
}

fn dotted(rel: &str) -> String {
    if rel.starts_with('[') || rel.is_empty() { rel.to_owned() } else { format!(".{rel}") }
}

/// Response encodings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Json,
    Yaml,
}

/// Picks the response encoding from `Accept`: YAML only when the client prefers it.
pub fn response_encoding(headers: &HeaderMap) -> Encoding {
    let accept = headers.get(http::header::ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or("");
    for part in accept.split(',') {
        let media = part.split(';').next().unwrap_or("").trim();
        match media {
            "application/yaml" => return Encoding::Yaml,
            "application/json" | "*/*" | "application/*" => return Encoding::Json,
            _ => {}
        }
    }
    Encoding::Json
}

/// Serialises `value` for the response.
pub fn encode(value: &Value, encoding: Encoding) -> (Vec<u8>, &'static str) {
    match encoding {
        Encoding::Json => (serde_json::to_vec(value).unwrap_or_default(), "application/json"),
        Encoding::Yaml => match serde_saphyr::to_string(value) {
            Ok(s) => (s.into_bytes(), "application/yaml"),
            Err(_) => (serde_json::to_vec(value).unwrap_or_default(), "application/json"),
        },
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn duplicates_by_path() {
        let cases: &[(&str, Format, &[&str])] = &[
            (r#"{"a":1,"a":2}"#, Format::Json, &["a"]),
            (r#"{"spec":{"x":1,"x":2,"y":[{"z":1,"z":1}]}}"#, Format::Json, &["spec.x", "spec.y[0].z"]),
            ("spec:\n  num: 1\n  num: 2\n", Format::Yaml, &["spec.num"]),
            (r#"{"a":1}"#, Format::Json, &[]),
        ];
        for (body, format, want) in cases {
            let d = decode(body.as_bytes(), *format).unwrap();
            assert_eq!(d.duplicates, *want, "{body}");
        }
        assert_eq!(decode(br#"{"a":1,"a":2}"#, Format::Json).unwrap().value, json!({"a":2}), "last wins");
    }

    #[test]
    fn bounds_json() {
        let deep = "[".repeat(200) + &"]".repeat(200);
        let err = decode(deep.as_bytes(), Format::Json).unwrap_err();
        assert_eq!(err.code, http::StatusCode::BAD_REQUEST);
    }

    #[test]
    fn bounds() {
        // On a stack the size the server gives its workers.
        let yaml = |depth: usize| {
            "a:\n".to_owned() + &(1..depth).map(|i| format!("{}a:\n", "  ".repeat(i))).collect::<String>()
        };
        let results = std::thread::Builder::new()
            .stack_size(WORKER_STACK_BYTES)
            .spawn(move || {
                (
                    decode(yaml(MAX_DEPTH).as_bytes(), Format::Yaml).is_ok(),
                    decode(yaml(1000).as_bytes(), Format::Yaml).map(|_| ()),
                )
            })
            .unwrap()
            .join()
            .unwrap();
        assert!(results.0, "{MAX_DEPTH} levels are accepted");
        assert_eq!(results.1.unwrap_err().code, http::StatusCode::BAD_REQUEST);
        let big = vec![b' '; MAX_BODY_BYTES + 1];
        assert_eq!(decode(&big, Format::Json).unwrap_err().code, http::StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(decode(b"{", Format::Json).unwrap_err().code, http::StatusCode::BAD_REQUEST);
    }
}
