//! The generic envelope around every object: the magic bytes `k8s\0`, then a `runtime.Unknown`
//! whose `typeMeta` names the kind and whose `raw` holds the object's own message.

use serde_json::Value;

use super::error::Result;
use super::kinds::TYPE_META;
use super::message::message;
use super::wire::{payloads, string};

/// The four bytes every Kubernetes protobuf body starts with.
pub(super) const MAGIC: &[u8] = b"k8s\0";

/// The values `runtime.Unknown.contentType` may have: unset (how client-go writes it) or
/// protobuf itself.
pub(super) const PROTOBUF_CONTENT_TYPES: [&str; 2] = ["", "application/vnd.kubernetes.protobuf"];

/// `runtime.Unknown`, the envelope: `typeMeta` (1: `apiVersion` 1, `kind` 2), `raw` (2),
/// `contentEncoding` (3), `contentType` (4). client-go writes all four, the strings empty.
pub(super) struct Envelope<'a> {
    pub(super) api_version: String,
    pub(super) kind: String,
    pub(super) raw: &'a [u8],
    pub(super) content_encoding: String,
    pub(super) content_type: String,
}

impl<'a> Envelope<'a> {
    pub(super) fn read(data: &'a [u8]) -> Result<Self> {
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
