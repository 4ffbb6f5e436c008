//! The values that cross the [`crate::Store`] seam: stored key-values, list pages and options,
//! watch events and the watch handle (a bounded channel; dropping the handle ends the watch).

use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::{Notify, mpsc};

use crate::Result;

/// One stored key with its value and revisions (etcd's `KeyValue`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyValue {
    pub key: String,
    pub value: Bytes,
    /// The revision of the write that created the key.
    pub create_revision: i64,
    /// The revision of the last write to the key: the object's `resourceVersion`.
    pub mod_revision: i64,
}

/// What a delete removed, and the revision of the delete itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deleted {
    /// The revision the delete was written at.
    pub revision: i64,
    /// The key's last value before the delete.
    pub prev: KeyValue,
}

/// How to list a prefix.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListOptions {
    /// At most this many items (0: all).
    pub limit: usize,
    /// Continue a previous list (its revision wins over `revision`).
    pub continue_token: Option<String>,
    /// Read at this revision instead of the latest (0: latest).
    pub revision: i64,
}

/// A page of a list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListPage {
    /// Items in key order.
    pub items: Vec<KeyValue>,
    /// The revision the page was read at (the list's `resourceVersion`).
    pub revision: i64,
    /// Set when more items follow; pass it back in [`ListOptions::continue_token`].
    pub continue_token: Option<String>,
}

/// One event of a watch, in revision order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchEvent {
    /// The key was created.
    Added(KeyValue),
    /// The key was updated; `prev` is its value before (absent only if the backend lost it).
    Modified { kv: KeyValue, prev: Option<KeyValue> },
    /// The key was deleted at `revision`; `prev` is its last value.
    Deleted { revision: i64, prev: KeyValue },
    /// Every event of this watch up to `revision` has been delivered (a bookmark).
    Progress { revision: i64 },
}

impl WatchEvent {
    /// The revision the event happened at (for `Progress`, the revision it vouches for).
    pub fn revision(&self) -> i64 {
        match self {
            WatchEvent::Added(kv) | WatchEvent::Modified { kv, .. } => kv.mod_revision,
            WatchEvent::Deleted { revision, .. } | WatchEvent::Progress { revision } => *revision,
        }
    }

    /// The key the event is about (`None` for `Progress`).
    pub fn key(&self) -> Option<&str> {
        match self {
            WatchEvent::Added(kv) | WatchEvent::Modified { kv, .. } => Some(&kv.key),
            WatchEvent::Deleted { prev, .. } => Some(&prev.key),
            WatchEvent::Progress { .. } => None,
        }
    }
}

/// The consumer's end of a watch. Events arrive in revision order; an `Err` (such as
/// [`crate::Error::Expired`]) is the last item. Dropping the handle stops the watch.
#[derive(Debug)]
pub struct Watch {
    rx: mpsc::Receiver<Result<WatchEvent>>,
    progress: Arc<Notify>,
}

/// The backend's end of a watch.
#[derive(Debug)]
pub struct WatchSender {
    tx: mpsc::Sender<Result<WatchEvent>>,
    progress: Arc<Notify>,
}

impl Watch {
    /// A connected pair holding up to `capacity` undelivered items; a backend blocks (and
    /// catches up from its history later) rather than buffering without bound.
    pub fn channel(capacity: usize) -> (WatchSender, Watch) {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        let progress = Arc::new(Notify::new());
        (WatchSender { tx, progress: progress.clone() }, Watch { rx, progress })
    }

    /// The next event; `None` once the watch has ended.
    pub async fn next(&mut self) -> Option<Result<WatchEvent>> {
        self.rx.recv().await
    }

    /// Asks the backend for a [`WatchEvent::Progress`] as soon as every event up to the store's
    /// current revision has been delivered (kube-apiserver's bookmark/consistent-read trick).
    pub fn request_progress(&self) {
        self.progress.notify_one();
    }
}

impl WatchSender {
    /// Delivers one item; `false` once the consumer has gone.
    pub async fn send(&self, item: Result<WatchEvent>) -> bool {
        self.tx.send(item).await.is_ok()
    }

    /// Resolves when the consumer asks for progress.
    pub async fn progress_requested(&self) {
        self.progress.notified().await
    }

    /// Resolves when the consumer has dropped its [`Watch`].
    pub async fn closed(&self) {
        self.tx.closed().await
    }

    /// Whether the consumer has dropped its [`Watch`].
    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }
}
