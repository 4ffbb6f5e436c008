//! versa's snapshot format: every key of a store at one revision, in one file (`versa backup`,
//! `versa restore`). Backend-independent: the embedded store writes it from one read
//! transaction, any other backend from a list at one revision ([`crate::Store::snapshot`]).
//!
//! The layout, streamed front to back and checked as it is read:
//!
//! ```text
//! "versa-snapshot 1\n"                         magic and format version
//! header JSON "\n"                              {"revision": R, "compacted": C, "createdAt": …, "versa": …}
//! 'K' key_len:u32 key create:u64 mod:u64 value_len:u32 value     one per key, in key order
//! 'E' count:u64 sha256:[32]                     the end: records, and the SHA-256 of every byte before it
//! ```
//!
//! Integers are little-endian. A reader refuses a newer format, a record over the store's limits
//! ([`MAX_VALUE_BYTES`], keys up to [`MAX_KEY_BYTES`]), a count or digest that does not match,
//! bytes after the end, and a file that stops before it: a truncated, corrupted or foreign file
//! is never taken for a snapshot. What a restored store does with revisions is the backend's
//! business (the embedded store moves its revision past every old `resourceVersion`).

use std::io::{Read, Write};

use bytes::{BufMut, Bytes, BytesMut};
use ring::digest::{Context, SHA256};
use serde::{Deserialize, Serialize};

use crate::{KeyValue, MAX_VALUE_BYTES};

/// The first line of every snapshot.
pub const MAGIC: &str = "versa-snapshot";
/// The format this versa writes and the newest it reads.
pub const FORMAT: u32 = 1;
/// The longest key a snapshot may hold.
pub const MAX_KEY_BYTES: usize = 64 * 1024;
/// The longest header line.
const MAX_HEADER_BYTES: usize = 64 * 1024;

/// What a snapshot says of itself.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Header {
    /// The store revision every key was read at.
    pub revision: i64,
    /// The store's compacted revision then (history before it was gone).
    #[serde(default)]
    pub compacted: i64,
    /// When the snapshot was taken (RFC 3339).
    #[serde(default)]
    pub created_at: String,
    /// The versa that wrote it.
    #[serde(default)]
    pub versa: String,
}

/// Why bytes are not a snapshot.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("not a versa snapshot (it does not start with {MAGIC:?})")]
    Foreign,
    #[error("snapshot format {0} was written by a newer versa; this versa reads format {FORMAT} at most")]
    Newer(u32),
    #[error("the snapshot is truncated: it ends before its end record")]
    Truncated,
    #[error("the snapshot is corrupt: {0}")]
    Corrupt(String),
    #[error("reading the snapshot: {0}")]
    Io(#[from] std::io::Error),
}

/// Writes a snapshot: [`Encoder::header`], then [`Encoder::record`] per key in key order, then
/// [`Encoder::end`]; each returns the bytes to write next.
pub struct Encoder {
    digest: Context,
    count: u64,
}

impl std::fmt::Debug for Encoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Encoder").field("count", &self.count).finish()
    }
}

impl Default for Encoder {
    fn default() -> Self {
        Encoder { digest: Context::new(&SHA256), count: 0 }
    }
}

impl Encoder {
    /// The magic line and the header.
    pub fn header(&mut self, header: &Header) -> Bytes {
        let json = serde_json::to_string(header).unwrap_or_default();
        let bytes = Bytes::from(format!("{MAGIC} {FORMAT}\n{json}\n"));
        self.digest.update(&bytes);
        bytes
    }

    /// One key.
    pub fn record(&mut self, kv: &KeyValue) -> Bytes {
        let mut b = BytesMut::with_capacity(1 + 4 + kv.key.len() + 16 + 4 + kv.value.len());
        b.put_u8(b'K');
        b.put_u32_le(kv.key.len() as u32);
        b.put_slice(kv.key.as_bytes());
        b.put_u64_le(kv.create_revision as u64);
        b.put_u64_le(kv.mod_revision as u64);
        b.put_u32_le(kv.value.len() as u32);
        b.put_slice(&kv.value);
        self.digest.update(&b);
        self.count += 1;
        b.freeze()
    }

    /// The end record: the count and the digest of everything before it.
    pub fn end(self) -> Bytes {
        let mut b = BytesMut::with_capacity(1 + 8 + 32);
        b.put_u8(b'E');
        b.put_u64_le(self.count);
        let mut digest = self.digest;
        digest.update(&b);
        b.put_slice(digest.finish().as_ref());
        b.freeze()
    }

    /// Keys recorded so far.
    pub fn count(&self) -> u64 {
        self.count
    }
}

/// Reads a snapshot: [`Decoder::open`] reads the header, [`Decoder::next_key`] each key, and the
/// end is checked when `next_key` returns `None` — only then is the snapshot known to be whole.
pub struct Decoder<R> {
    input: R,
    digest: Context,
    count: u64,
    header: Header,
    done: bool,
}

impl<R> std::fmt::Debug for Decoder<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decoder").field("header", &self.header).field("count", &self.count).finish()
    }
}

impl<R: Read> Decoder<R> {
    /// Reads and checks the magic line and the header.
    pub fn open(mut input: R) -> Result<Decoder<R>, SnapshotError> {
        let mut digest = Context::new(&SHA256);
        let magic = read_line(&mut input, MAGIC.len() + 12).map_err(|e| match e {
            SnapshotError::Truncated | SnapshotError::Corrupt(_) => SnapshotError::Foreign,
            e => e,
        })?;
        digest.update(&magic);
        let text = std::str::from_utf8(&magic).map_err(|_| SnapshotError::Foreign)?;
        let version = text
            .trim_end_matches('\n')
            .strip_prefix(MAGIC)
            .and_then(|rest| rest.strip_prefix(' '))
            .and_then(|v| v.parse::<u32>().ok())
            .ok_or(SnapshotError::Foreign)?;
        if version > FORMAT {
            return Err(SnapshotError::Newer(version));
        }
        let line = read_line(&mut input, MAX_HEADER_BYTES)?;
        digest.update(&line);
        let header: Header =
            serde_json::from_slice(&line).map_err(|e| SnapshotError::Corrupt(format!("its header: {e}")))?;
        Ok(Decoder { input, digest, count: 0, header, done: false })
    }

    /// What the snapshot says of itself.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The next key; `Ok(None)` once the end record has been read and checked.
    pub fn next_key(&mut self) -> Result<Option<KeyValue>, SnapshotError> {
        if self.done {
            return Ok(None);
        }
        let mut tag = [0u8; 1];
        self.exact(&mut tag)?;
        match tag[0] {
            b'K' => self.record().map(Some),
            b'E' => {
                self.end()?;
                Ok(None)
            }
            other => Err(SnapshotError::Corrupt(format!("unknown record type {other:#04x}"))),
        }
    }

    fn record(&mut self) -> Result<KeyValue, SnapshotError> {
        let key_len = self.u32()? as usize;
        if key_len > MAX_KEY_BYTES {
            return Err(SnapshotError::Corrupt(format!("a key of {key_len} bytes")));
        }
        let mut key = vec![0; key_len];
        self.exact(&mut key)?;
        let key = String::from_utf8(key).map_err(|_| SnapshotError::Corrupt("a key that is not UTF-8".into()))?;
        let create_revision = self.u64()? as i64;
        let mod_revision = self.u64()? as i64;
        if create_revision <= 0 || mod_revision < create_revision || mod_revision > self.header.revision {
            return Err(SnapshotError::Corrupt(format!("revisions {create_revision}/{mod_revision} of {key:?}")));
        }
        let value_len = self.u32()? as usize;
        if value_len > MAX_VALUE_BYTES {
            return Err(SnapshotError::Corrupt(format!("a value of {value_len} bytes for {key:?}")));
        }
        let mut value = vec![0; value_len];
        self.exact(&mut value)?;
        self.count += 1;
        Ok(KeyValue { key, value: Bytes::from(value), create_revision, mod_revision })
    }

    fn end(&mut self) -> Result<(), SnapshotError> {
        let count = self.u64()?;
        let expected = self.digest.clone().finish();
        let mut found = [0u8; 32];
        self.input.read_exact(&mut found).map_err(eof)?;
        if count != self.count {
            return Err(SnapshotError::Corrupt(format!("it holds {} keys, its end says {count}", self.count)));
        }
        if found != expected.as_ref() {
            return Err(SnapshotError::Corrupt("its SHA-256 does not match its content".into()));
        }
        let mut extra = [0u8; 1];
        if self.input.read(&mut extra)? != 0 {
            return Err(SnapshotError::Corrupt("bytes follow its end".into()));
        }
        self.done = true;
        Ok(())
    }

    /// Reads exactly `buf`, adding it to the digest.
    fn exact(&mut self, buf: &mut [u8]) -> Result<(), SnapshotError> {
        self.input.read_exact(buf).map_err(eof)?;
        self.digest.update(buf);
        Ok(())
    }

    fn u32(&mut self) -> Result<u32, SnapshotError> {
        let mut b = [0u8; 4];
        self.exact(&mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    fn u64(&mut self) -> Result<u64, SnapshotError> {
        let mut b = [0u8; 8];
        self.exact(&mut b)?;
        Ok(u64::from_le_bytes(b))
    }
}

fn eof(e: std::io::Error) -> SnapshotError {
    if e.kind() == std::io::ErrorKind::UnexpectedEof { SnapshotError::Truncated } else { SnapshotError::Io(e) }
}

/// One `\n`-terminated line of at most `max` bytes (the newline included).
fn read_line(input: &mut impl Read, max: usize) -> Result<Vec<u8>, SnapshotError> {
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    loop {
        input.read_exact(&mut byte).map_err(eof)?;
        line.push(byte[0]);
        if byte[0] == b'\n' {
            return Ok(line);
        }
        if line.len() >= max {
            return Err(SnapshotError::Corrupt("a header line too long".into()));
        }
    }
}

/// Now, as a snapshot's `createdAt`.
pub fn now() -> String {
    jiff::Timestamp::now().round(jiff::Unit::Second).map(|t| t.to_string()).unwrap_or_default()
}

/// Writes a whole snapshot of `keys` (in key order) to `out`; for tests and small stores.
pub fn write_all(out: &mut impl Write, header: &Header, keys: &[KeyValue]) -> std::io::Result<()> {
    let mut encoder = Encoder::default();
    out.write_all(&encoder.header(header))?;
    for kv in keys {
        out.write_all(&encoder.record(kv))?;
    }
    out.write_all(&encoder.end())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    fn kv(key: &str, value: &str, create: i64, modified: i64) -> KeyValue {
        KeyValue {
            key: key.into(),
            value: Bytes::from(value.to_owned()),
            create_revision: create,
            mod_revision: modified,
        }
    }

    fn sample() -> Vec<u8> {
        let header =
            Header { revision: 9, compacted: 2, created_at: "2026-11-28T00:00:00Z".into(), versa: "0.1.0".into() };
        let mut out = Vec::new();
        write_all(&mut out, &header, &[kv("/a", "one", 1, 3), kv("/b", "", 5, 9)]).unwrap();
        out
    }

    fn read(bytes: &[u8]) -> Result<(Header, Vec<KeyValue>), SnapshotError> {
        let mut d = Decoder::open(bytes)?;
        let mut keys = Vec::new();
        while let Some(kv) = d.next_key()? {
            keys.push(kv);
        }
        Ok((d.header().clone(), keys))
    }

    #[test]
    fn a_snapshot_reads_back_as_written() {
        let (header, keys) = read(&sample()).unwrap();
        assert_eq!(header.revision, 9);
        assert_eq!(keys, vec![kv("/a", "one", 1, 3), kv("/b", "", 5, 9)]);
    }

    #[test]
    fn every_truncation_is_refused() {
        let bytes = sample();
        for len in 0..bytes.len() {
            let err = read(&bytes[..len]).unwrap_err();
            assert!(matches!(err, SnapshotError::Truncated | SnapshotError::Foreign), "{len}: {err}");
        }
    }

    #[test]
    fn every_flipped_byte_is_refused() {
        let bytes = sample();
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x20;
            assert!(read(&bad).is_err(), "byte {i} flipped was taken for a snapshot");
        }
    }

    #[test]
    fn foreign_newer_and_extended_files_are_refused() {
        assert_eq!(
            read(b"SQLite format 3\0").unwrap_err().to_string(),
            "not a versa snapshot (it does not start with \"versa-snapshot\")"
        );
        assert_eq!(
            read(b"versa-snapshot 2\n{}\n").unwrap_err().to_string(),
            "snapshot format 2 was written by a newer versa; this versa reads format 1 at most"
        );
        let mut extended = sample();
        extended.push(0);
        assert_eq!(read(&extended).unwrap_err().to_string(), "the snapshot is corrupt: bytes follow its end");
    }
}
