//! Backup and restore of the embedded store, in versa's snapshot format
//! (`versa_storage::snapshot`), and the data directory's format version.
//!
//! - A snapshot is one redb read transaction: every key at the revision it saw, streamed in key
//!   order while the writer goes on (MVCC readers never block it). Records are sent in chunks of
//!   about [`CHUNK`] bytes, and a slow receiver holds only the channel's few chunks in memory.
//! - A restore writes a new data directory: into a hidden sibling (`.<name>.restoring`), in
//!   transactions of [`BATCH`] keys, and only once the snapshot's end record has been read and
//!   checked does it record the revision and rename the directory into place — a failed or
//!   killed restore leaves no directory a server would open. The restored store's revision is
//!   the snapshot's moved on by `bump` and marked compacted there: every `resourceVersion` a
//!   client may hold from before (even of writes after the snapshot, now lost) is then too old,
//!   and its watch or list at it gets kube's 410 Gone — clients relist, as after an etcd restore
//!   with `--bump-revision --mark-compacted`.
//! - [`DATA_FORMAT`] is recorded in the `meta` table of every store this versa opens; a newer
//!   format is refused when opening (`crate::OpenError::NewerFormat`), a directory written
//!   before the marker existed is format 1.

use std::io::Read;
use std::path::{Path, PathBuf};

use bytes::{Bytes, BytesMut};
use redb::{Durability, ReadableDatabase as _, ReadableTable as _};
use tokio::sync::mpsc;
use versa_storage::snapshot::{Decoder, Encoder, Header, SnapshotError};
use versa_storage::{Error, Result};

use crate::record::{Deflater, decode_kv, encode_kv};
use crate::{DB_FILE, KV, META, META_COMPACTED, META_FORMAT, META_REVISION};

pub use versa_storage::DATA_FORMAT;

/// About how many bytes of records a snapshot sends at once.
const CHUNK: usize = 256 * 1024;

/// Keys a restore writes per transaction.
const BATCH: usize = 10_000;

/// The revision a restore moves on by unless told otherwise: more than a store writes in years
/// of normal use, so no `resourceVersion` from before the restore can be mistaken for a later one.
pub const DEFAULT_BUMP: i64 = 1_000_000_000;

fn unavailable(e: impl Into<redb::Error>) -> Error {
    Error::unavailable("embedded store", e.into())
}

/// Streams every key of one read transaction to `out` (blocking: run it off the runtime).
pub(crate) fn snapshot(db: &redb::Database, out: &mpsc::Sender<Bytes>) -> Result<Header> {
    let txn = db.begin_read().map_err(unavailable)?;
    let (revision, compacted) = crate::read::revisions(&txn)?;
    let kv = txn.open_table(KV).map_err(unavailable)?;
    let header = Header {
        revision,
        compacted,
        created_at: versa_storage::snapshot::now(),
        versa: env!("CARGO_PKG_VERSION").into(),
    };
    let gone = || Error::unavailable_msg("the snapshot's reader went away");
    let mut encoder = Encoder::default();
    out.blocking_send(encoder.header(&header)).map_err(|_| gone())?;
    let mut chunk = BytesMut::with_capacity(CHUNK);
    for entry in kv.iter().map_err(unavailable)? {
        let (key, raw) = entry.map_err(unavailable)?;
        let kv = decode_kv(key.value(), raw.value()).map_err(|e| Error::unavailable("embedded store", e))?;
        chunk.extend_from_slice(&encoder.record(&kv));
        if chunk.len() >= CHUNK {
            out.blocking_send(chunk.split().freeze()).map_err(|_| gone())?;
        }
    }
    if !chunk.is_empty() {
        out.blocking_send(chunk.freeze()).map_err(|_| gone())?;
    }
    out.blocking_send(encoder.end()).map_err(|_| gone())?;
    Ok(header)
}

/// What a restore did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restored {
    /// The snapshot's header.
    pub header: Header,
    /// Keys restored.
    pub keys: u64,
    /// The restored store's revision (the snapshot's plus the bump), compacted there.
    pub revision: i64,
}

/// Why a restore did not happen.
#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    #[error("{0}")]
    Snapshot(#[from] SnapshotError),
    #[error("data directory {0} already holds data: restore into a new data directory")]
    NotEmpty(PathBuf),
    #[error("restoring into {dir}: {source}")]
    Io {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("restoring into {dir}: {source}")]
    Database {
        dir: PathBuf,
        #[source]
        source: Box<redb::Error>,
    },
}

/// Restores the snapshot read from `input` into the new data directory `dir` (absent, or an
/// empty directory), moving the revision on by `bump`.
pub fn restore(input: impl Read, dir: &Path, bump: i64) -> std::result::Result<Restored, RestoreError> {
    let io = |source| RestoreError::Io { dir: dir.to_path_buf(), source };
    if dir.exists() && std::fs::read_dir(dir).map_err(io)?.next().is_some() {
        return Err(RestoreError::NotEmpty(dir.to_path_buf()));
    }
    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "data".into());
    let staging = dir.with_file_name(format!(".{name}.restoring"));
    if staging.exists() {
        // What a killed restore left.
        std::fs::remove_dir_all(&staging).map_err(io)?;
    }
    std::fs::create_dir_all(&staging).map_err(io)?;
    let result = fill(input, &staging, bump);
    let restored = match result {
        Ok(r) => r,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&staging);
            return Err(e);
        }
    };
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent).map_err(io)?;
    }
    if dir.exists() {
        std::fs::remove_dir(dir).map_err(io)?;
    }
    std::fs::rename(&staging, dir).map_err(io)?;
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::File::open(parent).and_then(|f| f.sync_all()).map_err(io)?;
    }
    Ok(restored)
}

/// Writes the snapshot into a new database in `dir`; the revision last, after the end record
/// has been checked.
fn fill(input: impl Read, dir: &Path, bump: i64) -> std::result::Result<Restored, RestoreError> {
    let db_err = |e: redb::Error| RestoreError::Database { dir: dir.to_path_buf(), source: Box::new(e) };
    let mut decoder = Decoder::open(input)?;
    let db = redb::Database::create(dir.join(DB_FILE)).map_err(|e| db_err(e.into()))?;
    crate::writer::init_tables(&db).map_err(db_err)?;
    let mut deflater = Deflater::default();
    let mut keys = 0u64;
    let mut done = false;
    while !done {
        let mut txn = db.begin_write().map_err(|e| db_err(e.into()))?;
        txn.set_durability(Durability::None).map_err(|e| db_err(e.into()))?;
        {
            let mut kv = txn.open_table(KV).map_err(|e| db_err(e.into()))?;
            for _ in 0..BATCH {
                let Some(record) = decoder.next_key()? else {
                    done = true;
                    break;
                };
                let stored = deflater.store(&record.value);
                let raw = encode_kv(record.create_revision, record.mod_revision, &stored);
                kv.insert(record.key.as_str(), raw.as_slice()).map_err(|e| db_err(e.into()))?;
                keys += 1;
            }
        }
        txn.commit().map_err(|e| db_err(e.into()))?;
    }
    let header = decoder.header().clone();
    let revision = header.revision.saturating_add(bump.max(0));
    let txn = db.begin_write().map_err(|e| db_err(e.into()))?;
    {
        let mut meta = txn.open_table(META).map_err(|e| db_err(e.into()))?;
        meta.insert(META_REVISION, revision as u64).map_err(|e| db_err(e.into()))?;
        meta.insert(META_COMPACTED, revision as u64).map_err(|e| db_err(e.into()))?;
        meta.insert(META_FORMAT, DATA_FORMAT).map_err(|e| db_err(e.into()))?;
    }
    txn.commit().map_err(|e| db_err(e.into()))?;
    drop(db);
    std::fs::File::open(dir)
        .and_then(|f| f.sync_all())
        .map_err(|source| RestoreError::Io { dir: dir.to_path_buf(), source })?;
    Ok(Restored { header, keys, revision })
}

/// The data format recorded in `db`, recording [`DATA_FORMAT`] when there is none (a store
/// created now, or by a versa from before the marker: format 1).
pub(crate) fn check_format(db: &redb::Database) -> std::result::Result<u64, redb::Error> {
    let txn = db.begin_read()?;
    let found = txn.open_table(META)?.get(META_FORMAT)?.map(|v| v.value());
    drop(txn);
    if let Some(found) = found {
        return Ok(found);
    }
    let txn = db.begin_write()?;
    txn.open_table(META)?.insert(META_FORMAT, DATA_FORMAT)?;
    txn.commit()?;
    Ok(DATA_FORMAT)
}
