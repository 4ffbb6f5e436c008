//! The bound on compiled state (`versa_registry::compiled`), with real cells: over the budget the
//! least recently used state is dropped, and a state unused for `IDLE` is dropped by the
//! sweeper's ticks. In a process of its own (an integration test), since the budget and the clock
//! of uses are the process's.

#![allow(clippy::unwrap_used, reason = "tests")]

use std::sync::Arc;

use versa_registry::compiled::{BUDGET, Cell, IDLE, TICK, tick};

/// One test: the cells, the budget and the clock are the process's.
#[test]
fn compiled_states_are_bounded_by_the_budget_and_dropped_when_idle() {
    let third = BUDGET / 3 + 1;
    let cells: Vec<Arc<Cell<String>>> = (0..3).map(|_| Cell::new()).collect();
    for (i, cell) in cells.iter().enumerate() {
        let state = cell.get(|| format!("state {i}"));
        tick();
        cell.charge(&state, third);
    }
    // The third charge went over: the least recently used went, the others stay.
    let held: Vec<bool> = cells.iter().map(|c| c.is_held()).collect();
    assert_eq!(held, [false, true, true]);
    // Used again, it is made again.
    assert_eq!(*cells[0].get(|| "made again".to_owned()), "made again");

    // A state in use outlives its drop.
    let kept = cells[1].get(String::new);
    cells[1].forget();
    assert_eq!(*kept, "state 1");
    assert!(!cells[1].is_held());

    // Idle: what is not used for IDLE goes, what is used stays.
    let ticks = IDLE.as_secs() / TICK.as_secs();
    for _ in 0..ticks {
        cells[0].get(String::new);
        tick();
    }
    let held: Vec<bool> = cells.iter().map(|c| c.is_held()).collect();
    assert_eq!(held, [true, false, false]);
}
