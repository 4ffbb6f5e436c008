//! A large batch, split between this thread and one helper thread.
//!
//! A webhook conversion of a LIST page works on every object of the page twice on versa's side:
//! writing the review, and then parsing, checking and finishing each converted object. Both are
//! independent per object, and both are most of what a conversion costs besides the webhook
//! itself, so batches of [`PARALLEL_MIN`] objects or more are done in two halves at once.

use std::sync::Mutex;

/// Batches at least this large are worked on in two halves.
pub(crate) const PARALLEL_MIN: usize = 256;

/// Stack of the helper thread: parsing, serialising, coercing and freeing recurse once per
/// nesting level, as on the server's workers.
const HELPER_STACK_BYTES: usize = 32 << 20;

/// `work(first)` on this thread while a helper thread does `work(second)`. When no thread can
/// be started, both run here, one after the other. The second result is `None` only when the
/// helper thread panicked (its half is then lost).
pub(crate) fn in_two<A: Send, R: Send>(first: A, second: A, work: impl Fn(A) -> R + Sync) -> (R, Option<R>) {
    // Handed over through a slot, so that it is still here if no thread can be started.
    let slot = Mutex::new(Some(second));
    let take = || slot.lock().ok().and_then(|mut s| s.take());
    std::thread::scope(|scope| {
        let helper = std::thread::Builder::new()
            .name("versa-conversion".into())
            .stack_size(HELPER_STACK_BYTES)
            .spawn_scoped(scope, || take().map(&work));
        let here = work(first);
        let there = match helper {
            Ok(handle) => handle.join().ok().flatten(),
            Err(_) => take().map(&work),
        };
        (here, there)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_halves_are_worked_on_and_returned_in_order() {
        let (a, b) = in_two(vec![1, 2], vec![3, 4, 5], |v: Vec<i32>| v.iter().sum::<i32>());
        assert_eq!((a, b), (3, Some(12)));
    }
}
