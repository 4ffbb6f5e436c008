#!/usr/bin/env bash
# Garbage collector benchmark (issue 37): standalone versa with 100,000 dependents of 1,000
# owners, every owner deleted; prints the time until every dependent is gone and the p50/p99 of
# other clients' writes meanwhile beside the same writes without deletions (same run). Not a
# test: numbers vary with the machine and its load. Environment (tests/e2e/bench_gc.rs):
#   VERSA_BENCH_GC_OWNERS      owners (default 1000)
#   VERSA_BENCH_GC_DEPENDENTS  dependents, spread evenly over the owners (default 100000)
#   VERSA_BENCH_GC_WRITERS     other clients' connections (default 4)
#   VERSA_BENCH_GC_SECONDS     seconds of writes measured without deletions (default 10)
#   VERSA_BENCH_GC_POLICY      the owners' propagationPolicy (default Background)
# e.g. `VERSA_BENCH_GC_DEPENDENTS=10000 VERSA_BENCH_GC_OWNERS=100 hack/bench-gc.sh` for a quick
# look; PROFILE=dev measures a debug build.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/versa-target}"
profile="${PROFILE:-bench}"
# The benchmark starts the versa binary next to itself: build it in the same profile.
if [ "$profile" = dev ]; then
  cargo build --locked -p versa
else
  cargo build --locked --release -p versa
fi
cargo bench --locked --profile "$profile" -p versa-e2e --bench gc 2>/dev/null
