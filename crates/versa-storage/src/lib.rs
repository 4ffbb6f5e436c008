//! The storage seam of versa: a revisioned key-value store with compare-and-swap, paginated
//! lists at a revision, watches from a revision and compaction — the contract kube-apiserver
//! expects from etcd, written as the [`Store`] trait.
//!
//! This crate names no backend. `versa-storage-embedded` (redb in the data directory, the
//! default) and `versa-storage-etcd` (etcd v3 for replicas) implement the trait; only the binary
//! chooses one. Both run the one conformance suite in [`conformance`] (feature `conformance`),
//! so a behaviour that holds on one holds on the other.
//!
//! Keys are paths (`<prefix>/<group>/<plural>/[<namespace>/]<name>`, see [`Keys`]); values are
//! opaque bytes (the server stores JSON). A revision is one integer counter for the whole store,
//! strictly increasing with each write; an object's `resourceVersion` is the revision of its
//! last write.
//!
//! Backups cross the seam in one backend-independent format ([`snapshot`]).
//!
//! Leader election's lock seam ([`lock::LeaseLock`]) lives here too, for the same reason: the
//! etcd backend implements it, and the server must not name the backend.

mod error;
mod keys;
pub mod lock;
pub mod snapshot;
mod store;
mod token;
mod types;

#[cfg(feature = "conformance")]
pub mod conformance;

pub use error::{Error, Result};
pub use keys::{Keys, prefix_end};
pub use store::{BoxFuture, Committed, ReadModifyWrite, Store, Update, guaranteed_update};
pub use token::ContinueToken;
pub use types::{Deleted, KeyValue, ListOptions, ListPage, Watch, WatchEvent, WatchSender};

/// The format of versa's data (the key layout, the values, and the embedded store's tables) this
/// versa writes and the newest it opens. Each store records it: the embedded store in its `meta`
/// table, etcd under the installation prefix ([`check_data_format`]).
pub const DATA_FORMAT: u64 = 1;

/// Why a store's data is not opened.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    #[error(
        "{place} was written by a newer versa (data format {found}); this versa reads data format {DATA_FORMAT} at most: run the newer versa, or restore into a new data directory a backup this versa can read"
    )]
    Newer { place: String, found: u64 },
    #[error("{place}: the data format record {text:?} is not a number")]
    Unreadable { place: String, text: String },
    #[error("{0}")]
    Store(#[from] Error),
}

/// Records [`DATA_FORMAT`] under `prefix` in a store that has none (new, or written before the
/// record existed: format 1), and refuses a store of a newer format. The key,
/// `<prefix>/versa/data-format`, cannot be an object's (groups of served resources are empty or
/// hold a dot).
pub async fn check_data_format(store: &dyn Store, prefix: &str) -> std::result::Result<u64, FormatError> {
    let key = format!("{}/versa/data-format", prefix.trim_end_matches('/'));
    let place = format!("the storage under {prefix:?}");
    loop {
        if let Some(kv) = store.get(&key).await? {
            let text = String::from_utf8_lossy(&kv.value).into_owned();
            let found: u64 = text.trim().parse().map_err(|_| FormatError::Unreadable { place: place.clone(), text })?;
            if found > DATA_FORMAT {
                return Err(FormatError::Newer { place, found });
            }
            return Ok(found);
        }
        match store.create(&key, bytes::Bytes::from(DATA_FORMAT.to_string())).await {
            Ok(_) => return Ok(DATA_FORMAT),
            // Another replica recorded it first: read what it wrote.
            Err(Error::AlreadyExists { .. }) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// The largest value a store accepts, in bytes: etcd's default request limit (1.5 MiB), so
/// that an object that fits the embedded store also fits etcd.
pub const MAX_VALUE_BYTES: usize = 3 * 512 * 1024;

/// The error every backend returns for a value over [`MAX_VALUE_BYTES`].
pub fn too_large(key: &str, size: usize) -> Error {
    Error::TooLarge { key: key.to_string(), size, limit: MAX_VALUE_BYTES }
}

/// Refuses a value over [`MAX_VALUE_BYTES`] before a backend does any work for it.
pub fn check_value_size(key: &str, value: &[u8]) -> Result<()> {
    if value.len() > MAX_VALUE_BYTES { Err(too_large(key, value.len())) } else { Ok(()) }
}
