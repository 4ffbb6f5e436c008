//! [`EncryptedStore`]: a [`Store`] in front of another that encrypts the values of the resources
//! the configuration names on every write and opens them on every read — gets, lists, deletes'
//! previous values, watch events (each value and each previous value) — so nothing above it sees
//! ciphertext and nothing below it sees plaintext. Keys, revisions and everything else pass
//! through. Snapshots (`versa backup`) are the inner store's: backups stay encrypted.

use std::sync::Arc;

use bytes::Bytes;
use versa_storage::{BoxFuture, Deleted, Error, KeyValue, ListOptions, ListPage, Result, Store, Watch, WatchEvent};

use crate::config::{Checked, GroupResource};
use crate::transform::{self, Keyed};

/// The encrypting store.
#[derive(Debug)]
pub struct EncryptedStore {
    inner: Arc<dyn Store>,
    encryption: Arc<Encryption>,
}

/// Which keys of which resources, and the transformations.
#[derive(Debug)]
struct Encryption {
    /// The installation prefix keys start with (`/registry`), with its trailing `/`.
    prefix: String,
    entries: Vec<(Vec<GroupResource>, Vec<Keyed>)>,
    /// `(key, revision)` of values read that a key other than the writing one opened
    /// ([`Store::stale`]); bounded, forgotten wholesale when full (a forgotten one is seen stale
    /// again on its next read).
    stale: std::sync::Mutex<std::collections::HashSet<(String, i64)>>,
}

/// How many stale values are remembered at most.
const STALE_REMEMBERED: usize = 100_000;

impl EncryptedStore {
    /// Encrypts, in front of `inner`, what `config` names; keys start with `prefix`.
    pub fn new(inner: Arc<dyn Store>, prefix: &str, config: &Checked) -> EncryptedStore {
        let entries = config
            .entries
            .iter()
            .map(|(resources, providers)| (resources.clone(), transform::keyed(providers)))
            .collect();
        let prefix = format!("{}/", prefix.trim_end_matches('/'));
        EncryptedStore { inner, encryption: Arc::new(Encryption { prefix, entries, stale: Default::default() }) }
    }
}

impl Encryption {
    /// The keys of the resource `key` belongs to (`<prefix>/<group>/<resource>/...`), if the
    /// configuration names it: the first entry that does.
    fn keys_for(&self, key: &str) -> Option<&[Keyed]> {
        let rest = key.strip_prefix(&self.prefix)?;
        let mut parts = rest.splitn(3, '/');
        let (group, resource) = (parts.next()?, parts.next()?);
        self.entries
            .iter()
            .find(|(resources, _)| resources.iter().any(|r| r.matches(group, resource)))
            .map(|(_, keys)| keys.as_slice())
    }

    fn seal(&self, key: &str, value: Bytes) -> Result<Bytes> {
        match self.keys_for(key) {
            None => Ok(value),
            Some(keys) => transform::seal(keys, key, &value)
                .map(Bytes::from)
                .map_err(|e| Error::Untransformable { key: key.to_owned(), message: e.to_string() }),
        }
    }

    /// `kv` opened. Errors as kube words them: a get's is the transformer's; a list's and a
    /// watch's name the key (`listed`).
    fn open_as(&self, mut kv: KeyValue, listed: bool) -> Result<KeyValue> {
        if let Some(keys) = self.keys_for(&kv.key) {
            let (value, stale) = transform::open_marked(keys, &kv.key, &kv.value).map_err(|e| {
                let message = if listed { format!("unable to transform key {:?}: {e}", kv.key) } else { e.to_string() };
                Error::Untransformable { key: kv.key.clone(), message }
            })?;
            kv.value = Bytes::from(value);
            if stale && let Ok(mut set) = self.stale.lock() {
                if set.len() >= STALE_REMEMBERED {
                    set.clear();
                }
                set.insert((kv.key.clone(), kv.mod_revision));
            }
        }
        Ok(kv)
    }

    fn open(&self, kv: KeyValue) -> Result<KeyValue> {
        self.open_as(kv, false)
    }

    fn open_listed(&self, kv: KeyValue) -> Result<KeyValue> {
        self.open_as(kv, true)
    }

    fn is_stale(&self, kv: &KeyValue) -> bool {
        self.stale.lock().is_ok_and(|set| set.contains(&(kv.key.clone(), kv.mod_revision)))
    }

    fn open_event(&self, event: WatchEvent) -> Result<WatchEvent> {
        Ok(match event {
            WatchEvent::Added(kv) => WatchEvent::Added(self.open_listed(kv)?),
            WatchEvent::Modified { kv, prev } => {
                WatchEvent::Modified { kv: self.open_listed(kv)?, prev: prev.map(|p| self.open_listed(p)).transpose()? }
            }
            WatchEvent::Deleted { revision, prev } => WatchEvent::Deleted { revision, prev: self.open_listed(prev)? },
            progress @ WatchEvent::Progress { .. } => progress,
        })
    }
}

impl Store for EncryptedStore {
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<KeyValue>>> {
        Box::pin(async move { self.inner.get(key).await?.map(|kv| self.encryption.open(kv)).transpose() })
    }

    fn get_at<'a>(&'a self, key: &'a str, min_revision: i64) -> BoxFuture<'a, Result<Option<KeyValue>>> {
        Box::pin(
            async move { self.inner.get_at(key, min_revision).await?.map(|kv| self.encryption.open(kv)).transpose() },
        )
    }

    fn list<'a>(&'a self, prefix: &'a str, options: ListOptions) -> BoxFuture<'a, Result<ListPage>> {
        Box::pin(async move {
            let mut page = self.inner.list(prefix, options).await?;
            page.items = page.items.into_iter().map(|kv| self.encryption.open_listed(kv)).collect::<Result<_>>()?;
            Ok(page)
        })
    }

    fn create<'a>(&'a self, key: &'a str, value: Bytes) -> BoxFuture<'a, Result<KeyValue>> {
        Box::pin(async move {
            // The limit is the object's, as clients see it.
            versa_storage::check_value_size(key, &value)?;
            let sealed = self.encryption.seal(key, value.clone())?;
            let mut kv = self.inner.create(key, sealed).await?;
            kv.value = value;
            Ok(kv)
        })
    }

    fn update<'a>(&'a self, key: &'a str, value: Bytes, expected_revision: i64) -> BoxFuture<'a, Result<KeyValue>> {
        Box::pin(async move {
            versa_storage::check_value_size(key, &value)?;
            let sealed = self.encryption.seal(key, value.clone())?;
            let mut kv = self.inner.update(key, sealed, expected_revision).await?;
            kv.value = value;
            Ok(kv)
        })
    }

    fn delete<'a>(&'a self, key: &'a str, expected_revision: Option<i64>) -> BoxFuture<'a, Result<Deleted>> {
        Box::pin(async move {
            let mut deleted = self.inner.delete(key, expected_revision).await?;
            deleted.prev = self.encryption.open(deleted.prev)?;
            Ok(deleted)
        })
    }

    fn current_revision(&self) -> BoxFuture<'_, Result<i64>> {
        self.inner.current_revision()
    }

    fn stale(&self, kv: &KeyValue) -> bool {
        self.encryption.is_stale(kv)
    }

    /// The inner watch's events, opened, through a channel of the same size; progress requests
    /// go the other way. A value that cannot be opened ends the watch with its error.
    fn watch<'a>(&'a self, prefix: &'a str, revision: i64) -> BoxFuture<'a, Result<Watch>> {
        Box::pin(async move {
            let mut inner = self.inner.watch(prefix, revision).await?;
            let (sender, watch) = Watch::channel(256);
            let encryption = self.encryption.clone();
            tokio::spawn(async move {
                loop {
                    tokio::select! {
                        item = inner.next() => {
                            let Some(item) = item else { return };
                            let item = item.and_then(|event| encryption.open_event(event));
                            let failed = item.is_err();
                            if !sender.send(item).await || failed {
                                return;
                            }
                        }
                        () = sender.progress_requested() => inner.request_progress(),
                        () = sender.closed() => return,
                    }
                }
            });
            Ok(watch)
        })
    }

    fn compact(&self, revision: i64) -> BoxFuture<'_, Result<()>> {
        self.inner.compact(revision)
    }

    fn snapshot<'a>(
        &'a self,
        out: tokio::sync::mpsc::Sender<Bytes>,
    ) -> BoxFuture<'a, Result<versa_storage::snapshot::Header>> {
        self.inner.snapshot(out)
    }
}
