//! The assembled `/openapi/v2` ([`V2Document`]): written entry by entry into a gzip stream and
//! its SHA-512 at once, the stream straight into an anonymous temporary file (`spill.rs`); its
//! `ETag` as kube-openapi computes it; its protobuf form, converted from the JSON on first use
//! (`proto/`) and kept compressed beside it; both inflated per request for clients that do
//! not take gzip.

use std::io::{self, Read as _, Write};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use flate2::Compression;
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;

use super::document::{DefinitionPart, write_v2};
use super::proto;
use crate::spill::{OpenFile, Spilled};

/// Errors of building or converting a document.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("writing the OpenAPI document: {0}")]
    Io(#[source] io::Error),
    #[error("converting the OpenAPI v2 document to protobuf: {0}")]
    Protobuf(#[source] serde_json::Error),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The assembled `/openapi/v2`: its JSON gzip-compressed, the JSON's hash, and the protobuf
/// form (also compressed) once asked for — both compressed forms in temporary files
/// ([`Spilled`]). Shared with the requests serving it, so that inflating or converting it
/// happens outside the cache's lock; a request streaming a compressed form holds that form
/// (and so its file) until it is sent, even if the document is replaced meanwhile.
#[derive(Debug)]
pub struct V2Document {
    json: Compressed,
    etag: String,
    protobuf: Mutex<Option<Compressed>>,
    open: OpenFile,
}

/// A document kept gzip-compressed, and its length uncompressed.
#[derive(Debug, Clone)]
struct Compressed {
    gzip: Arc<Spilled>,
    len: usize,
}

/// The compression level of the kept v2 document (and its protobuf form): the fastest. On the
/// CRD corpus, level 6 makes the text about a third smaller than level 1 (~10×) but takes three
/// times as long, and the document is compressed after every change of a definition.
const GZIP_LEVEL: u32 = 1;

impl V2Document {
    /// Writes the v2 document into a gzip stream and its hash at once, entry by entry, the
    /// stream straight into its temporary file: neither the JSON nor its compressed form is
    /// ever held whole. (Written again into memory if the file fails: see [`Spilled::write`].)
    pub(super) fn assemble(parts: &[Arc<DefinitionPart>], open: OpenFile) -> Result<V2Document> {
        let (gzip, (hash, len)) = Spilled::write(open, "/openapi/v2", |file| {
            let sink = HashingGzip {
                gzip: GzEncoder::new(file, Compression::new(GZIP_LEVEL)),
                hash: ring::digest::Context::new(&ring::digest::SHA512),
                len: 0,
            };
            let mut out = io::BufWriter::with_capacity(64 * 1024, sink);
            write_v2(&mut out, parts)?;
            let HashingGzip { gzip, hash, len } = out.into_inner().map_err(|e| e.into_error())?;
            gzip.finish()?;
            Ok((hash.finish(), len))
        })
        .map_err(Error::Io)?;
        let json = Compressed { gzip: Arc::new(gzip), len };
        Ok(V2Document { json, etag: hex(hash.as_ref()), protobuf: Mutex::new(None), open })
    }

    /// The `ETag` of `/openapi/v2` (unquoted): [`etag`] of the JSON, for both forms (answers
    /// vary by `Accept`).
    pub fn etag(&self) -> &str {
        &self.etag
    }

    /// The JSON, gzip-compressed (`Content-Encoding: gzip`): to stream ([`spill::body`]).
    pub fn json_gzip(&self) -> Arc<Spilled> {
        Arc::clone(&self.json.gzip)
    }

    /// The JSON (inflated for this request).
    pub fn json(&self) -> Result<Bytes> {
        self.json.inflate().map_err(Error::Io)
    }

    /// Gnostic's `openapi.v2.Document` protobuf, gzip-compressed: converted from the JSON on
    /// first use and kept with it (written once into its own temporary file).
    pub fn protobuf_gzip(&self) -> Result<Arc<Spilled>> {
        Ok(self.protobuf_compressed()?.gzip)
    }

    /// Gnostic's `openapi.v2.Document` protobuf (inflated for this request).
    pub fn protobuf(&self) -> Result<Bytes> {
        self.protobuf_compressed()?.inflate().map_err(Error::Io)
    }

    fn protobuf_compressed(&self) -> Result<Compressed> {
        let mut memo = self.protobuf.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(kept) = &*memo {
            return Ok(kept.clone());
        }
        let protobuf = proto::document(&self.json()?).map_err(Error::Protobuf)?;
        let (gzip, ()) = Spilled::write(self.open, "/openapi/v2 protobuf", |file| {
            let mut gzip = GzEncoder::new(file, Compression::new(GZIP_LEVEL));
            gzip.write_all(&protobuf)?;
            gzip.finish().map(drop)
        })
        .map_err(Error::Io)?;
        let kept = Compressed { gzip: Arc::new(gzip), len: protobuf.len() };
        *memo = Some(kept.clone());
        Ok(kept)
    }
}

impl Compressed {
    /// Gunzips the document into exactly its length: a stream that inflates to more or less
    /// (it never should: it is the process's own) is an error, and at most `len` bytes are
    /// allocated whatever it holds.
    fn inflate(&self) -> io::Result<Bytes> {
        let mut out = Vec::with_capacity(self.len);
        let mut gzip = GzDecoder::new(self.gzip.reader());
        (&mut gzip).take(self.len as u64).read_to_end(&mut out)?;
        // Reading on to the end checks the stream's trailer (CRC and length) too.
        if out.len() != self.len || gzip.read(&mut [0])? != 0 {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "the kept document inflates to another length"));
        }
        Ok(Bytes::from(out))
    }
}

/// kube-openapi's hash of a document: uppercase hex SHA-512 (the v2 `ETag`, quoted).
pub fn etag(bytes: &[u8]) -> String {
    hex(ring::digest::digest(&ring::digest::SHA512, bytes).as_ref())
}

pub(super) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02X}");
    }
    out
}

/// A `Write` that feeds a gzip stream and a hash, counting the bytes.
struct HashingGzip<W: Write> {
    gzip: GzEncoder<W>,
    hash: ring::digest::Context,
    len: usize,
}

impl<W: Write> Write for HashingGzip<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.gzip.write_all(buf)?;
        self.hash.update(buf);
        self.len += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.gzip.flush()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    /// Inflating checks the length and the stream's trailer.
    #[test]
    fn inflating_is_exact() {
        let text = b"{\"swagger\":\"2.0\"}".repeat(100);
        let mut gzip = GzEncoder::new(Vec::new(), Compression::new(GZIP_LEVEL));
        gzip.write_all(&text).unwrap();
        let gzip = Arc::new(Spilled::in_memory(gzip.finish().unwrap()));
        let kept = |len| Compressed { gzip: Arc::clone(&gzip), len };
        assert_eq!(kept(text.len()).inflate().unwrap(), text);
        assert_eq!(kept(text.len() - 1).inflate().unwrap_err().kind(), io::ErrorKind::InvalidData);
        assert!(kept(text.len() + 1).inflate().is_err());
        let mut corrupt = gzip.to_bytes().unwrap().to_vec();
        let crc = corrupt.len() - 8;
        corrupt[crc] ^= 1;
        let corrupt = Compressed { gzip: Arc::new(Spilled::in_memory(corrupt)), len: text.len() };
        assert!(corrupt.inflate().is_err(), "the CRC is checked");
    }
}
