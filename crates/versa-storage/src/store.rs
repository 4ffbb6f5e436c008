//! The [`Store`] trait and the read–modify–write helper built on it.
//!
//! The trait is object-safe (`Arc<dyn Store>`): the binary picks a backend at start-up and the
//! server never names one. Methods return boxed futures for that reason.

use std::future::Future;
use std::pin::Pin;

use bytes::Bytes;

use crate::snapshot::{Encoder, Header};
use crate::{Deleted, Error, KeyValue, ListOptions, ListPage, Result, Watch};

/// A boxed, sendable future (what every [`Store`] method returns).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A revisioned key-value store with etcd's semantics.
///
/// Every successful write (create, update, delete) takes the next store revision, strictly
/// greater than every earlier one; reads report the revision they saw. History is kept for a
/// bounded window: a list or watch at a revision older than the window fails with
/// [`Error::Expired`].
pub trait Store: Send + Sync + std::fmt::Debug {
    /// The key's current value, or `None`.
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<KeyValue>>>;

    /// The key's value read at a revision no older than `min_revision` (kube's GET with a
    /// `resourceVersion`): 0 accepts any state the store has served before, so a cache may answer
    /// from memory; a revision the store has not reached is [`Error::FutureRevision`] (a cache
    /// first waits a while for it). [`Store::get`] is the consistent read.
    ///
    /// The default reads the current revision first, so the value read after it is at least
    /// that new.
    fn get_at<'a>(&'a self, key: &'a str, min_revision: i64) -> BoxFuture<'a, Result<Option<KeyValue>>> {
        Box::pin(async move {
            if min_revision > 0 {
                let current = self.current_revision().await?;
                if current < min_revision {
                    return Err(Error::FutureRevision { requested: min_revision, current });
                }
            }
            self.get(key).await
        })
    }

    /// Keys starting with `prefix`, in key order, at the latest revision or the one asked for
    /// (directly or through a continue token).
    fn list<'a>(&'a self, prefix: &'a str, options: ListOptions) -> BoxFuture<'a, Result<ListPage>>;

    /// Creates `key`; [`Error::AlreadyExists`] if it is present.
    fn create<'a>(&'a self, key: &'a str, value: Bytes) -> BoxFuture<'a, Result<KeyValue>>;

    /// Replaces `key`'s value if its modification revision is still `expected_revision`;
    /// [`Error::Conflict`] if not, [`Error::NotFound`] if the key is absent.
    fn update<'a>(&'a self, key: &'a str, value: Bytes, expected_revision: i64) -> BoxFuture<'a, Result<KeyValue>>;

    /// Deletes `key`, if given only while its modification revision is `expected_revision`.
    fn delete<'a>(&'a self, key: &'a str, expected_revision: Option<i64>) -> BoxFuture<'a, Result<Deleted>>;

    /// The revision of the last write to the store.
    fn current_revision(&self) -> BoxFuture<'_, Result<i64>>;

    /// Events for keys under `prefix` after `revision` (0: from now on). Items come in revision
    /// order; a `Progress` item vouches that nothing under the prefix happened up to its
    /// revision beyond what was delivered.
    fn watch<'a>(&'a self, prefix: &'a str, revision: i64) -> BoxFuture<'a, Result<Watch>>;

    /// Forgets history before `revision`: lists and watches at older revisions then fail with
    /// [`Error::Expired`]. The current value of every key is kept.
    fn compact(&self, revision: i64) -> BoxFuture<'_, Result<()>>;

    /// Whether `kv` (as this store read it) is stored in a form out of date — encrypted at rest
    /// with a key that no longer writes — so that an update that changes nothing still
    /// rewrites it, as kube-apiserver rewrites stale data (key rotation by `kubectl replace`).
    fn stale(&self, _kv: &KeyValue) -> bool {
        false
    }

    /// Every key at one revision, in versa's snapshot format ([`crate::snapshot`]), sent to
    /// `out` chunk by chunk while writes go on; returns the snapshot's header once the last
    /// chunk is sent. A receiver that goes away ends it with [`Error::Unavailable`].
    ///
    /// The default lists everything at one revision, page by page (a backend with MVCC history
    /// for as long as the walk takes: etcd); the embedded store reads one transaction.
    fn snapshot<'a>(&'a self, out: tokio::sync::mpsc::Sender<Bytes>) -> BoxFuture<'a, Result<Header>> {
        Box::pin(async move {
            let revision = self.current_revision().await?;
            let header = Header {
                revision,
                created_at: crate::snapshot::now(),
                versa: env!("CARGO_PKG_VERSION").into(),
                ..Header::default()
            };
            let mut encoder = Encoder::default();
            let gone = || Error::unavailable_msg("the snapshot's reader went away");
            out.send(encoder.header(&header)).await.map_err(|_| gone())?;
            let mut options = ListOptions { limit: 1000, continue_token: None, revision };
            loop {
                let page = self.list("", options.clone()).await?;
                for kv in &page.items {
                    out.send(encoder.record(kv)).await.map_err(|_| gone())?;
                }
                match page.continue_token {
                    Some(token) => options.continue_token = Some(token),
                    None => break,
                }
            }
            out.send(encoder.end()).await.map_err(|_| gone())?;
            Ok(header)
        })
    }
}

/// What a [`guaranteed_update`] step decides from the current value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Update {
    /// Write this value (create the key if it is absent).
    Set(Bytes),
    /// Delete the key (nothing happens if it is absent).
    Delete,
    /// Leave the key as it is.
    Keep,
}

/// How many times [`guaranteed_update`] retries after losing a race before giving up with the
/// last [`Error::Conflict`].
pub const MAX_UPDATE_ATTEMPTS: usize = 1000;

/// Read–modify–write with retry (kube-apiserver's `GuaranteedUpdate`): reads `key`, asks
/// `decide` what to do with its current value, writes with compare-and-swap, and on a lost race
/// reads again and asks again. Returns the key's value afterwards (`None` if absent). Callers
/// whose deciding must await (conversion, admission) drive a [`ReadModifyWrite`] themselves: the
/// same loop, one step at a time.
pub async fn guaranteed_update<E, F>(store: &dyn Store, key: &str, mut decide: F) -> Result<Option<KeyValue>, E>
where
    E: From<Error>,
    F: FnMut(Option<&KeyValue>) -> Result<Update, E>,
{
    let mut rmw = ReadModifyWrite::start(store, key).await?;
    loop {
        let update = decide(rmw.current())?;
        if let Committed::Done(after) = rmw.commit(update).await? {
            return Ok(after);
        }
    }
}

/// What [`ReadModifyWrite::commit`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Committed {
    /// Written (or kept, or deleted): the key's value afterwards.
    Done(Option<KeyValue>),
    /// Another writer came first: the current value has been read again; decide again.
    Raced,
}

/// The steps of [`guaranteed_update`], for callers that decide asynchronously: the current
/// value ([`ReadModifyWrite::current`]), then [`ReadModifyWrite::commit`] of what to do with it,
/// again after each lost race — at most [`MAX_UPDATE_ATTEMPTS`] times, then the last
/// [`Error::Conflict`]. A compare-and-swap that fails because the key was created, changed or
/// deleted since it was read is a lost race; any other error ends the update.
pub struct ReadModifyWrite<'a> {
    store: &'a dyn Store,
    key: &'a str,
    current: Option<KeyValue>,
    attempts: usize,
}

impl std::fmt::Debug for ReadModifyWrite<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadModifyWrite").field("key", &self.key).field("attempts", &self.attempts).finish()
    }
}

impl<'a> ReadModifyWrite<'a> {
    /// Reads the key's current value.
    pub async fn start(store: &'a dyn Store, key: &'a str) -> Result<ReadModifyWrite<'a>> {
        let current = store.get(key).await?;
        Ok(ReadModifyWrite { store, key, current, attempts: 0 })
    }

    /// The value the next decision is about (`None`: the key is absent).
    pub fn current(&self) -> Option<&KeyValue> {
        self.current.as_ref()
    }

    /// Does `update` with compare-and-swap on the current value's revision.
    pub async fn commit(&mut self, update: Update) -> Result<Committed> {
        self.attempts += 1;
        let (store, key) = (self.store, self.key);
        let outcome = match (update, &self.current) {
            (Update::Keep, _) => return Ok(Committed::Done(self.current.take())),
            (Update::Delete, None) => return Ok(Committed::Done(None)),
            (Update::Delete, Some(kv)) => store.delete(key, Some(kv.mod_revision)).await.map(|_| None),
            (Update::Set(value), None) => store.create(key, value).await.map(Some),
            (Update::Set(value), Some(kv)) => store.update(key, value, kv.mod_revision).await.map(Some),
        };
        match outcome {
            Ok(after) => Ok(Committed::Done(after)),
            Err(Error::Conflict { .. } | Error::AlreadyExists { .. } | Error::NotFound { .. })
                if self.attempts < MAX_UPDATE_ATTEMPTS =>
            {
                self.current = store.get(key).await?;
                Ok(Committed::Raced)
            }
            Err(e) => Err(e),
        }
    }
}
