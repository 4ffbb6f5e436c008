//! Large bytes a cache keeps between requests, kept out of the process's memory: written once
//! into an anonymous temporary file and read back for each request (the assembled
//! `/openapi/v2` and its protobuf form, several MiB each with many definitions). They then cost
//! page cache, which the kernel reclaims under pressure and which is not the process's RSS,
//! instead of heap.
//!
//! - The file comes from `tempfile::tempfile()`: in `TMPDIR` (`/tmp` when unset), unlinked at
//!   creation (`O_TMPFILE` where the filesystem has it, else created and removed at once), so a
//!   crash leaves nothing behind; it is closed, and its space freed, when the last [`Spilled`]
//!   holding it is dropped — a request still streaming an old document keeps it until it ends.
//! - Reads are positional (`pread`, [`std::os::unix::fs::FileExt::read_at`]): concurrent
//!   requests share one file with no lock and no shared cursor.
//! - When the file cannot be made or written (a read-only or full `TMPDIR`), the bytes are kept
//!   in memory instead, exactly sized, and nothing fails for it; the first such fallback of the
//!   process is logged as a warning, later ones at debug level.
//! - [`body`] streams a [`Spilled`] as a response body, 64 KiB at a time, each read on tokio's
//!   blocking pool (as `tokio::fs` reads), so a slow disk never stalls an async worker and a
//!   slow client holds no thread.

use std::convert::Infallible;
use std::fs::File;
use std::future::Future as _;
use std::io::{self, Read, Write};
use std::os::unix::fs::FileExt as _;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http_body::{Body as HttpBody, Frame, SizeHint};
use http_body_util::BodyExt as _;
use tokio::task::JoinHandle;

use crate::body::Body;

/// Makes the file bytes are spilled into: [`temp_file`] when serving; tests pass one that
/// fails, to take the in-memory path.
pub type OpenFile = fn() -> io::Result<File>;

/// An anonymous temporary file in `TMPDIR` (see the module's documentation).
pub fn temp_file() -> io::Result<File> {
    tempfile::tempfile()
}

/// Bytes written once and read many times: in an anonymous temporary file, or in memory when
/// no file could be made or written.
#[derive(Debug)]
pub struct Spilled {
    kept: Kept,
    len: u64,
}

#[derive(Debug)]
enum Kept {
    File(File),
    /// Exactly sized (no spare capacity).
    Memory(Bytes),
}

/// The size of the chunks [`body`] reads: large enough that a few MiB take tens of reads, small
/// enough that a chunk per connection in flight costs little.
const CHUNK: usize = 64 * 1024;

/// Whether a fallback to memory was logged as a warning already.
static WARNED: AtomicBool = AtomicBool::new(false);

impl Spilled {
    /// Writes the bytes with `write` into a file made by `open` and returns them with what
    /// `write` returned. When the file cannot be made or a write into it fails, `write` is
    /// called again from the start into memory (so it must write the same bytes each time);
    /// only an error of that second call is returned. `what` names the bytes in the log.
    ///
    /// Writes go to the file as `write` makes them (unbuffered): give it a writer that writes
    /// in large pieces, such as a gzip encoder.
    pub fn write<T>(
        open: OpenFile,
        what: &str,
        mut write: impl FnMut(&mut dyn Write) -> io::Result<T>,
    ) -> io::Result<(Spilled, T)> {
        let spilled = open().and_then(|file| {
            let mut counted = Counted { file, len: 0 };
            let value = write(&mut counted)?;
            Ok((Spilled { len: counted.len, kept: Kept::File(counted.file) }, value))
        });
        let error = match spilled {
            Ok(spilled) => return Ok(spilled),
            Err(error) => error,
        };
        if WARNED.swap(true, Ordering::Relaxed) {
            tracing::debug!(what, %error, "no temporary file: kept in memory");
        } else {
            tracing::warn!(
                what,
                %error,
                dir = %std::env::temp_dir().display(),
                "no temporary file (TMPDIR): large documents are kept in memory instead; further fallbacks are logged at debug level"
            );
        }
        let mut memory = Vec::new();
        let value = write(&mut memory)?;
        Ok((Spilled::in_memory(memory), value))
    }

    /// `bytes` kept in memory, exactly sized.
    pub fn in_memory(bytes: Vec<u8>) -> Spilled {
        let bytes = Bytes::from(bytes.into_boxed_slice());
        Spilled { len: bytes.len() as u64, kept: Kept::Memory(bytes) }
    }

    /// The number of bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether the bytes are in a file (else in memory).
    pub fn in_file(&self) -> bool {
        matches!(self.kept, Kept::File(_))
    }

    /// All the bytes: read from the file (a copy, freed with the answer), or the kept ones.
    pub fn to_bytes(&self) -> io::Result<Bytes> {
        self.read_chunk(0, usize::MAX)
    }

    /// A reader of the bytes from the start, with its own offset.
    pub fn reader(&self) -> Reader<'_> {
        Reader { spilled: self, offset: 0 }
    }

    /// Up to `max` bytes from `offset` (none past the end): read from the file, or a slice of
    /// the kept ones.
    fn read_chunk(&self, offset: u64, max: usize) -> io::Result<Bytes> {
        let n = usize::try_from(self.len.saturating_sub(offset)).unwrap_or(usize::MAX).min(max);
        match &self.kept {
            Kept::File(file) => {
                let mut buf = vec![0; n];
                file.read_exact_at(&mut buf, offset)?;
                Ok(Bytes::from(buf))
            }
            Kept::Memory(bytes) => {
                let start = usize::try_from(offset).unwrap_or(usize::MAX).min(bytes.len());
                Ok(bytes.slice(start..start + n.min(bytes.len() - start)))
            }
        }
    }
}

/// Reads a [`Spilled`] from the start (see [`Spilled::reader`]).
#[derive(Debug)]
pub struct Reader<'a> {
    spilled: &'a Spilled,
    offset: u64,
}

impl Read for Reader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = usize::try_from(self.spilled.len.saturating_sub(self.offset)).unwrap_or(usize::MAX);
        let n = left.min(buf.len());
        if n == 0 {
            return Ok(0);
        }
        let read = match &self.spilled.kept {
            Kept::File(file) => file.read_at(&mut buf[..n], self.offset)?,
            Kept::Memory(bytes) => {
                let start = usize::try_from(self.offset).unwrap_or(usize::MAX);
                match bytes.get(start..).and_then(|rest| rest.get(..n)) {
                    Some(chunk) => {
                        buf[..n].copy_from_slice(chunk);
                        n
                    }
                    None => 0,
                }
            }
        };
        if read == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the kept bytes are shorter than written"));
        }
        self.offset += read as u64;
        Ok(read)
    }
}

/// A `Write` into the file that counts what was written.
struct Counted {
    file: File,
    len: u64,
}

impl Write for Counted {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.file.write(buf)?;
        self.len += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

/// A response body streaming `spilled`, which it holds until the last chunk is sent (its
/// length is the body's exact size, hence the answer's `Content-Length`). Bytes in memory go
/// out as one frame. A file that cannot be read (it never should: it is the process's own)
/// ends the body early, which the client sees as a truncated answer, and is logged.
pub fn body(spilled: Arc<Spilled>) -> Body {
    SpilledBody { spilled, offset: 0, reading: None }.boxed()
}

#[derive(Debug)]
struct SpilledBody {
    spilled: Arc<Spilled>,
    /// How much was sent.
    offset: u64,
    /// The chunk being read on the blocking pool.
    reading: Option<JoinHandle<io::Result<Bytes>>>,
}

impl SpilledBody {
    /// The frame of a chunk read (or the end, when it could not be).
    fn frame(&mut self, chunk: io::Result<Bytes>) -> Option<Result<Frame<Bytes>, Infallible>> {
        match chunk {
            Ok(bytes) if !bytes.is_empty() => {
                self.offset += bytes.len() as u64;
                Some(Ok(Frame::data(bytes)))
            }
            Ok(_) => {
                self.offset = self.spilled.len;
                None
            }
            Err(error) => {
                tracing::warn!(%error, sent = self.offset, len = self.spilled.len, "reading a kept document: answer cut short");
                self.offset = self.spilled.len;
                None
            }
        }
    }
}

impl HttpBody for SpilledBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = &mut *self;
        if this.reading.is_none() {
            if this.offset >= this.spilled.len {
                return Poll::Ready(None);
            }
            let runtime = tokio::runtime::Handle::try_current();
            match (&this.spilled.kept, runtime) {
                (Kept::File(_), Ok(runtime)) => {
                    let (spilled, offset) = (Arc::clone(&this.spilled), this.offset);
                    this.reading = Some(runtime.spawn_blocking(move || spilled.read_chunk(offset, CHUNK)));
                }
                // Outside a runtime (a body polled by hand), the file is read in place.
                (Kept::File(_), Err(_)) => {
                    let chunk = this.spilled.read_chunk(this.offset, CHUNK);
                    return Poll::Ready(this.frame(chunk));
                }
                (Kept::Memory(_), _) => {
                    let chunk = this.spilled.read_chunk(this.offset, usize::MAX);
                    return Poll::Ready(this.frame(chunk));
                }
            }
        }
        let Some(reading) = &mut this.reading else {
            return Poll::Ready(None);
        };
        let joined = ready!(Pin::new(reading).poll(cx));
        this.reading = None;
        let chunk = joined.unwrap_or_else(|e| Err(io::Error::other(e)));
        Poll::Ready(this.frame(chunk))
    }

    fn is_end_stream(&self) -> bool {
        self.offset >= self.spilled.len
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.spilled.len.saturating_sub(self.offset))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Bytes that do not repeat with the chunk size.
    fn sample(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 7 + i / 251) as u8).collect()
    }

    /// An [`OpenFile`] of a read-only `TMPDIR`: no file can be made.
    pub(crate) fn failing() -> io::Result<File> {
        Err(io::Error::new(io::ErrorKind::ReadOnlyFilesystem, "read-only file system"))
    }

    /// An [`OpenFile`] of a full `TMPDIR` (`/dev/full`): it opens, and every write fails with
    /// ENOSPC.
    pub(crate) fn full() -> io::Result<File> {
        std::fs::OpenOptions::new().read(true).write(true).open("/dev/full")
    }

    fn write_sample(open: OpenFile, bytes: &[u8]) -> (Spilled, usize) {
        let mut calls = 0;
        let (spilled, ()) = Spilled::write(open, "test", |w| {
            calls += 1;
            w.write_all(bytes)
        })
        .unwrap();
        (spilled, calls)
    }

    async fn collect(body: Body) -> (Bytes, usize) {
        let mut body = body;
        let (mut out, mut frames) = (Vec::new(), 0);
        while let Some(frame) = body.frame().await {
            out.extend_from_slice(frame.unwrap().data_ref().unwrap());
            frames += 1;
        }
        (Bytes::from(out), frames)
    }

    #[test]
    fn kept_in_a_file() {
        let bytes = sample(3 * CHUNK + 17);
        let (spilled, calls) = write_sample(temp_file, &bytes);
        assert!(spilled.in_file());
        assert_eq!((calls, spilled.len()), (1, bytes.len() as u64));
        assert_eq!(spilled.to_bytes().unwrap(), bytes);
        let mut read = Vec::new();
        spilled.reader().read_to_end(&mut read).unwrap();
        assert_eq!(read, bytes);
        assert_eq!(spilled.read_chunk(CHUNK as u64, 10).unwrap(), bytes[CHUNK..CHUNK + 10]);
        assert_eq!(spilled.read_chunk(bytes.len() as u64 - 3, 10).unwrap(), bytes[bytes.len() - 3..]);
        assert!(spilled.read_chunk(bytes.len() as u64 + 5, 10).unwrap().is_empty());
    }

    /// No file (read-only `TMPDIR`), or a file whose writes fail (a full one): the same bytes,
    /// in memory, exactly sized.
    #[test]
    fn kept_in_memory_when_no_file() {
        let bytes = sample(CHUNK + 1);
        let (spilled, calls) = write_sample(failing, &bytes);
        assert!(!spilled.in_file());
        assert_eq!(calls, 1);
        assert_eq!(spilled.to_bytes().unwrap(), bytes);

        if std::path::Path::new("/dev/full").exists() {
            let (spilled, calls) = write_sample(full, &bytes);
            assert!(!spilled.in_file());
            assert_eq!(calls, 2, "written again, into memory");
            assert_eq!(spilled.len(), bytes.len() as u64);
            assert_eq!(spilled.to_bytes().unwrap(), bytes);
            let mut read = Vec::new();
            spilled.reader().read_to_end(&mut read).unwrap();
            assert_eq!(read, bytes);
        }

        // An error of the writer itself is returned (after the second try).
        let mut calls = 0;
        let err = Spilled::write(temp_file, "test", |_| -> io::Result<()> {
            calls += 1;
            Err(io::Error::other("broken"))
        })
        .unwrap_err();
        assert_eq!((err.to_string().as_str(), calls), ("broken", 2));
    }

    /// The body streams the file in chunks with an exact size, and keeps the file open after
    /// every other holder let go (a document replaced while it is sent).
    #[tokio::test]
    async fn streamed_in_chunks() {
        let bytes = sample(2 * CHUNK + 5);
        let spilled = Arc::new(write_sample(temp_file, &bytes).0);
        let body = body(Arc::clone(&spilled));
        assert_eq!(body.size_hint().exact(), Some(bytes.len() as u64));
        drop(spilled);
        let (got, frames) = collect(body).await;
        assert_eq!(got, bytes);
        assert_eq!(frames, 3);

        let spilled = Arc::new(write_sample(failing, &bytes).0);
        let (got, frames) = collect(super::body(spilled)).await;
        assert_eq!((got, frames), (Bytes::from(bytes), 1), "in memory: one frame");

        let empty = Arc::new(write_sample(temp_file, b"").0);
        let body = super::body(empty);
        assert!(body.is_end_stream());
        assert_eq!(collect(body).await, (Bytes::new(), 0));
    }

    /// Read where no runtime is (the body polled by hand): the same bytes.
    #[test]
    fn streamed_outside_a_runtime() {
        let bytes = sample(CHUNK + 5);
        let spilled = Arc::new(write_sample(temp_file, &bytes).0);
        let mut body = SpilledBody { spilled, offset: 0, reading: None };
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        let mut got = Vec::new();
        while let Poll::Ready(Some(frame)) = Pin::new(&mut body).poll_frame(&mut cx) {
            got.extend_from_slice(frame.unwrap().data_ref().unwrap());
        }
        assert_eq!(got, bytes);
    }
}
