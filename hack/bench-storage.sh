#!/usr/bin/env bash
# Storage benchmarks: the embedded store against bare redb, and the etcd store against a bare
# etcd-client, each measured in the same run and printed as ratios. Not a test: numbers vary with
# the machine's disk (fsync) and load. Needs etcd (hack/install-deps.sh installs it).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/versa-target}"
bash hack/install-deps.sh
echo "## embedded (redb)"
cargo bench --locked -p versa-storage-embedded --bench embedded 2>/dev/null
echo
echo "## embedded backups"
cargo bench --locked -p versa-storage-embedded --bench backup 2>/dev/null
echo
echo "## encryption at rest"
cargo bench --locked -p versa-storage-encryption --bench encryption 2>/dev/null
echo
echo "## etcd"
cargo bench --locked -p versa-storage-etcd --bench etcd 2>/dev/null
