#!/usr/bin/env bash
# kube-apiserver and versa side by side (issue 34): the published CRDs of
# ../shared/conformance/crds installed as CRDs in the real kube-apiserver and as versa definitions
# behind it, in the same run; prints memory per definition, the time until all are served, and
# CREATE/GET/LIST latency through kube for each, with their ratios (tests/e2e/bench_kube.rs).
# Needs what the tests behind kube-apiserver need (root, Go for hack/kube.sh). Not a test:
# numbers vary with the machine. PROFILE=dev measures a debug build of versa.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/versa-target}"
profile="${PROFILE:-release}"
bash hack/install-deps.sh
bash hack/install-deps.sh --kube
VERSA_HELM_BIN="$(bash hack/install-deps.sh --helm-path)"
VERSA_KUBE_BIN_DIR="$(bash hack/kube.sh)"
export VERSA_HELM_BIN VERSA_KUBE_BIN_DIR
if [ "$profile" = dev ]; then
  cargo build --locked -p versa
else
  cargo build --locked --release -p versa
fi
cargo bench --locked --profile "$profile" -p versa-e2e --bench kube 2>/dev/null
