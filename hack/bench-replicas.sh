#!/usr/bin/env bash
# Replicas benchmark (issue 22): a real etcd and two real `versa serve --storage etcd` replicas.
# Prints the p50/p99/max of definition propagation (1,000 definitions loaded; created through
# one replica, until the other serves it) and of cross-replica watch latency (written through
# one, until the other's watch delivers it). Not a test: numbers vary with the machine and its
# load. Needs etcd (hack/install-deps.sh installs it). PROFILE=dev measures a debug build.
# With --watch-cache: three replicas, one etcd, WATCHERS client watches (1,000) and 8 writers,
# with the watch cache and without (tests/e2e/bench_watch_cache.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/versa-target}"
profile="${PROFILE:-bench}"
bash hack/install-deps.sh
# The benchmark starts the versa binary next to itself: build it in the same profile.
if [ "$profile" = dev ]; then
  cargo build --locked -p versa
else
  cargo build --locked --release -p versa
fi
bench=replicas
[ "${1:-}" = --watch-cache ] && bench=watch_cache
cargo bench --locked --profile "$profile" -p versa-e2e --bench "$bench" 2>/dev/null
