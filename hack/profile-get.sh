#!/usr/bin/env bash
# Instructions and allocations per GET (and per LIST of 1,000) of versa and of the bare
# hyper+rustls server, counted by callgrind on a fixed number of requests (the serve bench's
# `profile` scenario, `crates/versa-server/benches/serve/profile.rs`). Unlike the throughput
# ratios these do not move with the machine's load: judge changes to the hot path on them.
# Slow (valgrind): a few minutes. Environment: VERSA_BENCH_REQUESTS (GETs, default 1000),
# VERSA_BENCH_LIST_REQUESTS (LISTs, default 20; 0: none). Keeps the profiles in
# $VERSA_PROFILE_DIR (default a temporary directory) for `callgrind_annotate`.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/versa-target}"
cargo bench --locked -p versa-server --bench serve --no-run
bench="$(ls -t "$CARGO_TARGET_DIR"/release/deps/serve-* | grep -v '\.d$' | head -1)"
out="${VERSA_PROFILE_DIR:-$(mktemp -d)}"
mkdir -p "$out"
cd crates/versa-server
valgrind --tool=callgrind --callgrind-out-file="$out/callgrind.out.%p" \
    --dump-before='*profile_start*' --dump-after='*profile_stop*' \
    "$bench" --bench profile 2>"$out/valgrind.log" | tee "$out/bench.log"
# Two profiles per run: what came before it, then the run (the `k`th run printed is dump 2k).
requests="${VERSA_BENCH_REQUESTS:-1000}"
lists="${VERSA_BENCH_LIST_REQUESTS:-20}"
echo
echo "| run | instructions per request | allocations per request | reallocations per request |"
echo "|---|---:|---:|---:|"
grep '^run ' "$out/bench.log" | while read -r _ n rest; do
    n="${n%:}"
    file="$(ls "$out"/callgrind.out.*."$((2 * n))")"
    count="$requests"
    case "$rest" in *LIST*) count="$lists" ;; esac
    # Ir from the summary; allocations are calls of the global allocator's entry points.
    awk -v count="$count" -v run="$rest" '
        /^summary:/ { ir = $2 }
        /^c?fn=/ {
            split($0, a, "=")
            id = a[2]; name = id
            if (match(id, /^\([0-9]+\) /)) { name = substr(id, RLENGTH + 1); id = substr(id, 1, RLENGTH - 1); names[id] = name }
            else if (id in names) name = names[id]
            if ($0 ~ /^cfn=/) callee = name
        }
        /^calls=/ {
            split(substr($0, 7), c, " ")
            if (callee ~ /(^|::)__rust_(alloc|alloc_zeroed)$/) allocs += c[1]
            if (callee ~ /(^|::)__rust_realloc$/) reallocs += c[1]
        }
        END { printf "| %s | %.0f | %.1f | %.1f |\n", run, ir / count, allocs / count, reallocs / count }
    ' "$file"
done
echo "(profiles in $out)"
