//! Reads on redb snapshots, concurrent with the writer.
//!
//! A get reads the `kv` table of the latest snapshot, which is opened once and kept
//! ([`LatestKv`]) until the writer commits again: beginning a read transaction and opening a
//! table were most of what the store cost a GET. The writer drops the kept snapshot after each
//! commit and before it answers the commit's writes, so a get never misses an acknowledged
//! write, and no snapshot older than the last commit stays pinned.
//!
//! A list at the latest revision is a range scan of `kv`. A list at an earlier revision `R`
//! (asked for, or carried by a continue token) is the same scan with the writes after `R`
//! undone: the first log entry after `R` for each key in range holds the key's value at `R`
//! (its `prev`), so those keys are overlaid with that value — or dropped, if they did not exist
//! at `R`. The cost is the scan plus the log entries since `R`, which the history window bounds.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::{Arc, Mutex, MutexGuard};

use redb::{ReadOnlyTable, ReadTransaction, ReadableDatabase as _};
use versa_storage::{ContinueToken, Error, KeyValue, ListOptions, ListPage, Result};

use crate::record::{decode_kv, decode_log, log_key};
use crate::writer::committed_revision;
use crate::{KV, LOG, META, META_COMPACTED};

fn unavailable(e: impl Into<redb::Error>) -> Error {
    Error::unavailable("embedded store", e.into())
}

fn corrupt(e: crate::record::Corrupt) -> Error {
    Error::unavailable("embedded store", e)
}

/// The key's current value.
pub fn get(db: &redb::Database, latest: &LatestKv, key: &str) -> Result<Option<KeyValue>> {
    let kv = latest.table(db)?;
    let found = kv.get(key).map_err(unavailable)?;
    found.map(|raw| decode_kv(key, raw.value()).map_err(corrupt)).transpose()
}

/// The `kv` table of a read snapshot.
type KvTable = ReadOnlyTable<&'static str, &'static [u8]>;

/// The `kv` table of the latest snapshot, kept for gets until the next commit.
#[derive(Default)]
pub(crate) struct LatestKv {
    inner: Mutex<Latest>,
}

#[derive(Default)]
struct Latest {
    /// Commits seen: a snapshot begun before a commit is not kept after it.
    commits: u64,
    table: Option<Arc<KvTable>>,
}

impl std::fmt::Debug for LatestKv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LatestKv").field("commits", &self.lock().commits).finish_non_exhaustive()
    }
}

impl LatestKv {
    /// The kept table, or a new snapshot's (kept unless a commit came in between).
    fn table(&self, db: &redb::Database) -> Result<Arc<KvTable>> {
        let commits = {
            let latest = self.lock();
            if let Some(table) = &latest.table {
                return Ok(table.clone());
            }
            latest.commits
        };
        let table = Arc::new(db.begin_read().map_err(unavailable)?.open_table(KV).map_err(unavailable)?);
        let mut latest = self.lock();
        if latest.commits == commits && latest.table.is_none() {
            latest.table = Some(table.clone());
        }
        Ok(table)
    }

    /// The writer has committed: the kept snapshot is out of date. Called before the commit's
    /// writes are answered.
    pub(crate) fn committed(&self) {
        let stale = {
            let mut latest = self.lock();
            latest.commits += 1;
            latest.table.take()
        };
        // Released outside the lock (it deregisters the snapshot's read transaction in redb).
        drop(stale);
    }

    fn lock(&self) -> MutexGuard<'_, Latest> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The snapshot's last committed revision and the revision history starts after.
pub fn revisions(txn: &ReadTransaction) -> Result<(i64, i64)> {
    let log = txn.open_table(LOG).map_err(unavailable)?;
    let meta = txn.open_table(META).map_err(unavailable)?;
    let current = committed_revision(&log, &meta).map_err(unavailable)?;
    let compacted = meta.get(META_COMPACTED).map_err(unavailable)?.map_or(0, |v| v.value() as i64);
    Ok((current, compacted))
}

/// One page of keys under `prefix`.
pub fn list(db: &redb::Database, prefix: &str, options: &ListOptions) -> Result<ListPage> {
    let token = options.continue_token.as_deref().map(ContinueToken::decode).transpose()?;
    let start = match &token {
        Some(t) => t.start_key(prefix),
        None => prefix.to_string(),
    };
    let txn = db.begin_read().map_err(unavailable)?;
    let (current, compacted) = revisions(&txn)?;
    let revision = match (&token, options.revision) {
        (Some(t), _) => t.revision,
        (None, 0) => current,
        (None, r) => r,
    };
    if revision > current {
        return Err(Error::FutureRevision { requested: revision, current });
    }
    if revision < current && revision < compacted {
        return Err(Error::Expired { requested: revision, compacted });
    }
    let end = end_of(prefix);
    let overlay =
        if revision < current { undo_since(&txn, revision, current, &start, end.as_deref())? } else { BTreeMap::new() };

    let kv = txn.open_table(KV).map_err(unavailable)?;
    let upper = match &end {
        Some(e) => Bound::Excluded(e.as_str()),
        None => Bound::Unbounded,
    };
    let range = kv.range::<&str>((Bound::Included(start.as_str()), upper)).map_err(unavailable)?;
    let want = if options.limit == 0 { usize::MAX } else { options.limit.saturating_add(1) };
    let mut items: Vec<KeyValue> = Vec::new();
    let mut overlay = overlay.into_iter().peekable();
    for entry in range {
        if items.len() >= want {
            break;
        }
        let (k, raw) = entry.map_err(unavailable)?;
        let key = k.value();
        // Overlaid keys that sort before this one existed at `revision` but are gone now.
        while let Some((old_key, _)) = overlay.peek()
            && old_key.as_str() < key
            && items.len() < want
        {
            if let Some((_, Some(old))) = overlay.next() {
                items.push(old);
            }
        }
        if items.len() >= want {
            break;
        }
        match overlay.peek() {
            Some((old_key, _)) if old_key == key => {
                // Written since `revision`: report the value it had then, if it existed.
                if let Some((_, Some(old))) = overlay.next() {
                    items.push(old);
                }
            }
            _ => items.push(decode_kv(key, raw.value()).map_err(corrupt)?),
        }
    }
    for (_, old) in overlay {
        if items.len() >= want {
            break;
        }
        if let Some(old) = old {
            items.push(old);
        }
    }
    let continue_token = if options.limit > 0 && items.len() > options.limit {
        items.truncate(options.limit);
        items.last().map(|last| ContinueToken::after(prefix, &last.key, revision).encode())
    } else {
        None
    };
    Ok(ListPage { items, revision, continue_token })
}

/// The exclusive end of a prefix scan (`None`: to the end of the table).
fn end_of(prefix: &str) -> Option<String> {
    versa_storage::prefix_end(prefix.as_bytes()).and_then(|end| String::from_utf8(end).ok())
}

/// For each key in `[start, end)` written after `revision`, its value at `revision` (`None`
/// if it did not exist then).
fn undo_since(
    txn: &ReadTransaction,
    revision: i64,
    current: i64,
    start: &str,
    end: Option<&str>,
) -> Result<BTreeMap<String, Option<KeyValue>>> {
    let log = txn.open_table(LOG).map_err(unavailable)?;
    let mut overlay = BTreeMap::new();
    for entry in log.range((revision + 1) as u64..=current as u64).map_err(unavailable)? {
        let (rev, raw) = entry.map_err(unavailable)?;
        let raw = raw.value();
        let key = log_key(raw).map_err(corrupt)?;
        if key < start || end.is_some_and(|e| key >= e) || overlay.contains_key(key) {
            continue;
        }
        let entry = decode_log(rev.value() as i64, raw).map_err(corrupt)?;
        overlay.insert(entry.key.clone(), entry.prev);
    }
    Ok(overlay)
}
