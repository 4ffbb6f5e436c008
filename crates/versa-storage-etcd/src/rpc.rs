//! etcd's messages in the store's terms, for the store's requests and the watches' streams
//! alike: where a range starts, the revision a response was answered at, and a key-value of
//! etcd's as a [`KeyValue`].

use bytes::Bytes;
use versa_storage::KeyValue;

/// The first key of a range: etcd refuses an empty key, and `\0` is the smallest it takes.
pub(crate) fn range_start(key: Vec<u8>) -> Vec<u8> {
    if key.is_empty() { vec![0] } else { key }
}

/// The revision in a response header (etcd always sends one).
pub(crate) fn header_revision(header: Option<&etcd_client::ResponseHeader>) -> i64 {
    header.map_or(0, |h| h.revision())
}

/// A stored key-value in the store's terms. Keys are written by versa and so are UTF-8; a
/// foreign key that is not is shown lossily rather than failing the whole read.
pub(crate) fn key_value(kv: etcd_client::KeyValue) -> KeyValue {
    let (create_revision, mod_revision) = (kv.create_revision(), kv.mod_revision());
    let (key, value) = kv.into_key_value();
    let key = String::from_utf8(key).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    KeyValue { key, value: Bytes::from(value), create_revision, mod_revision }
}

/// A watched key-value in the store's terms (copied: etcd-client lends events out).
pub(crate) fn lent_key_value(kv: &etcd_client::KeyValue) -> KeyValue {
    KeyValue {
        key: String::from_utf8_lossy(kv.key()).into_owned(),
        value: Bytes::copy_from_slice(kv.value()),
        create_revision: kv.create_revision(),
        mod_revision: kv.mod_revision(),
    }
}
