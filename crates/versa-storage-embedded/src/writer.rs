//! The writer thread: every create, update, delete and compaction goes through it, so revisions
//! are assigned in one place. It takes whatever is queued (up to `max_batch`) into one redb
//! transaction with `Durability::Immediate` — one fsync for the whole group — and only after the
//! commit returns does it publish the events and answer the callers. A failed commit answers
//! every write of the group with `Unavailable` and assigns none of their revisions. Large values
//! are deflated here (see [`crate::record`]), once for both tables; the previous value a log
//! entry carries is copied as the `kv` table stored it, never deflated again.
//!
//! Between batches (and at least every [`MAINTENANCE_EVERY`] when idle) it trims the event log
//! to the configured history window, a bounded number of entries per transaction.

use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use redb::{Durability, ReadableDatabase as _, ReadableTable as _, Table};
use tokio::sync::oneshot;
use versa_storage::{Deleted, Error, KeyValue, Result, WatchEvent};

use crate::record::{Deflater, KvRecord, encode_kv, encode_log, log_time_ms, split_kv};
use crate::{KV, LOG, META, META_COMPACTED, META_REVISION, Shared};

/// How often an idle writer checks whether history has aged out.
const MAINTENANCE_EVERY: Duration = Duration::from_secs(1);
/// The longest a commit waits for concurrent writers to resubmit (see `Writer::gather`).
const GATHER_WAIT: Duration = Duration::from_micros(200);
/// At most this many history entries are dropped per transaction.
const TRIM_PER_TXN: usize = 10_000;

/// A request to the writer; each carries the channel its answer goes to.
#[derive(Debug)]
pub enum Op {
    Create { key: String, value: Bytes, reply: oneshot::Sender<Result<KeyValue>> },
    Update { key: String, value: Bytes, expected: i64, reply: oneshot::Sender<Result<KeyValue>> },
    Delete { key: String, expected: Option<i64>, reply: oneshot::Sender<Result<Deleted>> },
    Compact { revision: i64, reply: oneshot::Sender<Result<()>> },
}

/// Creates the tables of a new store and returns the current revision.
pub fn init_tables(db: &redb::Database) -> Result<i64, redb::Error> {
    let txn = db.begin_write()?;
    {
        txn.open_table(KV)?;
        txn.open_table(LOG)?;
        txn.open_table(META)?;
    }
    txn.commit()?;
    let txn = db.begin_read()?;
    Ok(committed_revision(&txn.open_table(LOG)?, &txn.open_table(META)?)?)
}

/// The last committed revision: the newest log entry's, or — when history has been dropped
/// down to nothing — the revision recorded when it was dropped. (Only dropping history writes
/// `meta.revision`, which keeps ordinary commits to two tables.)
pub fn committed_revision(
    log: &impl redb::ReadableTable<u64, &'static [u8]>,
    meta: &impl redb::ReadableTable<&'static str, u64>,
) -> Result<i64, redb::StorageError> {
    let last = log.last()?.map_or(0, |(rev, _)| rev.value());
    let recorded = meta.get(META_REVISION)?.map_or(0, |v| v.value());
    Ok(last.max(recorded) as i64)
}

/// Starts the writer thread; it ends when every sender is gone, closing the hub behind it.
pub fn start(shared: Arc<Shared>, revision: i64) -> std::io::Result<(Sender<Op>, std::thread::JoinHandle<()>)> {
    let (tx, rx) = std::sync::mpsc::channel();
    let thread = std::thread::Builder::new().name("versa-store-writer".into()).spawn(move || {
        let hub = shared.clone();
        Writer { shared, revision, last_batch: 0, deflater: Deflater::default() }.run(rx);
        hub.hub.close();
    })?;
    Ok((tx, thread))
}

struct Writer {
    shared: Arc<Shared>,
    /// The last committed revision.
    revision: i64,
    /// How many writes the previous commit carried.
    last_batch: usize,
    /// Deflates large values (`record`), one state reused for every write.
    deflater: Deflater,
}

struct Tables<'t> {
    kv: Table<'t, &'static str, &'static [u8]>,
    log: Table<'t, u64, &'static [u8]>,
    meta: Table<'t, &'static str, u64>,
}

impl Writer {
    fn run(mut self, rx: Receiver<Op>) {
        loop {
            let first = match rx.recv_timeout(MAINTENANCE_EVERY) {
                Ok(op) => op,
                Err(RecvTimeoutError::Timeout) => {
                    self.maintain();
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) => return,
            };
            let batch = self.gather(first, &rx);
            self.last_batch = batch.len();
            self.commit_batch(batch);
        }
    }

    /// Takes `first` and everything queued behind it. When the previous commit carried several
    /// writes, callers are evidently writing concurrently and are about to resubmit (they were
    /// all answered at once): wait up to [`GATHER_WAIT`] for as many as last time, so that one
    /// fsync serves them all instead of two half-full commits. A lone writer never waits.
    fn gather(&self, first: Op, rx: &Receiver<Op>) -> Vec<Op> {
        let max = self.shared.config.max_batch;
        let mut batch = vec![first];
        let deadline = std::time::Instant::now() + GATHER_WAIT;
        while batch.len() < max {
            match rx.try_recv() {
                Ok(op) => batch.push(op),
                Err(_) if batch.len() < self.last_batch && std::time::Instant::now() < deadline => {
                    std::thread::yield_now()
                }
                Err(_) => break,
            }
        }
        batch
    }

    /// Applies a group of writes in one transaction, commits, publishes, answers.
    fn commit_batch(&mut self, batch: Vec<Op>) {
        let start_revision = self.revision;
        let mut answers = Vec::with_capacity(batch.len());
        let mut events = Vec::with_capacity(batch.len());
        let outcome = (|| -> Result<(), redb::Error> {
            let mut txn = self.shared.db.begin_write()?;
            txn.set_durability(Durability::Immediate)?;
            {
                let mut t = Tables { kv: txn.open_table(KV)?, log: txn.open_table(LOG)?, meta: txn.open_table(META)? };
                let now = now_ms();
                for op in batch.iter() {
                    answers.push(self.apply(op, &mut t, now, &mut events)?);
                }
                self.trim(&mut t, now)?;
            }
            txn.commit()?;
            Ok(())
        })();
        match outcome {
            Ok(()) => {
                // Before anyone hears of the commit: gets must see it.
                self.shared.latest.committed();
                if !events.is_empty() {
                    self.shared.hub.publish(self.revision, events);
                }
                for (op, outcome) in batch.into_iter().zip(answers) {
                    op.answer(Some(outcome), "");
                }
            }
            Err(e) => {
                self.revision = start_revision;
                let message = format!("embedded store commit failed: {e}");
                for op in batch {
                    op.answer(None, &message);
                }
            }
        }
    }

    /// Applies one write inside the transaction; a logical failure (conflict, missing key) is
    /// that write's answer, a storage failure aborts the group.
    fn apply(
        &mut self,
        op: &Op,
        t: &mut Tables<'_>,
        now: u64,
        events: &mut Vec<WatchEvent>,
    ) -> Result<Outcome, redb::Error> {
        Ok(match op {
            Op::Create { key, value, .. } => {
                if t.kv.get(key.as_str())?.is_some() {
                    return Ok(Outcome::KeyValue(Err(Error::AlreadyExists { key: key.clone() })));
                }
                let revision = self.next();
                let stored = self.deflater.store(value);
                t.kv.insert(key.as_str(), encode_kv(revision, revision, &stored).as_slice())?;
                t.log.insert(revision as u64, encode_log(now, key, Some((revision, &stored)), None).as_slice())?;
                let kv = KeyValue {
                    key: key.clone(),
                    value: value.clone(),
                    create_revision: revision,
                    mod_revision: revision,
                };
                events.push(WatchEvent::Added(kv.clone()));
                Outcome::KeyValue(Ok(kv))
            }
            Op::Update { key, value, expected, .. } => {
                let (record, prev) = match current(&t.kv, key)? {
                    Ok(current) => current,
                    Err(e) => return Ok(Outcome::KeyValue(Err(e))),
                };
                if prev.mod_revision != *expected {
                    return Ok(Outcome::KeyValue(Err(Error::Conflict { key: key.clone(), expected: *expected })));
                }
                let revision = self.next();
                let create = prev.create_revision;
                let stored = self.deflater.store(value);
                t.kv.insert(key.as_str(), encode_kv(create, revision, &stored).as_slice())?;
                let log = encode_log(now, key, Some((create, &stored)), Some(&record));
                t.log.insert(revision as u64, log.as_slice())?;
                let kv = KeyValue {
                    key: key.clone(),
                    value: value.clone(),
                    create_revision: create,
                    mod_revision: revision,
                };
                events.push(WatchEvent::Modified { kv: kv.clone(), prev: Some(prev) });
                Outcome::KeyValue(Ok(kv))
            }
            Op::Delete { key, expected, .. } => {
                let (record, prev) = match current(&t.kv, key)? {
                    Ok(current) => current,
                    Err(e) => return Ok(Outcome::Deleted(Err(e))),
                };
                if let Some(expected) = expected
                    && prev.mod_revision != *expected
                {
                    return Ok(Outcome::Deleted(Err(Error::Conflict { key: key.clone(), expected: *expected })));
                }
                let revision = self.next();
                t.kv.remove(key.as_str())?;
                t.log.insert(revision as u64, encode_log(now, key, None, Some(&record)).as_slice())?;
                events.push(WatchEvent::Deleted { revision, prev: prev.clone() });
                Outcome::Deleted(Ok(Deleted { revision, prev }))
            }
            Op::Compact { revision, .. } => {
                if *revision > self.revision {
                    return Ok(Outcome::Unit(Err(Error::FutureRevision {
                        requested: *revision,
                        current: self.revision,
                    })));
                }
                let compacted = t.meta.get(META_COMPACTED)?.map_or(0, |v| v.value()) as i64;
                if *revision > compacted {
                    drop_history(t, *revision as u64, usize::MAX, self.revision)?;
                }
                Outcome::Unit(Ok(()))
            }
        })
    }

    fn next(&mut self) -> i64 {
        self.revision += 1;
        self.revision
    }

    /// Drops history beyond the configured window (a bounded amount per transaction).
    fn trim(&self, t: &mut Tables<'_>, now: u64) -> Result<bool, redb::Error> {
        let config = &self.shared.config;
        let by_count = (self.revision as u64).saturating_sub(config.history_max_events);
        let oldest_ms = now.saturating_sub(config.history_max_age.as_millis() as u64);
        // The newest revision that may go: everything up to `by_count`, and anything older
        // than the age limit.
        let mut upto = by_count;
        for entry in t.log.range(by_count + 1..)?.take(TRIM_PER_TXN) {
            let (rev, raw) = entry?;
            match log_time_ms(raw.value()) {
                Ok(time) if time < oldest_ms => upto = rev.value(),
                _ => break,
            }
        }
        let compacted = t.meta.get(META_COMPACTED)?.map_or(0, |v| v.value());
        if upto <= compacted {
            return Ok(false);
        }
        drop_history(t, upto, TRIM_PER_TXN, self.revision)
    }

    /// An idle writer's housekeeping: trim aged-out history in its own transaction.
    fn maintain(&mut self) {
        let result = (|| -> Result<(), redb::Error> {
            let mut txn = self.shared.db.begin_write()?;
            txn.set_durability(Durability::Immediate)?;
            let changed = {
                let mut t = Tables { kv: txn.open_table(KV)?, log: txn.open_table(LOG)?, meta: txn.open_table(META)? };
                self.trim(&mut t, now_ms())?
            };
            if changed {
                txn.commit()?;
                // Trimming changes no value, but a kept snapshot would pin the freed pages.
                self.shared.latest.committed();
            } else {
                txn.abort()?
            }
            Ok(())
        })();
        // Trimming is retried on the next tick; a failing disk shows up on the next write.
        let _ = result;
    }
}

/// Drops log entries up to `upto` (at most `limit` of them) and records the compaction point
/// and the current `revision` (which the log may no longer show).
fn drop_history(t: &mut Tables<'_>, upto: u64, limit: usize, revision: i64) -> Result<bool, redb::Error> {
    let mut last = None;
    let mut removed = 0;
    while removed < limit {
        let Some(rev) = t.log.first()?.map(|(rev, _)| rev.value()) else { break };
        if rev > upto {
            break;
        }
        t.log.remove(rev)?;
        last = Some(rev);
        removed += 1;
    }
    // Reaching `upto` (or an empty log) compacts exactly to `upto`; stopping early compacts to
    // the last entry removed.
    let point = if removed < limit { Some(upto) } else { last };
    if let Some(point) = point {
        let compacted = t.meta.get(META_COMPACTED)?.map_or(0, |v| v.value());
        if point > compacted {
            t.meta.insert(META_COMPACTED, point)?;
            t.meta.insert(META_REVISION, revision as u64)?;
            return Ok(true);
        }
    }
    if removed > 0 {
        t.meta.insert(META_REVISION, revision as u64)?;
    }
    Ok(removed > 0)
}

/// The key's current record — its value as stored, for the log entry of the next write, which
/// then need not deflate it again — and its value, or `NotFound`.
fn current(
    kv: &Table<'_, &'static str, &'static [u8]>,
    key: &str,
) -> Result<Result<(KvRecord<'static>, KeyValue)>, redb::Error> {
    let Some(raw) = kv.get(key)? else {
        return Ok(Err(Error::NotFound { key: key.to_string() }));
    };
    let decoded = split_kv(raw.value()).and_then(|record| {
        let value = record.key_value(key)?;
        Ok((record.into_owned(), value))
    });
    Ok(decoded.map_err(|e| Error::unavailable("embedded store", e)))
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// A write's result, held until its transaction commits.
enum Outcome {
    KeyValue(Result<KeyValue>),
    Deleted(Result<Deleted>),
    Unit(Result<()>),
}

impl Op {
    /// Sends the write's outcome to its caller; `None` (the transaction failed) sends
    /// `Unavailable` with `failure`. A caller that stopped waiting no longer needs the answer.
    fn answer(self, outcome: Option<Outcome>, failure: &str) {
        let fail = || Error::unavailable_msg(failure.to_string());
        match (self, outcome) {
            (Op::Create { reply, .. } | Op::Update { reply, .. }, Some(Outcome::KeyValue(r))) => {
                let _ = reply.send(r);
            }
            (Op::Create { reply, .. } | Op::Update { reply, .. }, _) => {
                let _ = reply.send(Err(fail()));
            }
            (Op::Delete { reply, .. }, Some(Outcome::Deleted(r))) => {
                let _ = reply.send(r);
            }
            (Op::Delete { reply, .. }, _) => {
                let _ = reply.send(Err(fail()));
            }
            (Op::Compact { reply, .. }, Some(Outcome::Unit(r))) => {
                let _ = reply.send(r);
            }
            (Op::Compact { reply, .. }, _) => {
                let _ = reply.send(Err(fail()));
            }
        }
    }
}
