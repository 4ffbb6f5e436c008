#!/usr/bin/env bash
# Streamed LISTs at the scale of issue 41: tests/e2e/streaming.rs with VERSA_BENCH_STREAM_OBJECTS
# (default 100,000) objects of 2 KiB. Prints the sizes of the JSON and Table answers and how far
# versa's peak RSS grew answering one JSON LIST, one Table LIST and four JSON LISTs at once,
# against the answer's size (target: one LIST < 10 %). A memory measure, so a debug build (the
# default) measures it as well as a release one; PROFILE=release builds both in release.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/versa-target}"
profile="${PROFILE:-dev}"
# The test starts the versa binary next to itself: build it in the same profile.
cargo build --locked --profile "$profile" -p versa
VERSA_STREAM_OBJECTS="${VERSA_BENCH_STREAM_OBJECTS:-100000}" \
  cargo test --locked --profile "$profile" -p versa-e2e --test streaming -- \
  large_lists_are_streamed_whole_in_little_memory --nocapture 2>&1 | grep -E "objects:|grew|test result|panicked"
