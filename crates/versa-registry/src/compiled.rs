//! What a resource compiles on first use, bounded by the working set: each [`Cell`] holds one
//! resource's compiled state (every version's lowered schema with its CEL rules, and the
//! converter, `resource.rs`) while it is used, and drops it when it is not.
//!
//! Compiled, a real definition takes about six times its schema text (300 KiB for a 52 KiB
//! definition, `docs/memory.md`), and a cluster holds thousands of definitions of which it uses
//! a few hundred. So the compiled state is held by its resource only for as long as it is used:
//!
//! - **Idle**: a state unused for [`IDLE`] is dropped (by [`tick`], which the server's sweeper
//!   thread calls every [`TICK`], [`start_sweeper`]).
//! - **Budget**: the process holds compiled states worth at most [`BUDGET`] bytes of schema
//!   text (each version's text length is its cost, charged when it compiles); a compilation
//!   that goes over drops the least recently used other states until it is under.
//!
//! A state dropped is compiled again on its next use, from the same texts, so it serves the
//! same; the definitions controller validated those texts before they were served, so
//! recompiling cannot fail where the first compilation did not. Dropping never disturbs a
//! request: a request holds the state it started with (an `Arc`), and only the resource's
//! reference is cleared; the next request compiles a new one. The converter belongs to the
//! same state and prunes with its versions' schemas, so the two are dropped and rebuilt
//! together and never hold two copies of one schema.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex, PoisonError, RwLock, Weak};
use std::time::Duration;

/// How often the sweeper advances the clock of uses and drops idle states.
pub const TICK: Duration = Duration::from_secs(1);
/// A compiled state unused this long is dropped: long enough that what a client or controller
/// touches every few minutes stays compiled, short enough that what one `kubectl get` of every
/// kind compiled does not stay for the life of the server.
pub const IDLE: Duration = Duration::from_secs(600);
/// The schema text the process keeps compiled, in bytes (each compiled version counts its
/// schema text's length): 16 MiB, about 100 MiB compiled — some 300 of the real definitions
/// `hack/bench-memory.sh` loads.
pub const BUDGET: usize = 16 << 20;

/// The clock of uses: [`TICK`]s since the sweeper started (it stays 0 without one, in tests and
/// the offline tools, where only the budget drops states).
static NOW: AtomicU64 = AtomicU64::new(0);
/// The schema text charged to the states cells hold now, in bytes.
static CHARGED: AtomicUsize = AtomicUsize::new(0);
/// The cells that hold a state (and some that no longer do, or are gone: swept as it grows).
static HOLDING: LazyLock<Mutex<Holding>> = LazyLock::new(Mutex::default);

#[derive(Default)]
struct Holding {
    cells: Vec<Weak<dyn Evict>>,
    /// The list's length at which cells that hold nothing are swept from it next.
    sweep_at: usize,
}

/// A cell, as [`HOLDING`] sees it.
trait Evict: Send + Sync {
    /// The tick of its last use and its charge, if it holds a state.
    fn used(&self) -> Option<(u64, usize)>;
    /// Drops its state (returned, to be dropped outside every lock).
    fn evict(&self) -> Option<Box<dyn Send>>;
}

/// One resource's compiled state `T`, made on first use and dropped when unused (module doc).
pub struct Cell<T> {
    held: RwLock<Option<Arc<T>>>,
    /// The tick of the last use.
    used: AtomicU64,
    /// What the state held now was charged (schema text bytes).
    charged: AtomicUsize,
}

impl<T> std::fmt::Debug for Cell<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let held = self.held.read().unwrap_or_else(PoisonError::into_inner).is_some();
        f.debug_struct("Cell").field("held", &held).field("charged", &self.charged).finish()
    }
}

impl<T: Send + Sync + 'static> Cell<T> {
    pub fn new() -> Arc<Cell<T>> {
        Arc::new(Cell { held: RwLock::new(None), used: AtomicU64::new(0), charged: AtomicUsize::new(0) })
    }

    /// The state held, or a new one made by `make` (empty: what it holds is compiled in it on
    /// demand, and [`Cell::charge`]d); marks the cell used.
    pub fn get(self: &Arc<Self>, make: impl FnOnce() -> T) -> Arc<T> {
        let now = NOW.load(Ordering::Relaxed);
        // A store only when the tick changed: a hot resource's cell is read, not written.
        if self.used.load(Ordering::Relaxed) != now {
            self.used.store(now, Ordering::Relaxed);
        }
        if let Some(held) = &*self.held.read().unwrap_or_else(PoisonError::into_inner) {
            return Arc::clone(held);
        }
        let made = {
            let mut held = self.held.write().unwrap_or_else(PoisonError::into_inner);
            if let Some(held) = &*held {
                return Arc::clone(held);
            }
            Arc::clone(held.insert(Arc::new(make())))
        };
        let cell: Arc<dyn Evict> = Arc::clone(self) as Arc<dyn Evict>;
        let mut holding = HOLDING.lock().unwrap_or_else(PoisonError::into_inner);
        if holding.cells.len() >= holding.sweep_at {
            holding.cells.retain(|c| c.upgrade().is_some_and(|c| c.used().is_some()));
            holding.sweep_at = (holding.cells.len() * 2).max(64);
        }
        holding.cells.push(Arc::downgrade(&cell));
        made
    }

    /// Charges `bytes` of schema text, just compiled into `state`, to this cell — unless the
    /// state was dropped meanwhile — then drops the least recently used other states while the
    /// process is over [`BUDGET`].
    pub fn charge(self: &Arc<Self>, state: &Arc<T>, bytes: usize) {
        {
            let held = self.held.read().unwrap_or_else(PoisonError::into_inner);
            if !held.as_ref().is_some_and(|h| Arc::ptr_eq(h, state)) {
                return;
            }
            self.charged.fetch_add(bytes, Ordering::Relaxed);
            CHARGED.fetch_add(bytes, Ordering::Relaxed);
        }
        if CHARGED.load(Ordering::Relaxed) > BUDGET {
            let this: Arc<dyn Evict> = Arc::clone(self) as Arc<dyn Evict>;
            evict(|cells| over_budget(cells, CHARGED.load(Ordering::Relaxed), BUDGET), Some(&this));
        }
    }

    /// Whether the cell holds a state now.
    pub fn is_held(&self) -> bool {
        self.held.read().unwrap_or_else(PoisonError::into_inner).is_some()
    }

    /// The state held now, if any, without marking the cell used (for tests).
    pub fn peek(&self) -> Option<Arc<T>> {
        self.held.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Drops the state held now, if any (the next use compiles a new one).
    pub fn forget(&self) {
        drop(Evict::evict(self));
    }
}

impl<T: Send + Sync + 'static> Evict for Cell<T> {
    fn used(&self) -> Option<(u64, usize)> {
        let held = self.held.read().unwrap_or_else(PoisonError::into_inner).is_some();
        held.then(|| (self.used.load(Ordering::Relaxed), self.charged.load(Ordering::Relaxed)))
    }

    fn evict(&self) -> Option<Box<dyn Send>> {
        let state = self.held.write().unwrap_or_else(PoisonError::into_inner).take()?;
        CHARGED.fetch_sub(self.charged.swap(0, Ordering::Relaxed), Ordering::Relaxed);
        Some(Box::new(state))
    }
}

impl<T> Drop for Cell<T> {
    fn drop(&mut self) {
        CHARGED.fetch_sub(*self.charged.get_mut(), Ordering::Relaxed);
    }
}

/// Drops the states of the cells `choose` picks (given each holding cell's last use and
/// charge, it returns their indices), never `spare`'s. The states are dropped after every lock
/// is released: a large one takes a while to free.
fn evict(choose: impl FnOnce(&[(u64, usize)]) -> Vec<usize>, spare: Option<&Arc<dyn Evict>>) {
    let dropped: Vec<Box<dyn Send>> = {
        let mut holding = HOLDING.lock().unwrap_or_else(PoisonError::into_inner);
        let mut live: Vec<(Arc<dyn Evict>, (u64, usize))> = holding
            .cells
            .iter()
            .filter_map(Weak::upgrade)
            .filter(|c| !spare.is_some_and(|s| same(s, c)))
            .filter_map(|c| {
                let facts = c.used()?;
                Some((c, facts))
            })
            .collect();
        // A cell dropped and used again may be listed twice.
        live.sort_by_key(|(c, _)| Arc::as_ptr(c).cast::<()>());
        live.dedup_by(|a, b| same(&a.0, &b.0));
        let facts: Vec<(u64, usize)> = live.iter().map(|(_, f)| *f).collect();
        let dropped = choose(&facts).into_iter().filter_map(|i| live.get(i)?.0.evict()).collect();
        holding.cells.retain(|c| c.upgrade().is_some_and(|c| c.used().is_some()));
        dropped
    };
    drop(dropped);
}

fn same(a: &Arc<dyn Evict>, b: &Arc<dyn Evict>) -> bool {
    std::ptr::addr_eq(Arc::as_ptr(a), Arc::as_ptr(b))
}

/// The cells to drop so that `charged` comes under `budget`: the least recently used first.
/// `cells` are (last use, charge).
fn over_budget(cells: &[(u64, usize)], charged: usize, budget: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..cells.len()).collect();
    order.sort_by_key(|&i| cells[i].0);
    let mut left = charged;
    order
        .into_iter()
        .take_while(|&i| {
            let over = left > budget;
            left = left.saturating_sub(cells[i].1);
            over
        })
        .collect()
}

/// The cells unused for [`IDLE`] at tick `now`.
fn idle(cells: &[(u64, usize)], now: u64) -> Vec<usize> {
    let ticks = IDLE.as_secs() / TICK.as_secs().max(1);
    (0..cells.len()).filter(|&i| cells[i].0.saturating_add(ticks) <= now).collect()
}

/// Advances the clock of uses by one tick and drops the states unused for [`IDLE`].
pub fn tick() {
    let now = NOW.fetch_add(1, Ordering::Relaxed) + 1;
    evict(|cells| idle(cells, now), None);
}

/// Starts the sweeper: a thread that calls [`tick`] every [`TICK`]. A thread that cannot be
/// started is logged and left out: compiled states are then bounded by [`BUDGET`] alone.
pub fn start_sweeper() {
    let started = std::thread::Builder::new().name("versa-compiled".into()).spawn(|| {
        loop {
            std::thread::sleep(TICK);
            tick();
        }
    });
    if let Err(e) = started {
        tracing::warn!("cannot start the sweeper of compiled schemas ({e}); they are bounded by their budget alone");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Over the budget, the least recently used go first, until the rest is under it.
    #[test]
    fn the_least_recently_used_go_first() {
        let cells = [(5, 100), (1, 300), (3, 200), (9, 50)];
        assert_eq!(over_budget(&cells, 650, 250), [1, 2]);
        assert_eq!(over_budget(&cells, 650, 650), Vec::<usize>::new());
        assert_eq!(over_budget(&cells, 650, 0), [1, 2, 0, 3]);
    }

    /// What was last used [`IDLE`] ago or longer goes.
    #[test]
    fn what_is_idle_goes() {
        let ticks = IDLE.as_secs() / TICK.as_secs();
        let cells = [(0, 1), (10, 1), (ticks, 1)];
        assert_eq!(idle(&cells, ticks - 1), Vec::<usize>::new());
        assert_eq!(idle(&cells, ticks + 10), [0, 1]);
    }
}
