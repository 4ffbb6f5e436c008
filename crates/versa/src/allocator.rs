//! The process's allocator: jemalloc, and the settings it is built with.
//!
//! Serving is allocation-heavy (every object is a tree of small maps and strings): with glibc's
//! malloc a LIST of 1,000 objects takes about twice as long. Of the fast allocators, jemalloc is
//! the one that keeps least around what the process holds for long: a definition's state (a few
//! dozen small blocks) is allocated among the megabyte of short-lived blocks that creating,
//! validating and publishing it frees. With mimalloc 3, which versa used before, the RSS grew by
//! 2.5–3× what was kept, 34.9 KiB for each distinct definition at 1,700; with jemalloc, by
//! about 12 KiB, as fast or faster on the serving benchmark (`docs/memory.md`, "jemalloc").
//!
//! Freed memory goes back to the operating system on jemalloc's own background threads (the
//! `background_threads` feature), also while the server is idle, after about a second unused:
//! `dirty_decay_ms:1000,muzzy_decay_ms:0`, compiled into the binary from `.cargo/config.toml`
//! (`JEMALLOC_SYS_WITH_MALLOC_CONF`), since setting them from here would need `unsafe`, which
//! this workspace forbids. `_RJEM_MALLOC_CONF` overrides them at run time.
//!
//! [`metrics`] adds jemalloc's statistics to `/metrics` (`versa_allocator_*_bytes`): what the
//! program holds against what the process keeps resident for it — the allocator's share, which
//! `hack/bench-memory.sh` prints at each step.
//!
//! The `system-allocator` feature leaves the system's malloc in place, for heap profilers that
//! hook it (`hack/heap-in-use.c`, heaptrack); there are no allocator metrics then.

use std::sync::Arc;

use versa_server::metrics::Collector;

/// See the module doc.
#[cfg(not(feature = "system-allocator"))]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// The allocator's collector for `/metrics`, when the allocator is jemalloc.
pub fn metrics() -> Option<Arc<dyn Collector>> {
    #[cfg(not(feature = "system-allocator"))]
    return Some(Arc::new(Stats));
    #[cfg(feature = "system-allocator")]
    None
}

/// jemalloc's statistics as gauges, read when `/metrics` is asked for.
#[cfg(not(feature = "system-allocator"))]
#[derive(Debug)]
struct Stats;

#[cfg(not(feature = "system-allocator"))]
impl Collector for Stats {
    fn encode(&self, mut encoder: prometheus_client::encoding::DescriptorEncoder) -> std::fmt::Result {
        use prometheus_client::encoding::EncodeMetric as _;
        use prometheus_client::metrics::MetricType;
        use prometheus_client::metrics::gauge::ConstGauge;
        use tikv_jemalloc_ctl::stats;
        // jemalloc's statistics are a snapshot, refreshed when its epoch advances; without a
        // fresh one, nothing is exposed rather than stale figures.
        if tikv_jemalloc_ctl::epoch::advance().is_err() {
            return Ok(());
        }
        let series = [
            (
                "versa_allocator_allocated_bytes",
                "Bytes the program has allocated and not freed (jemalloc's stats.allocated).",
                stats::allocated::read(),
            ),
            (
                "versa_allocator_active_bytes",
                "Bytes of the pages that hold allocations, with the free space between them (stats.active).",
                stats::active::read(),
            ),
            (
                "versa_allocator_resident_bytes",
                "Bytes the allocator keeps resident: active pages, its metadata, and freed pages not yet \
                 returned to the system (stats.resident).",
                stats::resident::read(),
            ),
            (
                "versa_allocator_metadata_bytes",
                "Bytes of the allocator's own metadata (stats.metadata).",
                stats::metadata::read(),
            ),
            (
                "versa_allocator_retained_bytes",
                "Bytes of address space returned to the system but kept mapped for reuse, not resident (stats.retained).",
                stats::retained::read(),
            ),
        ];
        for (name, help, value) in series {
            if let Ok(value) = value {
                let value = i64::try_from(value).unwrap_or(i64::MAX);
                ConstGauge::new(value).encode(encoder.encode_descriptor(name, help, None, MetricType::Gauge)?)?;
            }
        }
        Ok(())
    }
}

#[cfg(all(test, not(feature = "system-allocator")))]
mod tests {
    /// The settings of `.cargo/config.toml` reached the build, and background threads are on:
    /// without them, freed memory stays in the process (jemalloc's default decay is 10 s, and
    /// without its threads it purges only when some thread allocates).
    #[test]
    fn jemalloc_is_built_with_the_settings_of_the_workspace() {
        // tikv-jemalloc-ctl 0.7 returns the string with its terminating NUL.
        let compiled = tikv_jemalloc_ctl::config::malloc_conf::read().unwrap().trim_end_matches('\0');
        for setting in ["background_thread:true", "dirty_decay_ms:1000", "muzzy_decay_ms:0"] {
            assert!(compiled.split(',').any(|s| s == setting), "{setting} not in {compiled:?}");
        }
        assert!(tikv_jemalloc_ctl::background_thread::read().unwrap());
    }
}
