#!/usr/bin/env bash
# The README's run command: builds versa (installing protoc first if missing, which the etcd
# client needs at build time) and starts `versa serve` with embedded storage in ./versa-data.
# Extra arguments go to `versa serve` (see `versa serve --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/versa-target}"
bash hack/install-deps.sh
cargo build --locked --release -p versa
exec "$CARGO_TARGET_DIR/release/versa" serve "$@"
