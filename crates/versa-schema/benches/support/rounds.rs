//! Timing in interleaved rounds, shared by the in-process benchmarks (`versa-schema`'s pipeline,
//! `versa-cel`'s rules).

use std::time::{Duration, Instant};

/// Runs each of `passes` (one pass over the corpus each) in interleaved rounds for about
/// `budget`, and returns the median time of a pass for each. Interleaving makes a change of load
/// on the shared machine weigh on all of them alike; the median ignores the rounds it hit.
pub fn time<const N: usize>(budget: Duration, mut passes: [&mut dyn FnMut(); N]) -> [Duration; N] {
    for pass in passes.iter_mut() {
        pass(); // warm up
    }
    let mut samples: [Vec<Duration>; N] = std::array::from_fn(|_| Vec::new());
    let start = Instant::now();
    while start.elapsed() < budget || samples[0].len() < 5 {
        for (pass, times) in passes.iter_mut().zip(samples.iter_mut()) {
            let t = Instant::now();
            pass();
            times.push(t.elapsed());
        }
    }
    samples.map(|mut times| {
        times.sort();
        times[times.len() / 2]
    })
}
