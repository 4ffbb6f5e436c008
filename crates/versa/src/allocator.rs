//! The process's allocator, and the one piece of upkeep it needs.
//!
//! mimalloc is chosen for serving speed (`hack/bench-serve.sh` uses the same one). Memory the
//! program frees goes back to the operating system only after a delay (a second in mimalloc 3),
//! and only when mimalloc next looks at its arenas, which it does when some thread hands a page
//! back to it. A server that goes quiet after building a large document (`/openapi/v2` at a
//! thousand real definitions is tens of MiB while it is written) hands back no more pages, so
//! what that document freed stays resident for as long as the server is quiet: 10–18 MiB each
//! time in `hack/bench-memory.sh` (docs/memory.md, "Allocator retention").
//!
//! [`start_purger`] starts one thread that, every second, allocates and frees a block above
//! mimalloc's largest size class (512 KiB). Such a block has a page of its own, and freeing it
//! hands that page back, which makes mimalloc return the freed memory whose delay has passed.
//! The block is never written, so it costs no resident memory; the purges are the ones
//! mimalloc would have done at its next page handed back anyway, never sooner than its delay,
//! so serving pays nothing for them. mimalloc's `mi_collect` would say the same thing
//! directly, but calling it needs `unsafe`, which this workspace forbids.
//!
//! The `system-allocator` feature leaves the system's malloc in place, for heap profilers that
//! hook it; the purger is then not started.

/// See the module doc.
#[cfg(not(feature = "system-allocator"))]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// How often the purger hands a page back (see the module doc).
#[cfg(not(feature = "system-allocator"))]
const PURGE_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// Above mimalloc's largest size class (512 KiB), so the block gets a page of its own.
#[cfg(not(feature = "system-allocator"))]
const PAGE_OF_ITS_OWN: usize = 1 << 20;

/// Starts the purger thread (see the module doc). A thread that cannot be started is logged
/// and left out: it only changes how soon an idle server's freed memory leaves the process.
pub fn start_purger() {
    #[cfg(not(feature = "system-allocator"))]
    {
        let started = std::thread::Builder::new().name("versa-purge".into()).spawn(|| {
            loop {
                std::thread::sleep(PURGE_EVERY);
                // `black_box` keeps the compiler from eliding the allocation and its free.
                drop(std::hint::black_box(Vec::<u8>::with_capacity(PAGE_OF_ITS_OWN)));
            }
        });
        if let Err(e) = started {
            tracing::warn!("cannot start the allocator's purge thread ({e}); an idle server keeps the memory it freed");
        }
    }
}
