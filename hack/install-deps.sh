#!/usr/bin/env bash
# Installs what building and testing versa needs beyond the Rust toolchain, from Debian's
# packages: protoc (etcd-client compiles etcd's protobuf definitions at build time) and etcd
# (the etcd backend's tests start a real one). Idempotent: does nothing when both are present.
# An etcd elsewhere can be used instead by setting VERSA_ETCD_BIN.
set -euo pipefail

need=()
command -v protoc >/dev/null 2>&1 || need+=(protobuf-compiler)
if [ -z "${VERSA_ETCD_BIN:-}" ] && ! command -v etcd >/dev/null 2>&1; then
  need+=(etcd-server)
fi
[ ${#need[@]} -eq 0 ] && exit 0

sudo=()
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then sudo=(sudo); else
    echo "hack/install-deps.sh: need root (or sudo) to install: ${need[*]}" >&2
    exit 1
  fi
fi
echo "hack/install-deps.sh: installing ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -q >/dev/null || true
"${sudo[@]}" apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null
