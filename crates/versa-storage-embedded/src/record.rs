//! The on-disk encodings of the two tables' values, little-endian and length-prefixed:
//!
//! - `kv` (key → current value): `create_rev u64 | mod_rev u64 | value…`
//! - `log` (revision → event): `kind u8 | time_ms u64 | key_len u32 | key | create_rev u64 |
//!   value_len u32 | value | prev_flag u8 [| prev_create u64 | prev_mod u64 | prev_len u32 | prev]`
//!
//! A log entry carries the key's previous value so that a delete event can report it and a list
//! at a past revision can undo later writes. Decoding never trusts lengths: a truncated or
//! corrupt record is an error, not a panic.

use bytes::Bytes;
use versa_storage::{KeyValue, WatchEvent};

/// A record that does not decode (file corruption or a format mismatch).
#[derive(Debug, thiserror::Error)]
#[error("corrupt {what} record")]
pub struct Corrupt {
    pub what: &'static str,
}

const PUT: u8 = 0;
const DELETE: u8 = 1;

/// Encodes a `kv` table value.
pub fn encode_kv(create_revision: i64, mod_revision: i64, value: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + value.len());
    out.extend_from_slice(&(create_revision as u64).to_le_bytes());
    out.extend_from_slice(&(mod_revision as u64).to_le_bytes());
    out.extend_from_slice(value);
    out
}

/// Decodes a `kv` table value for `key`.
pub fn decode_kv(key: &str, raw: &[u8]) -> Result<KeyValue, Corrupt> {
    let mut r = Reader { buf: raw, what: "kv" };
    let create_revision = r.u64()? as i64;
    let mod_revision = r.u64()? as i64;
    Ok(KeyValue { key: key.to_string(), value: Bytes::copy_from_slice(r.buf), create_revision, mod_revision })
}

/// One decoded `log` entry.
#[derive(Debug, Clone)]
pub struct LogEntry {
    pub revision: i64,
    /// The write: for a put the new value; for a delete, `None`.
    pub kv: Option<KeyValue>,
    pub key: String,
    /// The key's value before this write.
    pub prev: Option<KeyValue>,
}

impl LogEntry {
    /// The watch event this entry reports.
    pub fn into_event(self) -> WatchEvent {
        match (self.kv, self.prev) {
            (Some(kv), None) => WatchEvent::Added(kv),
            (Some(kv), prev @ Some(_)) => WatchEvent::Modified { kv, prev },
            (None, Some(prev)) => WatchEvent::Deleted { revision: self.revision, prev },
            // A delete always has a previous value; an entry without one reports the bare key.
            (None, None) => WatchEvent::Deleted {
                revision: self.revision,
                prev: KeyValue { key: self.key, value: Bytes::new(), create_revision: 0, mod_revision: 0 },
            },
        }
    }
}

/// Encodes a `log` value. `kv` is the written value (`None` for a delete).
pub fn encode_log(time_ms: u64, key: &str, kv: Option<(i64, &[u8])>, prev: Option<&KeyValue>) -> Vec<u8> {
    let value_len = kv.map_or(0, |(_, v)| v.len());
    let prev_len = prev.map_or(0, |p| p.value.len() + 20);
    let mut out = Vec::with_capacity(34 + key.len() + value_len + prev_len);
    out.push(if kv.is_some() { PUT } else { DELETE });
    out.extend_from_slice(&time_ms.to_le_bytes());
    put_bytes(&mut out, key.as_bytes());
    let (create, value) = kv.unwrap_or((0, &[]));
    out.extend_from_slice(&(create as u64).to_le_bytes());
    put_bytes(&mut out, value);
    match prev {
        None => out.push(0),
        Some(p) => {
            out.push(1);
            out.extend_from_slice(&(p.create_revision as u64).to_le_bytes());
            out.extend_from_slice(&(p.mod_revision as u64).to_le_bytes());
            put_bytes(&mut out, &p.value);
        }
    }
    out
}

/// The commit time of a `log` value, without decoding the rest.
pub fn log_time_ms(raw: &[u8]) -> Result<u64, Corrupt> {
    let mut r = Reader { buf: raw, what: "log" };
    r.u8()?;
    r.u64()
}

/// The key of a `log` value, without copying values.
pub fn log_key(raw: &[u8]) -> Result<&str, Corrupt> {
    let mut r = Reader { buf: raw, what: "log" };
    r.u8()?;
    r.u64()?;
    r.str()
}

/// Decodes a `log` value written at `revision`.
pub fn decode_log(revision: i64, raw: &[u8]) -> Result<LogEntry, Corrupt> {
    let mut r = Reader { buf: raw, what: "log" };
    let kind = r.u8()?;
    r.u64()?; // commit time, used only by history trimming
    let key = r.str()?.to_string();
    let create = r.u64()? as i64;
    let value = r.bytes()?;
    let kv = match kind {
        PUT => Some(KeyValue {
            key: key.clone(),
            value: Bytes::copy_from_slice(value),
            create_revision: create,
            mod_revision: revision,
        }),
        DELETE => None,
        _ => return Err(r.corrupt()),
    };
    let prev = match r.u8()? {
        0 => None,
        1 => {
            let create_revision = r.u64()? as i64;
            let mod_revision = r.u64()? as i64;
            let value = Bytes::copy_from_slice(r.bytes()?);
            Some(KeyValue { key: key.clone(), value, create_revision, mod_revision })
        }
        _ => return Err(r.corrupt()),
    };
    Ok(LogEntry { revision, kv, key, prev })
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    // Keys and values are bounded far below 4 GiB (MAX_VALUE_BYTES), so the length fits.
    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    out.extend_from_slice(bytes);
}

struct Reader<'a> {
    buf: &'a [u8],
    what: &'static str,
}

impl<'a> Reader<'a> {
    fn corrupt(&self) -> Corrupt {
        Corrupt { what: self.what }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], Corrupt> {
        if self.buf.len() < n {
            return Err(self.corrupt());
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }

    fn u8(&mut self) -> Result<u8, Corrupt> {
        Ok(self.take(1)?[0])
    }

    fn u64(&mut self) -> Result<u64, Corrupt> {
        let mut b = [0u8; 8];
        b.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(b))
    }

    fn bytes(&mut self) -> Result<&'a [u8], Corrupt> {
        let mut b = [0u8; 4];
        b.copy_from_slice(self.take(4)?);
        let n = u32::from_le_bytes(b) as usize;
        self.take(n)
    }

    fn str(&mut self) -> Result<&'a str, Corrupt> {
        let what = self.what;
        std::str::from_utf8(self.bytes()?).map_err(|_| Corrupt { what })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv(key: &str, value: &str, create: i64, modr: i64) -> KeyValue {
        KeyValue {
            key: key.into(),
            value: Bytes::copy_from_slice(value.as_bytes()),
            create_revision: create,
            mod_revision: modr,
        }
    }

    #[test]
    fn kv_round_trip() {
        let raw = encode_kv(3, 7, b"hello");
        assert_eq!(decode_kv("k", &raw).unwrap(), kv("k", "hello", 3, 7));
        assert!(decode_kv("k", &raw[..10]).is_err());
    }

    #[test]
    fn log_round_trip() {
        let prev = kv("/a", "old", 2, 5);
        let put = encode_log(99, "/a", Some((2, b"new")), Some(&prev));
        let entry = decode_log(8, &put).unwrap();
        assert_eq!(entry.kv, Some(kv("/a", "new", 2, 8)));
        assert_eq!(entry.prev, Some(prev.clone()));
        assert_eq!((log_time_ms(&put).unwrap(), log_key(&put).unwrap()), (99, "/a"));

        let del = encode_log(100, "/a", None, Some(&prev));
        match decode_log(9, &del).unwrap().into_event() {
            WatchEvent::Deleted { revision, prev: p } => assert_eq!((revision, p), (9, prev)),
            other => panic!("{other:?}"),
        }
        for cut in 0..del.len() {
            assert!(decode_log(9, &del[..cut]).is_err(), "truncated at {cut}");
        }
    }
}
