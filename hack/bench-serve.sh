#!/usr/bin/env bash
# Serving benchmarks: versa-server in-process over HTTPS on loopback — GET, CREATE and LIST of
# 1,000 objects, each next to a bare hyper+rustls server measured in the same run — the cost
# of many definitions (RSS per definition, time until a burst of them is discoverable, time for
# a new one to be Established and discoverable; also many in one group), LISTs converted by None and by a webhook, what the seed's CEL rules add to
# an update, what a server-side apply costs next to a merge patch of the same change, and what a
# validating webhook and a ValidatingAdmissionPolicy add to a create, what RBAC adds to a GET and a LIST (100 roles, 1,000 bindings) next to system:masters, and a create of a Secret encrypted at rest next to one that is not. Not a test: numbers vary with the machine and its load; ratios less so.
#
# Arguments pick scenarios: definitions, get, create, list, conversion, cel, apply, admission, rbac, encryption (default: all),
# and million (only when named: a million objects of one definition — paginated LIST, a watch,
# RSS as they are created, a storage migration of them all; minutes), and profile (only when
# named: fixed request counts for callgrind; `hack/profile-get.sh` runs it). Environment:
#   VERSA_BENCH_SECONDS      measured seconds per server and throughput scenario (default 5)
#   VERSA_BENCH_WARMUP       warm-up seconds before each (default 1)
#   VERSA_BENCH_ROUNDS       rounds alternating versa and the bare server (default 5)
#   VERSA_BENCH_CONNECTIONS  client connections for GET and CREATE (default 16)
#   VERSA_BENCH_DEFINITIONS  definitions loaded in the definitions scenario (default 1000)
#   VERSA_BENCH_GROUP_DEFINITIONS  definitions loaded into one single group (default 1000)
#   VERSA_BENCH_OBJECTS      objects stored in the million scenario (default 1000000)
# e.g. `VERSA_BENCH_SECONDS=1 hack/bench-serve.sh get list` for a quick look.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/versa-target}"
cargo bench --locked -p versa-server --bench serve -- "$@"
