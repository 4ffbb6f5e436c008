//! Watches. The writer publishes each committed batch on a broadcast channel ([`Hub`]); a watch
//! is a task that first replays the durable event log from its start revision up to the
//! revision current when it subscribed, then follows the broadcast. When its consumer is slow
//! and falls out of what the hub keeps — more than `broadcast_batches` batches behind
//! (`Lagged`), or behind `broadcast_bytes` of newer keys and values (the batch's events are
//! gone) — it re-reads the missed range from the log instead of buffering without bound, or
//! ends with `Expired` if that range has been trimmed meanwhile.
//!
//! The byte bound: the broadcast channel holds each batch's events only weakly; the hub keeps
//! the newest batches' events alive up to both bounds and drops the oldest beyond them, so large
//! values (definitions of tens of KiB) cost at most `broadcast_bytes`, not `broadcast_batches`
//! times a batch. Catch-up reads are bounded the same way, by entries and by bytes per step.
//!
//! Progress: on request (and every `progress_interval`) the task drains what is already
//! published and reports the last revision it has accounted for.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, Weak};

use redb::ReadableDatabase as _;
use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;
use versa_storage::{Error, Result, Watch, WatchEvent, WatchSender};

use crate::record::{decode_log, log_key};
use crate::{LOG, Shared};

/// Log entries read per catch-up step.
const CATCH_UP_CHUNK: usize = 1000;
/// Bytes of keys and values read per catch-up step (at least one entry is read), so that a
/// watch catching up over large values holds a few MiB of them at a time, not 1,000.
const CATCH_UP_BYTES: usize = 4 * 1024 * 1024;

/// One committed batch as broadcast: the revision after it, and its events in revision order
/// for as long as the hub keeps them.
#[derive(Debug)]
pub struct Batch {
    pub revision: i64,
    events: Weak<Vec<WatchEvent>>,
}

/// The publish side, shared by the writer and every watch.
#[derive(Debug)]
pub struct Hub {
    /// The last published revision; held while publishing and subscribing so that a new watch
    /// knows exactly which batches it will receive.
    revision: Mutex<i64>,
    /// `None` once the store has closed: watches then end.
    channel: Mutex<Option<Broadcast>>,
}

/// The channel and the events it still offers.
#[derive(Debug)]
struct Broadcast {
    tx: broadcast::Sender<Arc<Batch>>,
    /// The newest batches' events with their sizes, oldest first: what keeps them alive.
    kept: VecDeque<(Arc<Vec<WatchEvent>>, usize)>,
    kept_bytes: usize,
    max_batches: usize,
    max_bytes: usize,
}

impl Hub {
    /// A hub at `revision` keeping up to `max_batches` batches, and up to `max_bytes` of their
    /// keys and values, for slow watches.
    pub fn new(revision: i64, max_batches: usize, max_bytes: usize) -> Self {
        let max_batches = max_batches.max(1);
        let (tx, _) = broadcast::channel(max_batches);
        let broadcast = Broadcast { tx, kept: VecDeque::new(), kept_bytes: 0, max_batches, max_bytes };
        Hub { revision: Mutex::new(revision), channel: Mutex::new(Some(broadcast)) }
    }

    /// The last published (committed) revision.
    pub fn revision(&self) -> i64 {
        *self.revision.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Publishes a committed batch ending at `revision`.
    pub fn publish(&self, revision: i64, events: Vec<WatchEvent>) {
        let mut current = self.revision.lock().unwrap_or_else(|p| p.into_inner());
        *current = revision;
        if let Some(b) = &mut *self.channel.lock().unwrap_or_else(|p| p.into_inner()) {
            let bytes = events.iter().map(event_bytes).sum();
            let events = Arc::new(events);
            let batch = Arc::new(Batch { revision, events: Arc::downgrade(&events) });
            // Kept before it is sent, so that a watch receiving it finds its events.
            b.kept.push_back((events, bytes));
            b.kept_bytes += bytes;
            // A batch larger than the whole bound is not kept at all: watches read it from the log.
            while b.kept.len() > b.max_batches || b.kept_bytes > b.max_bytes {
                let Some((_, bytes)) = b.kept.pop_front() else { break };
                b.kept_bytes -= bytes;
            }
            if b.tx.send(batch).is_err() {
                // Nobody is watching; a later watch starts after this batch.
                b.kept.clear();
                b.kept_bytes = 0;
            }
        }
    }

    /// Ends every watch (the store is closing).
    pub fn close(&self) {
        self.channel.lock().unwrap_or_else(|p| p.into_inner()).take();
    }

    /// A receiver of every batch after the returned revision (`None` once closed).
    fn subscribe(&self) -> Option<(broadcast::Receiver<Arc<Batch>>, i64)> {
        let current = self.revision.lock().unwrap_or_else(|p| p.into_inner());
        let channel = self.channel.lock().unwrap_or_else(|p| p.into_inner());
        channel.as_ref().map(|b| (b.tx.subscribe(), *current))
    }
}

/// What an event holds in keys and values (the bytes the hub's bound counts).
fn event_bytes(event: &WatchEvent) -> usize {
    let kv = |kv: &versa_storage::KeyValue| kv.key.len() + kv.value.len();
    match event {
        WatchEvent::Added(new) => kv(new),
        WatchEvent::Modified { kv: new, prev } => kv(new) + prev.as_ref().map_or(0, kv),
        WatchEvent::Deleted { prev, .. } => kv(prev),
        WatchEvent::Progress { .. } => 0,
    }
}

/// Starts a watch of `prefix` for events after `revision` (0: from now).
pub fn start(shared: Arc<Shared>, prefix: String, revision: i64) -> Result<Watch> {
    let (rx, published) =
        shared.hub.subscribe().ok_or_else(|| Error::unavailable_msg("the embedded store was closed"))?;
    if revision > 0 {
        // Fail fast when the start is already out of the history window.
        let compacted = compacted(&shared)?;
        if revision < compacted {
            return Err(Error::Expired { requested: revision, compacted });
        }
    }
    let (sender, watch) = Watch::channel(shared.config.watch_buffer);
    let from = if revision == 0 { published } else { revision };
    let task = Task { shared, prefix, sender, delivered: from };
    tokio::spawn(task.run(rx, published));
    Ok(watch)
}

fn compacted(shared: &Shared) -> Result<i64> {
    let txn = shared.db.begin_read().map_err(|e| Error::unavailable("embedded store", redb::Error::from(e)))?;
    Ok(crate::read::revisions(&txn)?.1)
}

struct Task {
    shared: Arc<Shared>,
    prefix: String,
    sender: WatchSender,
    /// Every event up to this revision has been delivered (or did not match).
    delivered: i64,
}

/// Why a watch task stops.
enum Stop {
    /// The consumer dropped its handle.
    Gone,
    /// The watch cannot continue; the error is its last item.
    Failed(Error),
}

impl Task {
    async fn run(mut self, mut rx: broadcast::Receiver<Arc<Batch>>, published: i64) {
        if let Err(Stop::Failed(e)) = self.follow(&mut rx, published).await {
            let _ = self.sender.send(Err(e)).await;
        }
    }

    async fn follow(&mut self, rx: &mut broadcast::Receiver<Arc<Batch>>, published: i64) -> Result<(), Stop> {
        self.catch_up(published).await?;
        let mut tick = self.shared.config.progress_interval.map(|every| {
            let mut interval = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            interval
        });
        loop {
            tokio::select! {
                received = rx.recv() => self.receive(received).await?,
                _ = self.sender.progress_requested() => self.progress(rx).await?,
                _ = next_tick(&mut tick) => self.progress(rx).await?,
                _ = self.sender.closed() => return Err(Stop::Gone),
            }
        }
    }

    /// Handles one broadcast result: a batch, a lag (re-read from the log) or the end.
    async fn receive(&mut self, received: Result<Arc<Batch>, RecvError>) -> Result<(), Stop> {
        match received {
            Ok(batch) => self.deliver_batch(&batch).await,
            Err(RecvError::Lagged(_)) => self.fall_back().await,
            Err(RecvError::Closed) => Err(Stop::Failed(Error::unavailable_msg("the embedded store was closed"))),
        }
    }

    /// Re-reads from the log everything published so far: the broadcast no longer has it.
    async fn fall_back(&mut self) -> Result<(), Stop> {
        let upto = self.shared.hub.revision();
        // Batches still queued at or below `upto` are then skipped by revision.
        self.catch_up(upto).await
    }

    async fn deliver_batch(&mut self, batch: &Batch) -> Result<(), Stop> {
        if batch.revision <= self.delivered {
            return Ok(());
        }
        // Held while sending, so a batch the hub drops meanwhile is still delivered whole.
        let Some(events) = batch.events.upgrade() else {
            return self.fall_back().await;
        };
        for event in events.iter() {
            if event.revision() > self.delivered && event.key().is_some_and(|k| k.starts_with(&self.prefix)) {
                self.send(event.clone()).await?;
            }
        }
        self.delivered = batch.revision;
        Ok(())
    }

    /// Drains what is already published, then vouches for the last revision accounted for.
    async fn progress(&mut self, rx: &mut broadcast::Receiver<Arc<Batch>>) -> Result<(), Stop> {
        loop {
            match rx.try_recv() {
                Ok(batch) => self.deliver_batch(&batch).await?,
                Err(broadcast::error::TryRecvError::Lagged(_)) => self.fall_back().await?,
                Err(broadcast::error::TryRecvError::Empty) => break,
                Err(broadcast::error::TryRecvError::Closed) => {
                    return Err(Stop::Failed(Error::unavailable_msg("the embedded store was closed")));
                }
            }
        }
        self.send(WatchEvent::Progress { revision: self.delivered }).await
    }

    async fn send(&self, event: WatchEvent) -> Result<(), Stop> {
        if self.sender.send(Ok(event)).await { Ok(()) } else { Err(Stop::Gone) }
    }

    /// Replays the log from `delivered` up to `upto`, in chunks read off the async threads.
    async fn catch_up(&mut self, upto: i64) -> Result<(), Stop> {
        while self.delivered < upto {
            let (shared, prefix, from) = (self.shared.clone(), self.prefix.clone(), self.delivered);
            let chunk = tokio::task::spawn_blocking(move || read_log(&shared, &prefix, from, upto))
                .await
                .map_err(|e| Stop::Failed(Error::unavailable("watch catch-up task failed", e)))?
                .map_err(Stop::Failed)?;
            for event in chunk.events {
                self.send(event).await?;
            }
            if chunk.through <= self.delivered {
                break;
            }
            self.delivered = chunk.through;
        }
        Ok(())
    }
}

async fn next_tick(tick: &mut Option<tokio::time::Interval>) {
    match tick {
        Some(interval) => {
            interval.tick().await;
        }
        None => std::future::pending().await,
    }
}

/// Log events read in one step.
struct Chunk {
    events: Vec<WatchEvent>,
    /// Every revision up to here has been read.
    through: i64,
}

/// Reads up to [`CATCH_UP_CHUNK`] log entries (and about [`CATCH_UP_BYTES`]) after `from`, and
/// at most `upto`, under `prefix`.
fn read_log(shared: &Shared, prefix: &str, from: i64, upto: i64) -> Result<Chunk> {
    let unavailable = |e: redb::Error| Error::unavailable("embedded store", e);
    let txn = shared.db.begin_read().map_err(|e| unavailable(e.into()))?;
    let (committed, compacted) = crate::read::revisions(&txn)?;
    if from < compacted {
        return Err(Error::Expired { requested: from, compacted });
    }
    let upto = upto.min(committed);
    if upto <= from {
        return Ok(Chunk { events: Vec::new(), through: from });
    }
    let log = txn.open_table(LOG).map_err(|e| unavailable(e.into()))?;
    let mut events = Vec::new();
    let mut bytes = 0;
    let mut through = upto;
    let range = log.range((from + 1) as u64..=upto as u64).map_err(|e| unavailable(e.into()))?;
    for (n, entry) in range.enumerate() {
        let (rev, raw) = entry.map_err(|e| unavailable(e.into()))?;
        let (rev, raw) = (rev.value() as i64, raw.value());
        if n >= CATCH_UP_CHUNK || bytes >= CATCH_UP_BYTES {
            through = rev - 1;
            break;
        }
        let corrupt = |e| Error::unavailable("embedded store log", e);
        if !log_key(raw).map_err(corrupt)?.starts_with(prefix) {
            continue;
        }
        let event = decode_log(rev, raw).map_err(corrupt)?.into_event();
        bytes += event_bytes(&event);
        events.push(event);
    }
    Ok(Chunk { events, through })
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use versa_storage::KeyValue;

    use super::*;

    /// A batch of one created key whose key and value are `bytes` long in all.
    fn batch_of(bytes: usize, revision: i64) -> Vec<WatchEvent> {
        let value = Bytes::from(vec![b'x'; bytes - 2]);
        vec![WatchEvent::Added(KeyValue { key: "/k".into(), value, create_revision: revision, mod_revision: revision })]
    }

    /// (max batches, max bytes, the batches' sizes, whether each still has its events).
    #[test]
    fn the_hub_keeps_the_newest_events_within_both_bounds() {
        type Case = (usize, usize, &'static [usize], &'static [bool]);
        let cases: &[Case] = &[
            (10, 1000, &[100, 100, 100], &[true, true, true]),
            (10, 300, &[100, 100, 100, 100], &[false, true, true, true]),
            (10, 250, &[100, 100, 100], &[false, true, true]),
            (10, 250, &[100, 300], &[false, false]),
            (10, 250, &[300, 100], &[false, true]),
            (10, 0, &[100, 100], &[false, false]),
            // Beyond the count bound the channel itself has dropped the batch (`Lagged`).
            (2, 1000, &[100, 100, 100], &[true, true]),
        ];
        for &(max_batches, max_bytes, sizes, kept) in cases {
            let hub = Hub::new(0, max_batches, max_bytes);
            let (mut rx, _) = hub.subscribe().unwrap();
            for (i, &size) in sizes.iter().enumerate() {
                hub.publish(i as i64 + 1, batch_of(size, i as i64 + 1));
            }
            let mut found = Vec::new();
            loop {
                match rx.try_recv() {
                    Ok(batch) => found.push(batch.events.upgrade().is_some()),
                    Err(broadcast::error::TryRecvError::Lagged(_)) => {}
                    Err(_) => break,
                }
            }
            assert_eq!(found, kept, "{max_batches} batches, {max_bytes} bytes, sizes {sizes:?}");
        }
    }

    #[test]
    fn the_hub_keeps_nothing_when_nobody_watches() {
        let hub = Hub::new(0, 10, 1000);
        let (rx, _) = hub.subscribe().unwrap();
        hub.publish(1, batch_of(100, 1));
        drop(rx);
        hub.publish(2, batch_of(100, 2));
        let channel = hub.channel.lock().unwrap();
        let broadcast = channel.as_ref().unwrap();
        assert_eq!((broadcast.kept.len(), broadcast.kept_bytes), (0, 0));
    }
}
