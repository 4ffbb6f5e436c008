//! The on-disk encodings of the two tables' values, little-endian and length-prefixed:
//!
//! - `kv` (key → current value): `create_rev u64 | mod_rev u64 | value…`
//! - `log` (revision → event): `kind u8 | time_ms u64 | key_len u32 | key | create_rev u64 |
//!   value_len u32 | value | prev_flag u8 [| prev_create u64 | prev_mod u64 | prev_len u32 | prev]`
//!
//! A log entry carries the key's previous value so that a delete event can report it and a list
//! at a past revision can undo later writes.
//!
//! **Large values are stored deflated.** A value of [`DEFLATE_FROM`] bytes or more (a real-world
//! CustomResourceDefinition: tens of KiB, mostly descriptions) is stored as `raw_len u32 | raw
//! deflate stream` when that saves at least an eighth of it; smaller values (most custom
//! objects) are stored as given, so reading and writing them costs nothing more. Which form a
//! value is in is marked outside the value, in places records written before compression never
//! set — so no value, whatever its bytes, is mistaken for the other form, and older data files
//! read as they always did:
//!
//! - `kv`: bit 63 of `create_rev` ([`DEFLATED`]; revisions are positive `i64`s, so it was never
//!   set);
//! - `log`: `kind` [`PUT_DEFLATED`] (2) for a put whose value is deflated (older: 0 put,
//!   1 delete), and `prev_flag` 2 for a deflated previous value (older: 0 none, 1 as given).
//!
//! Readers above the store get back exactly the bytes they wrote: the encoding is this module's
//! business, below the `Store` trait.
//!
//! Decoding never trusts lengths: a truncated or corrupt record is an error, not a panic. A
//! deflated value must inflate to exactly its `raw_len`, which may be neither over
//! [`MAX_VALUE_BYTES`] nor more than deflate's largest ratio (1032:1) allows for its stream, so a
//! corrupt or hostile record allocates at most that much and never expands without limit.

use std::borrow::Cow;

use bytes::Bytes;
use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};
use versa_storage::{KeyValue, MAX_VALUE_BYTES, WatchEvent};

/// A record that does not decode (file corruption or a format mismatch).
#[derive(Debug, thiserror::Error)]
#[error("corrupt {what} record")]
pub struct Corrupt {
    pub what: &'static str,
}

/// Values at least this long are stored deflated (when that saves an eighth). Measured on the
/// real-world definitions of `hack/crd-corpus.sh` (`docs/memory.md`): 4 KiB of their JSON
/// deflates about 3× at the fast level, 32 KiB about 6×; below a page the saving is a few
/// hundred bytes a value, not worth inflating on every read of the small objects that are
/// most of a cluster's.
pub const DEFLATE_FROM: usize = 4096;

/// `kv`: bit 63 of `create_rev` set — the value is deflated.
const DEFLATED: u64 = 1 << 63;

// `log` kinds.
const PUT: u8 = 0;
const DELETE: u8 = 1;
const PUT_DEFLATED: u8 = 2;

// `log` previous-value flags.
const NO_PREV: u8 = 0;
const PREV: u8 = 1;
const PREV_DEFLATED: u8 = 2;

/// Deflate's largest expansion: a stream of `n` bytes inflates to at most about 1032 × `n`.
const MAX_RATIO: usize = 1032;

/// A value as a record holds it: as given, or deflated (`raw_len u32 | stream`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored<'a> {
    bytes: Cow<'a, [u8]>,
    deflated: bool,
}

impl Stored<'_> {
    /// The value as written, inflated if need be.
    fn value(&self, what: &'static str) -> Result<Bytes, Corrupt> {
        if self.deflated { inflate(&self.bytes, what) } else { Ok(Bytes::copy_from_slice(&self.bytes)) }
    }

    fn into_owned(self) -> Stored<'static> {
        Stored { bytes: Cow::Owned(self.bytes.into_owned()), deflated: self.deflated }
    }
}

/// The writer's compressor: one deflate state reused for every large value (building one
/// allocates and clears a few hundred KiB — dearer than deflating a definition).
#[derive(Default)]
pub struct Deflater {
    compress: Option<Compress>,
}

impl std::fmt::Debug for Deflater {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deflater").finish_non_exhaustive()
    }
}

impl Deflater {
    /// `value` in the form to store: deflated if it is at least [`DEFLATE_FROM`] bytes and
    /// deflating saves an eighth of it, else as given.
    pub fn store<'a>(&mut self, value: &'a [u8]) -> Stored<'a> {
        let as_given = Stored { bytes: Cow::Borrowed(value), deflated: false };
        let Ok(raw_len) = u32::try_from(value.len()) else { return as_given };
        if value.len() < DEFLATE_FROM {
            return as_given;
        }
        let compress = self.compress.get_or_insert_with(|| Compress::new(Compression::fast(), false));
        compress.reset();
        // `compress_vec` never grows the output past its capacity: a stream (and its length)
        // that does not fit in seven eighths of the value is not worth keeping.
        let limit = value.len() - value.len() / 8;
        let mut out = Vec::with_capacity(limit);
        out.extend_from_slice(&raw_len.to_le_bytes());
        match compress.compress_vec(value, &mut out, FlushCompress::Finish) {
            Ok(Status::StreamEnd) if out.len() <= limit => Stored { bytes: Cow::Owned(out), deflated: true },
            _ => as_given,
        }
    }
}

/// Inflates a deflated value (`raw_len u32 | stream`) into exactly `raw_len` bytes.
fn inflate(stored: &[u8], what: &'static str) -> Result<Bytes, Corrupt> {
    let corrupt = || Corrupt { what };
    let mut r = Reader { buf: stored, what };
    let raw_len = r.u32()? as usize;
    let stream = r.buf;
    if raw_len > MAX_VALUE_BYTES || raw_len > stream.len().saturating_mul(MAX_RATIO) {
        return Err(corrupt());
    }
    let mut out = Vec::with_capacity(raw_len);
    let mut inflater = Decompress::new(false);
    // `decompress_vec` writes only into the capacity reserved above: a stream longer than its
    // stated length stops there, and is then refused with one that ends early or has bytes left.
    match inflater.decompress_vec(stream, &mut out, FlushDecompress::Finish) {
        Ok(Status::StreamEnd) if out.len() == raw_len && inflater.total_in() == stream.len() as u64 => {
            Ok(Bytes::from(out))
        }
        _ => Err(corrupt()),
    }
}

/// A `kv` value split into its parts, the value still as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KvRecord<'a> {
    pub create_revision: i64,
    pub mod_revision: i64,
    pub value: Stored<'a>,
}

impl KvRecord<'_> {
    /// The record as the key's current value, inflated if need be.
    pub fn key_value(&self, key: &str) -> Result<KeyValue, Corrupt> {
        Ok(KeyValue {
            key: key.to_string(),
            value: self.value.value("kv")?,
            create_revision: self.create_revision,
            mod_revision: self.mod_revision,
        })
    }

    /// The record with its value copied out of the table.
    pub fn into_owned(self) -> KvRecord<'static> {
        KvRecord { value: self.value.into_owned(), ..self }
    }
}

/// Encodes a `kv` table value.
pub fn encode_kv(create_revision: i64, mod_revision: i64, value: &Stored<'_>) -> Vec<u8> {
    let create = create_revision as u64 | if value.deflated { DEFLATED } else { 0 };
    let mut out = Vec::with_capacity(16 + value.bytes.len());
    out.extend_from_slice(&create.to_le_bytes());
    out.extend_from_slice(&(mod_revision as u64).to_le_bytes());
    out.extend_from_slice(&value.bytes);
    out
}

/// Splits a `kv` table value, without inflating it.
pub fn split_kv(raw: &[u8]) -> Result<KvRecord<'_>, Corrupt> {
    let mut r = Reader { buf: raw, what: "kv" };
    let create = r.u64()?;
    let mod_revision = r.u64()? as i64;
    Ok(KvRecord {
        create_revision: (create & !DEFLATED) as i64,
        mod_revision,
        value: Stored { bytes: Cow::Borrowed(r.buf), deflated: create & DEFLATED != 0 },
    })
}

/// Decodes a `kv` table value for `key`.
pub fn decode_kv(key: &str, raw: &[u8]) -> Result<KeyValue, Corrupt> {
    split_kv(raw)?.key_value(key)
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

/// Encodes a `log` value. `kv` is the written value (`None` for a delete), `prev` the key's
/// record before the write, both as stored (so that a value is deflated once for both tables).
pub fn encode_log(time_ms: u64, key: &str, kv: Option<(i64, &Stored<'_>)>, prev: Option<&KvRecord<'_>>) -> Vec<u8> {
    let value_len = kv.map_or(0, |(_, v)| v.bytes.len());
    let prev_len = prev.map_or(0, |p| p.value.bytes.len() + 20);
    let mut out = Vec::with_capacity(34 + key.len() + value_len + prev_len);
    out.push(match kv {
        Some((_, v)) if v.deflated => PUT_DEFLATED,
        Some(_) => PUT,
        None => DELETE,
    });
    out.extend_from_slice(&time_ms.to_le_bytes());
    put_bytes(&mut out, key.as_bytes());
    let (create, value) = kv.map_or((0, &[][..]), |(create, v)| (create, &v.bytes[..]));
    out.extend_from_slice(&(create as u64).to_le_bytes());
    put_bytes(&mut out, value);
    match prev {
        None => out.push(NO_PREV),
        Some(p) => {
            out.push(if p.value.deflated { PREV_DEFLATED } else { PREV });
            out.extend_from_slice(&(p.create_revision as u64).to_le_bytes());
            out.extend_from_slice(&(p.mod_revision as u64).to_le_bytes());
            put_bytes(&mut out, &p.value.bytes);
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
        PUT | PUT_DEFLATED => {
            let stored = Stored { bytes: Cow::Borrowed(value), deflated: kind == PUT_DEFLATED };
            Some(KeyValue {
                key: key.clone(),
                value: stored.value("log")?,
                create_revision: create,
                mod_revision: revision,
            })
        }
        DELETE => None,
        _ => return Err(r.corrupt()),
    };
    let prev = match r.u8()? {
        NO_PREV => None,
        flag @ (PREV | PREV_DEFLATED) => {
            let create_revision = r.u64()? as i64;
            let mod_revision = r.u64()? as i64;
            let stored = Stored { bytes: Cow::Borrowed(r.bytes()?), deflated: flag == PREV_DEFLATED };
            Some(KeyValue { key: key.clone(), value: stored.value("log")?, create_revision, mod_revision })
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

    fn u32(&mut self) -> Result<u32, Corrupt> {
        let mut b = [0u8; 4];
        b.copy_from_slice(self.take(4)?);
        Ok(u32::from_le_bytes(b))
    }

    fn u64(&mut self) -> Result<u64, Corrupt> {
        let mut b = [0u8; 8];
        b.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(b))
    }

    fn bytes(&mut self) -> Result<&'a [u8], Corrupt> {
        let n = self.u32()? as usize;
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

    fn kv(key: &str, value: &[u8], create: i64, modr: i64) -> KeyValue {
        KeyValue { key: key.into(), value: Bytes::copy_from_slice(value), create_revision: create, mod_revision: modr }
    }

    /// JSON of about `len` bytes that deflates well, like a definition's descriptions.
    fn json(len: usize) -> Vec<u8> {
        let text = "A list of the conditions of this resource, most recent last. ";
        let mut out = format!("{{\"description\":\"{}", text.repeat(len / text.len() + 1)).into_bytes();
        out.truncate(len.saturating_sub(2));
        out.extend_from_slice(b"\"}");
        out
    }

    /// `len` bytes that do not deflate (xorshift).
    fn noise(len: usize) -> Vec<u8> {
        let mut x = 0x9e37_79b9_7f4a_7c15_u64;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    #[test]
    fn kv_round_trip() {
        let raw = encode_kv(3, 7, &Deflater::default().store(b"hello"));
        assert_eq!(decode_kv("k", &raw).unwrap(), kv("k", b"hello", 3, 7));
        assert!(decode_kv("k", &raw[..10]).is_err());
    }

    #[test]
    fn log_round_trip() {
        let prev = kv("/a", b"old", 2, 5);
        let old = KvRecord { create_revision: 2, mod_revision: 5, value: Deflater::default().store(b"old") };
        let put = encode_log(99, "/a", Some((2, &Deflater::default().store(b"new"))), Some(&old));
        let entry = decode_log(8, &put).unwrap();
        assert_eq!(entry.kv, Some(kv("/a", b"new", 2, 8)));
        assert_eq!(entry.prev, Some(prev.clone()));
        assert_eq!((log_time_ms(&put).unwrap(), log_key(&put).unwrap()), (99, "/a"));

        let del = encode_log(100, "/a", None, Some(&old));
        match decode_log(9, &del).unwrap().into_event() {
            WatchEvent::Deleted { revision, prev: p } => assert_eq!((revision, p), (9, prev)),
            other => panic!("{other:?}"),
        }
        for cut in 0..del.len() {
            assert!(decode_log(9, &del[..cut]).is_err(), "truncated at {cut}");
        }
    }

    /// Records as versa wrote them before values were deflated — including a large value, and
    /// values whose first bytes look like a deflated one's length — read as they always did.
    #[test]
    fn records_written_before_deflating_still_decode() {
        let large = json(30_000);
        let mut old_large = hex("0300000000000000 0700000000000000");
        old_large.extend_from_slice(&large);
        let kv_cases: [(Vec<u8>, KeyValue); 4] = [
            (hex("0300000000000000 0700000000000000 68656c6c6f"), kv("k", b"hello", 3, 7)),
            (hex("0100000000000000 0100000000000000"), kv("k", b"", 1, 1)),
            (hex("0300000000000000 0700000000000000 05000000 0000ffff"), kv("k", &hex("05000000 0000ffff"), 3, 7)),
            (old_large, kv("k", &large, 3, 7)),
        ];
        for (raw, want) in kv_cases {
            assert_eq!(decode_kv("k", &raw).unwrap(), want);
        }

        // put of "new" at 8 over "old" (created at 2, modified at 5); a delete of it; a create.
        let put = hex("00 6300000000000000 02000000 2f61 0200000000000000 03000000 6e6577
             01 0200000000000000 0500000000000000 03000000 6f6c64");
        let entry = decode_log(8, &put).unwrap();
        assert_eq!((entry.kv, entry.prev), (Some(kv("/a", b"new", 2, 8)), Some(kv("/a", b"old", 2, 5))));
        let del = hex("01 6400000000000000 02000000 2f61 0000000000000000 00000000
             01 0200000000000000 0500000000000000 03000000 6f6c64");
        let entry = decode_log(9, &del).unwrap();
        assert_eq!((entry.kv, entry.prev), (None, Some(kv("/a", b"old", 2, 5))));
        let mut create = hex("00 6300000000000000 02000000 2f61 0200000000000000");
        create.extend_from_slice(&(large.len() as u32).to_le_bytes());
        create.extend_from_slice(&large);
        create.push(0);
        let entry = decode_log(2, &create).unwrap();
        assert_eq!((entry.kv, entry.prev), (Some(kv("/a", &large, 2, 2)), None));
    }

    /// Values around the threshold, and ones that do not deflate: (value, stored deflated).
    #[test]
    fn values_round_trip_deflated_from_the_threshold() {
        let cases: Vec<(Vec<u8>, bool)> = vec![
            (Vec::new(), false),
            (json(100), false),
            (json(DEFLATE_FROM - 1), false),
            (json(DEFLATE_FROM), true),
            (json(DEFLATE_FROM + 1), true),
            (json(28 * 1024), true),
            (json(MAX_VALUE_BYTES), true),
            (noise(DEFLATE_FROM), false),
            (noise(64 * 1024), false),
        ];
        let mut deflater = Deflater::default();
        for (value, deflated) in cases {
            let stored = deflater.store(&value);
            assert_eq!(stored.deflated, deflated, "{} bytes", value.len());
            if deflated {
                assert!(stored.bytes.len() <= value.len() - value.len() / 8);
            } else {
                assert_eq!(&stored.bytes[..], &value[..]);
            }
            let raw = encode_kv(5, 9, &stored);
            assert_eq!(decode_kv("/k", &raw).unwrap(), kv("/k", &value, 5, 9));
            let record = split_kv(&raw).unwrap();
            assert_eq!((record.create_revision, record.mod_revision), (5, 9));

            // A log entry with the value as the write and as the previous value.
            let prev = record.into_owned();
            let log = encode_log(1, "/k", Some((5, &stored)), Some(&prev));
            let entry = decode_log(10, &log).unwrap();
            assert_eq!(entry.kv, Some(kv("/k", &value, 5, 10)));
            assert_eq!(entry.prev, Some(kv("/k", &value, 5, 9)));
            assert_eq!(log_key(&log).unwrap(), "/k");
        }
    }

    /// Deflated values that are truncated, altered or lie about their length are `Corrupt`,
    /// and one claiming more than the store's limit or deflate's ratio allows is refused before
    /// anything is allocated for it.
    #[test]
    fn corrupt_deflated_values_are_errors() {
        let value = json(20_000);
        let stored = Deflater::default().store(&value);
        assert!(stored.deflated);
        let good = stored.bytes.to_vec();
        let with_len = |len: u32| {
            let mut bytes = good.clone();
            bytes[..4].copy_from_slice(&len.to_le_bytes());
            bytes
        };
        let mut trailing = good.clone();
        trailing.push(0);
        let mut flipped = good.clone();
        let middle = good.len() / 2;
        flipped[middle] ^= 0x55;
        let mut bomb = (MAX_VALUE_BYTES as u32).to_le_bytes().to_vec();
        bomb.extend_from_slice(&[0x03, 0x00]);
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("length one short", with_len(value.len() as u32 - 1)),
            ("length one long", with_len(value.len() as u32 + 1)),
            ("length over the store's limit", with_len(MAX_VALUE_BYTES as u32 + 1)),
            ("length over deflate's ratio", bomb),
            ("bytes after the stream", trailing),
            ("a byte altered", flipped),
            ("no stream", good[..4].to_vec()),
            ("no length", good[..3].to_vec()),
            ("not deflate", [&good[..4], b"{\"a\":1}"].concat()),
        ];
        for (name, bytes) in cases {
            let deflated = Stored { bytes: Cow::Owned(bytes), deflated: true };
            assert!(decode_kv("/k", &encode_kv(1, 1, &deflated)).is_err(), "kv: {name}");
            let record = KvRecord { create_revision: 1, mod_revision: 1, value: deflated.clone() };
            assert!(decode_log(2, &encode_log(0, "/k", Some((1, &deflated)), None)).is_err(), "log value: {name}");
            assert!(decode_log(2, &encode_log(0, "/k", None, Some(&record))).is_err(), "log prev: {name}");
        }
        let log = encode_log(0, "/k", Some((1, &stored)), None);
        for cut in 0..log.len() {
            assert!(decode_log(2, &log[..cut]).is_err(), "truncated at {cut}");
        }
        // Unknown kinds and previous-value flags.
        let mut kind = log.clone();
        kind[0] = 3;
        assert!(decode_log(2, &kind).is_err());
        let mut flag = log.clone();
        let last = flag.len() - 1;
        flag[last] = 3;
        assert!(decode_log(2, &flag).is_err());
    }
}
