#!/usr/bin/env bash
# The project's test command (the README's, and what CI runs through .ci/run).
#
# Installs what the tests need that a fresh machine may lack, then runs every test of the
# workspace. Build artefacts go to a target directory outside the clone, so that repeated runs
# on the same machine (and CI after a developer session) reuse them.
set -euo pipefail

cd "$(dirname "$0")/.."

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/versa-target}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

if [ ! -d ../shared/conformance ]; then
  echo "hack/test.sh: ../shared/conformance is missing; the conformance suites need shared/ beside the checkout" >&2
  exit 2
fi

# protoc (for etcd-client), etcd (for the etcd backend's tests), iproute2 and util-linux (for
# the tests behind kube-apiserver), from Debian if missing;
# helm (for the chart's tests) and kopf (for the kopf operator's test), pinned, into a cache
# directory.
bash hack/install-deps.sh
VERSA_HELM_BIN="$(bash hack/install-deps.sh --helm-path)"
VERSA_KOPF_PYTHONPATH="$(bash hack/install-deps.sh --kopf-path)"
export VERSA_HELM_BIN VERSA_KOPF_PYTHONPATH

# The real kube-apiserver, kube-controller-manager and kubectl for tests/e2e/kube.rs, built from
# the pinned k8s.io/kubernetes Go module into a cache outside the clone (a cold build takes about
# 7 minutes here; a warm one returns at once).
bash hack/install-deps.sh --kube
bash hack/install-deps.sh --go-modules
VERSA_KUBE_BIN_DIR="$(bash hack/kube.sh)"
export VERSA_KUBE_BIN_DIR

# Doc-tests are left out (the crates keep examples in tests/); a summary line closes the run.
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
set +e
cargo test --workspace --locked --lib --bins --tests "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
passed=$(grep -Eo 'test result: [a-zA-Z]+\. [0-9]+ passed' "$log" | awk '{s+=$4} END {print s+0}')
failed=$(grep -Eo '[0-9]+ failed;' "$log" | awk '{s+=$1} END {print s+0}')
echo
echo "workspace: ${passed} passed, ${failed} failed"
exit "$status"
