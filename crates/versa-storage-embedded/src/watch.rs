//! Watches. The writer publishes each committed batch on a broadcast channel ([`Hub`]); a watch
//! is a task that first replays the durable event log from its start revision up to the
//! revision current when it subscribed, then follows the broadcast. When its consumer is slow
//! and the broadcast overflows (`Lagged`), it re-reads the missed range from the log instead of
//! buffering without bound — or ends with `Expired` if that range has been trimmed meanwhile.
//!
//! Progress: on request (and every `progress_interval`) the task drains what is already
//! published and reports the last revision it has accounted for.

use std::sync::{Arc, Mutex};

use redb::ReadableDatabase as _;
use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;
use versa_storage::{Error, Result, Watch, WatchEvent, WatchSender};

use crate::record::{decode_log, log_key};
use crate::{LOG, Shared};

/// Log entries read per catch-up step.
const CATCH_UP_CHUNK: usize = 1000;

/// One committed batch: its events in revision order and the revision after it.
#[derive(Debug)]
pub struct Batch {
    pub revision: i64,
    pub events: Vec<WatchEvent>,
}

/// The publish side, shared by the writer and every watch.
#[derive(Debug)]
pub struct Hub {
    /// The last published revision; held while publishing and subscribing so that a new watch
    /// knows exactly which batches it will receive.
    revision: Mutex<i64>,
    /// `None` once the store has closed: watches then end.
    tx: Mutex<Option<broadcast::Sender<Arc<Batch>>>>,
}

impl Hub {
    /// A hub at `revision` keeping up to `capacity` batches for slow watches.
    pub fn new(revision: i64, capacity: usize) -> Self {
        let (tx, _) = broadcast::channel(capacity.max(1));
        Hub { revision: Mutex::new(revision), tx: Mutex::new(Some(tx)) }
    }

    /// The last published (committed) revision.
    pub fn revision(&self) -> i64 {
        *self.revision.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Publishes a committed batch ending at `revision`.
    pub fn publish(&self, revision: i64, events: Vec<WatchEvent>) {
        let mut current = self.revision.lock().unwrap_or_else(|p| p.into_inner());
        *current = revision;
        if let Some(tx) = &*self.tx.lock().unwrap_or_else(|p| p.into_inner()) {
            // No receivers is fine: nobody is watching.
            let _ = tx.send(Arc::new(Batch { revision, events }));
        }
    }

    /// Ends every watch (the store is closing).
    pub fn close(&self) {
        self.tx.lock().unwrap_or_else(|p| p.into_inner()).take();
    }

    /// A receiver of every batch after the returned revision (`None` once closed).
    fn subscribe(&self) -> Option<(broadcast::Receiver<Arc<Batch>>, i64)> {
        let current = self.revision.lock().unwrap_or_else(|p| p.into_inner());
        let tx = self.tx.lock().unwrap_or_else(|p| p.into_inner());
        tx.as_ref().map(|tx| (tx.subscribe(), *current))
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
            Err(RecvError::Lagged(_)) => {
                let upto = self.shared.hub.revision();
                // Batches still queued at or below `upto` are then skipped by revision.
                self.catch_up(upto).await
            }
            Err(RecvError::Closed) => Err(Stop::Failed(Error::unavailable_msg("the embedded store was closed"))),
        }
    }

    async fn deliver_batch(&mut self, batch: &Batch) -> Result<(), Stop> {
        if batch.revision <= self.delivered {
            return Ok(());
        }
        for event in &batch.events {
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
                Err(broadcast::error::TryRecvError::Lagged(_)) => {
                    let upto = self.shared.hub.revision();
                    self.catch_up(upto).await?;
                }
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

/// Reads up to [`CATCH_UP_CHUNK`] log entries after `from` (and at most `upto`) under `prefix`.
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
    let mut through = upto;
    let range = log.range((from + 1) as u64..=upto as u64).map_err(|e| unavailable(e.into()))?;
    for (n, entry) in range.enumerate() {
        let (rev, raw) = entry.map_err(|e| unavailable(e.into()))?;
        let (rev, raw) = (rev.value() as i64, raw.value());
        if n >= CATCH_UP_CHUNK {
            through = rev - 1;
            break;
        }
        let corrupt = |e| Error::unavailable("embedded store log", e);
        if !log_key(raw).map_err(corrupt)?.starts_with(prefix) {
            continue;
        }
        events.push(decode_log(rev, raw).map_err(corrupt)?.into_event());
    }
    Ok(Chunk { events, through })
}
