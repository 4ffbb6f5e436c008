#!/usr/bin/env bash
# Install time of thousands of distinct definitions (issue 41, target 2): VERSA_BENCH_DEFINITIONS
# (default 2,000) copies of the published CRDs of ../shared/conformance/crds/, each with a group
# and schemas of its own, created by one `kubectl apply --server-side` against a release build of
# versa; prints how long until all are Established and discoverable, and how long `kubectl
# api-resources` and `kubectl explain` take with them loaded (targets: 10 s, 1 s). Not a test:
# numbers vary with the machine. PROFILE=dev measures a debug build.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/versa-target}"
profile="${PROFILE:-release}"
if [ "$profile" = dev ]; then
  cargo build --locked -p versa
else
  cargo build --locked --release -p versa
fi
cargo bench --locked --profile "$profile" -p versa-e2e --bench install 2>/dev/null
