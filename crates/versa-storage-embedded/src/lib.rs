//! versa's default store: one redb file in the data directory, owned by one process.
//!
//! Why redb: a maintained, pure-Rust, ACID engine with a stable file format, MVCC readers that
//! never block the writer, and `Durability::Immediate` commits (durable when `commit` returns).
//! Its single-writer model is exactly what a global revision counter wants (see
//! `docs/storage.md` for the comparison with fjall, sled and SQLite).
//!
//! The shape:
//! - [`writer`]: one thread owns every write. Requests queue on a channel; the thread takes
//!   everything queued into one transaction and one fsync (group commit), gives each write the
//!   next revision, answers each request, then publishes the batch's events.
//! - [`read`]: gets and lists run on read snapshots, concurrently with the writer. A list at a
//!   past revision is today's list with the later log entries undone. Gets share the latest
//!   snapshot until the next commit.
//! - [`watch`]: a broadcast of committed batches (bounded by count and by bytes); each watch
//!   catches up from the durable event log, then follows the broadcast, and falls back to the
//!   log whenever it lags.
//! - [`record`]: the byte layout of the tables; values from 4 KiB up are stored deflated.
//!
//! - [`backup`]: snapshots of one read transaction and restores into a new data directory
//!   (`versa backup`, `versa restore`), and the data format version.
//!
//! Tables: `kv` (key → current value and revisions), `log` (revision → event with the previous
//! value, kept for a bounded window of time and count), `meta` (revision, compacted revision,
//! data format).

mod backup;
mod read;
mod record;
mod watch;
mod writer;

use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use redb::TableDefinition;
use tokio::sync::oneshot;
use versa_storage::{BoxFuture, Deleted, Error, KeyValue, ListOptions, ListPage, Result, Store, Watch};

use crate::watch::Hub;
use crate::writer::Op;

pub(crate) const KV: TableDefinition<&str, &[u8]> = TableDefinition::new("kv");
pub(crate) const LOG: TableDefinition<u64, &[u8]> = TableDefinition::new("log");
pub(crate) const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
pub(crate) const META_REVISION: &str = "revision";
pub(crate) const META_COMPACTED: &str = "compacted";
/// The data format the store was written in ([`DATA_FORMAT`]).
pub(crate) const META_FORMAT: &str = "format";

pub use backup::{DATA_FORMAT, DEFAULT_BUMP, RestoreError, Restored, restore};

/// The database file inside the data directory.
pub const DB_FILE: &str = "store.redb";
/// The lock file that makes one process the owner of the data directory.
pub const LOCK_FILE: &str = "store.lock";

/// Tunables of the embedded store. The defaults suit a single versa process.
#[derive(Debug, Clone)]
pub struct Config {
    /// Watch history older than this is dropped (lists and watches before it get `Expired`).
    pub history_max_age: Duration,
    /// At most this many events are kept in the history.
    pub history_max_events: u64,
    /// Every watch gets a `Progress` item this often (`None`: only on request).
    pub progress_interval: Option<Duration>,
    /// At most this many writes share one commit.
    pub max_batch: usize,
    /// Items a watch buffers for a slow consumer before the watch stops reading live batches.
    pub watch_buffer: usize,
    /// Committed batches kept in memory for watches; a watch further behind re-reads the log.
    pub broadcast_batches: usize,
    /// At most this many bytes of keys and values of those batches are kept (the oldest
    /// batches' events are dropped first, and a watch behind them re-reads the log): large
    /// values make 1,024 batches tens of MiB. Default 16 MiB.
    pub broadcast_bytes: usize,
    /// redb's page cache, in bytes.
    pub cache_bytes: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            history_max_age: Duration::from_secs(5 * 60),
            history_max_events: 100_000,
            progress_interval: Some(Duration::from_secs(5)),
            max_batch: 1024,
            watch_buffer: 256,
            broadcast_batches: 1024,
            broadcast_bytes: 16 * 1024 * 1024,
            cache_bytes: 64 * 1024 * 1024,
        }
    }
}

/// Errors opening a data directory.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("data directory {dir}: {source}")]
    Io {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("data directory {dir} is in use by another versa process{holder}; stop it or choose another --data-dir")]
    InUse { dir: PathBuf, holder: String },
    #[error(
        "data directory {dir} was written by a newer versa (data format {found}); this versa reads data format {DATA_FORMAT} at most: run the newer versa, or restore into a new data directory a backup this versa can read"
    )]
    NewerFormat { dir: PathBuf, found: u64 },
    #[error("data directory {dir}: cannot open {DB_FILE}: {source}")]
    Database {
        dir: PathBuf,
        #[source]
        source: Box<redb::Error>,
    },
}

/// The files of an open store: the database and the directory lock, released together.
#[derive(Debug)]
pub(crate) struct Shared {
    /// Before `db`: the kept snapshot is released first.
    pub latest: read::LatestKv,
    pub db: redb::Database,
    pub hub: Hub,
    pub config: Config,
    _lock: File,
}

/// The embedded store. Cheap to share behind an `Arc`; dropping the last handle stops the
/// writer thread (every acknowledged write is already durable).
#[derive(Debug)]
pub struct EmbeddedStore {
    shared: Arc<Shared>,
    /// `None` only while dropping.
    ops: Option<std::sync::mpsc::Sender<Op>>,
    writer: Option<std::thread::JoinHandle<()>>,
}

impl Drop for EmbeddedStore {
    /// Stops the writer (after the writes already queued) and ends every watch, so the data
    /// directory is released as soon as the last watch consumer has let go.
    fn drop(&mut self) {
        self.ops = None;
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}

impl EmbeddedStore {
    /// Opens (creating if needed) the store in `dir`. Fails with [`OpenError::InUse`] when another
    /// process has it open.
    pub fn open(dir: &Path, config: Config) -> std::result::Result<EmbeddedStore, OpenError> {
        let io = |source| OpenError::Io { dir: dir.to_path_buf(), source };
        std::fs::create_dir_all(dir).map_err(io)?;
        let lock = lock_dir(dir)?;
        let db = redb::Database::builder().set_cache_size(config.cache_bytes).create(dir.join(DB_FILE)).map_err(
            |e| match e {
                redb::DatabaseError::DatabaseAlreadyOpen => {
                    OpenError::InUse { dir: dir.to_path_buf(), holder: String::new() }
                }
                e => OpenError::Database { dir: dir.to_path_buf(), source: Box::new(e.into()) },
            },
        )?;
        let db_err = |e: redb::Error| OpenError::Database { dir: dir.to_path_buf(), source: Box::new(e) };
        let revision = writer::init_tables(&db).map_err(db_err)?;
        let format = backup::check_format(&db).map_err(db_err)?;
        if format > DATA_FORMAT {
            return Err(OpenError::NewerFormat { dir: dir.to_path_buf(), found: format });
        }
        let shared = Arc::new(Shared {
            latest: read::LatestKv::default(),
            db,
            hub: Hub::new(revision, config.broadcast_batches, config.broadcast_bytes),
            config,
            _lock: lock,
        });
        let (ops, writer) = writer::start(shared.clone(), revision).map_err(io)?;
        Ok(EmbeddedStore { shared, ops: Some(ops), writer: Some(writer) })
    }

    async fn submit<T>(&self, make: impl FnOnce(oneshot::Sender<Result<T>>) -> Op) -> Result<T> {
        let (tx, rx) = oneshot::channel();
        let stopped = || Error::unavailable_msg("the embedded store's writer has stopped");
        self.ops.as_ref().ok_or_else(stopped)?.send(make(tx)).map_err(|_| stopped())?;
        rx.await.map_err(|_| Error::unavailable_msg("the embedded store's writer stopped before answering"))?
    }
}

/// Takes the directory lock, naming the holder's pid when it is taken.
fn lock_dir(dir: &Path) -> std::result::Result<File, OpenError> {
    let path = dir.join(LOCK_FILE);
    let io = |source| OpenError::Io { dir: dir.to_path_buf(), source };
    let mut file =
        std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&path).map_err(io)?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            let holder = std::fs::read_to_string(&path).unwrap_or_default();
            let holder = holder.trim();
            let holder = if holder.is_empty() { String::new() } else { format!(" (pid {holder})") };
            return Err(OpenError::InUse { dir: dir.to_path_buf(), holder });
        }
        Err(std::fs::TryLockError::Error(e)) => return Err(io(e)),
    }
    file.set_len(0).map_err(io)?;
    write!(file, "{}", std::process::id()).map_err(io)?;
    Ok(file)
}

impl Store for EmbeddedStore {
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<KeyValue>>> {
        Box::pin(async move { read::get(&self.shared.db, &self.shared.latest, key) })
    }

    fn list<'a>(&'a self, prefix: &'a str, options: ListOptions) -> BoxFuture<'a, Result<ListPage>> {
        let shared = self.shared.clone();
        let prefix = prefix.to_string();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || read::list(&shared.db, &prefix, &options))
                .await
                .map_err(|e| Error::unavailable("list task failed", e))?
        })
    }

    fn create<'a>(&'a self, key: &'a str, value: Bytes) -> BoxFuture<'a, Result<KeyValue>> {
        Box::pin(async move {
            versa_storage::check_value_size(key, &value)?;
            self.submit(|reply| Op::Create { key: key.to_string(), value, reply }).await
        })
    }

    fn update<'a>(&'a self, key: &'a str, value: Bytes, expected_revision: i64) -> BoxFuture<'a, Result<KeyValue>> {
        Box::pin(async move {
            versa_storage::check_value_size(key, &value)?;
            self.submit(|reply| Op::Update { key: key.to_string(), value, expected: expected_revision, reply }).await
        })
    }

    fn delete<'a>(&'a self, key: &'a str, expected_revision: Option<i64>) -> BoxFuture<'a, Result<Deleted>> {
        Box::pin(async move {
            self.submit(|reply| Op::Delete { key: key.to_string(), expected: expected_revision, reply }).await
        })
    }

    fn current_revision(&self) -> BoxFuture<'_, Result<i64>> {
        Box::pin(async move { Ok(self.shared.hub.revision()) })
    }

    fn watch<'a>(&'a self, prefix: &'a str, revision: i64) -> BoxFuture<'a, Result<Watch>> {
        Box::pin(async move { watch::start(self.shared.clone(), prefix.to_string(), revision) })
    }

    fn compact(&self, revision: i64) -> BoxFuture<'_, Result<()>> {
        Box::pin(async move { self.submit(|reply| Op::Compact { revision, reply }).await })
    }

    fn snapshot<'a>(
        &'a self,
        out: tokio::sync::mpsc::Sender<Bytes>,
    ) -> BoxFuture<'a, Result<versa_storage::snapshot::Header>> {
        let shared = self.shared.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || backup::snapshot(&shared.db, &out))
                .await
                .map_err(|e| Error::unavailable("snapshot task failed", e))?
        })
    }
}
