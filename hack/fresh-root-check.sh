#!/usr/bin/env bash
# Proves that hack/install-deps.sh completes a fresh Debian 12 machine, which this machine
# cannot show: here everything is already installed, so install-deps does nothing and a missing
# package goes unnoticed (protoc installed without its include files once broke the etcd-client
# build on fresh machines only).
#
# It builds a minimal Debian 12 root with mmdebstrap (variant "apt": the essential packages and
# apt, so bash and apt-get but nothing the build needs), runs install-deps.sh in it as root, the
# way the README's commands run it on a new machine, and then checks there what the build and the
# tests use:
#
# - protoc compiles etcd's protobuf definitions as etcd-client's build script does (the files
#   its build.rs names, from the version in Cargo.lock, with the arguments prost-build passes),
#   which needs the well-known types such as google/protobuf/descriptor.proto;
# - etcd runs, the time zone database has America/New_York, python3 runs, ip and setpriv run,
#   cc, make and awk run (jemalloc's C build),
#   the pinned helm that `install-deps.sh --helm-path` names runs, and `install-deps.sh --kube`
#   says that Go is missing (the root has none: Go comes with the machine);
# - a second run of install-deps.sh does nothing, as it promises.
#
# The root uses this machine's Debian sources (the bookworm entries apt has configured), shares
# its network, and gets its resolv.conf; where this machine's pip is told to trust a CA bundle
# (PIP_CERT: the network may intercept TLS), the root's pip is given the same bundle, as a file
# of its own, so that no package of the root is stood in for. Nothing else of the host's setup
# enters; the root only gets a policy-rc.d that keeps services from starting (see below).
#
# The base root (before install-deps) is cached as a tarball under
# ${XDG_CACHE_HOME:-~/.cache}/versa-tools/fresh-root/, keyed by the sources and the variant;
# each run unpacks a new copy, so install-deps always starts from the same fresh system, and
# apt-get update inside it brings the package lists up to date. Delete that directory to rebuild
# the base. The unpacked root lives on a tmpfs that is gone when the check ends, whatever its
# result.
#
# Usage: bash hack/fresh-root-check.sh [INSTALL_DEPS_SCRIPT]
# The argument checks another version of install-deps.sh, e.g. the committed one:
#   bash hack/fresh-root-check.sh <(git show HEAD:hack/install-deps.sh)
# Needs root (mmdebstrap and chroot); installs mmdebstrap from Debian when missing.
# The last line of output is the result: `fresh-root-check: ok`, or `fresh-root-check: FAILED: …`
# with the reason; the exit status is non-zero on any failure.
set -euo pipefail

# A path given relative to where the check was started, before moving to the checkout.
install_deps="${1:-}"
case "$install_deps" in
  "") ;;
  /*) ;;
  *) install_deps="$PWD/$install_deps" ;;
esac
cd "$(dirname "$0")/.."
install_deps="${install_deps:-hack/install-deps.sh}"

if [ "$(id -u)" != 0 ]; then
  echo "fresh-root-check: FAILED: needs root (mmdebstrap builds the root and chroot enters it)"
  exit 1
fi
# The check runs in a mount namespace of its own, where the root is unpacked on a tmpfs: the
# namespace ends with the check, however it ends (even killed), and takes the root and every
# mount made for it along, so nothing is left behind and nothing has to be deleted file by
# file (which took half a minute on this machine's disk, as dpkg's syncs took much of
# install-deps' time).
if [ "${_VERSA_FRESH_ROOT_NS:-}" != 1 ]; then
  _VERSA_FRESH_ROOT_NS=1 exec unshare --mount --propagation private -- bash "$0" "$install_deps"
fi

SUITE=bookworm
VARIANT=apt

started=$SECONDS
step="starting"
reported=""
work=""
base_tmp=""

# Prints the result line and exits non-zero.
fail() {
  reported=1
  echo "fresh-root-check: FAILED: $*"
  exit 1
}

# Long steps run as children that finish() can stop, with the signal given first: mmdebstrap
# cleans up after itself on TERM; in_root's unshare ignores TERM while it waits, but when it is
# killed, everything in the root's PID namespace is killed with it.
child=""
child_signal=""
run_child() {
  local rc=0
  child_signal="$1"; shift
  "$@" &
  child=$!
  wait "$child" || rc=$?
  child=""
  return "$rc"
}

# Only the empty mount point is left on the disk to remove; the tmpfs goes with the namespace.
finish() {
  local rc=$?
  trap - INT TERM HUP
  if [ -n "$child" ]; then kill -s "$child_signal" "$child" 2>/dev/null || true; wait "$child" 2>/dev/null || true; fi
  if [ -n "$base_tmp" ]; then rm -f "$base_tmp"; fi
  if [ -n "$work" ]; then umount "$work" 2>/dev/null || umount -l "$work" || true; rmdir "$work" || true; fi
  if [ "$rc" != 0 ] && [ -z "$reported" ]; then
    echo "fresh-root-check: FAILED: while $step (exit status $rc)"
  fi
  exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

note() { echo "fresh-root-check: $*" >&2; }

[ -r "$install_deps" ] || fail "cannot read $install_deps"

step="installing mmdebstrap"
if ! command -v mmdebstrap >/dev/null 2>&1; then
  note "installing mmdebstrap"
  apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q mmdebstrap >/dev/null
fi
command -v mmdebstrap >/dev/null 2>&1 || fail "mmdebstrap is missing and could not be installed"

# The sources as apt itself reads them from /etc/apt/sources.list and sources.list.d, so that
# both file formats count and disabled files do not; only the Debian 12 suites are kept.
step="reading this machine's apt sources"
mirrors="$(apt-get indextargets --format '$(REPO_URI) $(RELEASE) $(COMPONENT)' \
    'Created-By: Packages' 'Target-Of: deb' |
  awk -v s="$SUITE" '$2 == s || $2 == s "-updates" || $2 == s "-security" { print "deb " $0 }' |
  sort -u)"
[ -n "$mirrors" ] || fail "this machine's apt sources have no $SUITE entries to build the root from"
mapfile -t mirror_lines <<<"$mirrors"

# The tmpfs for the root, and for mmdebstrap's work when the base root is built.
step="mounting a tmpfs for the root"
work="$(mktemp -d /tmp/versa-fresh-root.XXXXXX)"
mount -t tmpfs -o mode=755,size=8g fresh-root "$work"

step="building the base root"
cache_dir="${XDG_CACHE_HOME:-$HOME/.cache}/versa-tools/fresh-root"
key="$(printf '%s\n' "$SUITE" "$VARIANT" "$mirrors" | sha256sum | cut -c1-16)"
base="$cache_dir/$SUITE-$VARIANT-$key.tar"
cached=yes
if [ ! -s "$base" ]; then
  cached=no
  note "building the base root ($SUITE, variant $VARIANT) into $base"
  mkdir -p "$cache_dir"
  # Built beside and renamed, so that an interrupted build is never taken for a good base.
  base_tmp="$base.tmp.$$"
  mkdir "$work/mmdebstrap"
  TMPDIR="$work/mmdebstrap" run_child TERM mmdebstrap --variant="$VARIANT" --format=tar "$SUITE" "$base_tmp" "${mirror_lines[@]}" >&2 ||
    fail "mmdebstrap could not build the $SUITE root"
  find "$cache_dir" -maxdepth 1 -name "$SUITE-$VARIANT-*.tar" ! -name "$(basename "$base")" -delete
  mv "$base_tmp" "$base"
  base_tmp=""
fi

step="unpacking the root"
root="$work/root"
mkdir "$root"
tar --numeric-owner -xpf "$base" -C "$root"

# The network is this machine's (the root shares it), so is its name server.
rm -f "$root/etc/resolv.conf"
cat /etc/resolv.conf >"$root/etc/resolv.conf"
# A chroot has no init: a package's service (etcd-server starts etcd) would run in the host's
# network, and could take the ports of an etcd the host's tests are running. Debian's container
# images forbid starting services the same way.
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 755 "$root/usr/sbin/policy-rc.d"
root_env=(HOME=/root USER=root LOGNAME=root LANG=C.UTF-8 SHELL=/bin/bash
  PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)
if [ -n "${PIP_CERT:-}" ]; then
  [ -r "$PIP_CERT" ] || fail "PIP_CERT names $PIP_CERT, which cannot be read"
  mkdir -p "$root/etc/fresh-root-check"
  cp "$PIP_CERT" "$root/etc/fresh-root-check/pip-cert.pem"
  root_env+=(PIP_CERT=/etc/fresh-root-check/pip-cert.pem)
fi

mkdir -p "$root/src/hack"
cp "$install_deps" "$root/src/hack/install-deps.sh"

step="finding etcd-client's protos"
etcd_client_version="$(awk '$0 == "name = \"etcd-client\"" { getline; gsub(/"/, "", $3); print $3; exit }' Cargo.lock)"
[ -n "$etcd_client_version" ] || fail "Cargo.lock has no etcd-client"
find_crate() {
  local d
  for d in "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/"etcd-client-$etcd_client_version"; do
    if [ -f "$d/build.rs" ] && [ -d "$d/proto" ]; then echo "$d"; return 0; fi
  done
  return 1
}
if ! crate="$(find_crate)"; then
  note "fetching the crates (etcd-client $etcd_client_version is not unpacked)"
  cargo fetch --locked >&2
  crate="$(find_crate)" || fail "etcd-client $etcd_client_version is not in cargo's registry after cargo fetch"
fi
mapfile -t protos < <(grep -o '"proto/[^"]*\.proto"' "$crate/build.rs" | tr -d '"')
[ "${#protos[@]}" -gt 0 ] || fail "found no proto files named in $crate/build.rs"
mkdir -p "$root/src/etcd-client"
cp -r "$crate/proto" "$crate/build.rs" "$root/src/etcd-client/"

# Runs a command in the root as its root user, with a login's environment and nothing of ours.
# The new mount namespace keeps /dev and /proc mounted for the root only, and the new PID
# namespace ends whatever the command leaves running when it returns.
in_root() {
  run_child KILL unshare --mount --propagation private --pid --fork --kill-child -- /bin/sh -ec '
    r=$1; shift
    mount --rbind /dev "$r/dev"
    mount -t proc proc "$r/proc"
    exec chroot "$r" /usr/bin/env -i "$@"' sh "$root" "${root_env[@]}" "$@"
}

step="running install-deps.sh in the root"
note "running $install_deps in a fresh $SUITE root (base root cached: $cached)"
t0=$SECONDS
in_root /bin/bash /src/hack/install-deps.sh >&2 || fail "install-deps.sh failed in the fresh root"
note "install-deps.sh took $((SECONDS - t0)) s"

# Every check below runs even when one fails, so that the result names all that is missing.
step="checking the root"
failures=()
check() {
  local what="$1"; shift
  if in_root "$@" >&2; then note "ok: $what"; else note "FAILED: $what"; failures+=("$what"); fi
}

# First, before `install-deps.sh --helm-path` below could install what the plain run left out.
check "a second run of install-deps.sh does nothing" /bin/sh -ec '
  out="$(bash /src/hack/install-deps.sh 2>&1)"
  [ -z "$out" ] || { printf "%s\n" "$out"; exit 1; }'
check "protoc compiles etcd-client $etcd_client_version's protos (${#protos[@]} files and their imports)" \
  /bin/sh -ec 'cd /src/etcd-client; protoc --version
    protoc --include_imports --include_source_info -o /tmp/etcd.fds -I proto "$@"' sh "${protos[@]}"
check "etcd runs" /bin/sh -ec 'v="$(etcd --version)"; printf "%s\n" "$v" | head -n 1'
check "/usr/share/zoneinfo/America/New_York exists" test -f /usr/share/zoneinfo/America/New_York
check "python3 runs" python3 --version
check "ip and setpriv run (the tests behind kube-apiserver)" /bin/sh -ec 'ip -V; setpriv --version'
check "cc, make and awk run (jemalloc's build)" /bin/sh -ec 'cc --version | head -n 1; make --version | head -n 1; echo | awk "{}"'
check "install-deps.sh --kube names the missing Go" /bin/sh -ec '
  if command -v go >/dev/null 2>&1; then bash /src/hack/install-deps.sh --kube; exit; fi
  if out="$(bash /src/hack/install-deps.sh --kube 2>&1)"; then echo "no Go, yet --kube passed"; exit 1; fi
  printf "%s\n" "$out" | grep -q "Go >= "' 
check "helm runs" /bin/sh -ec 'helm="$(bash /src/hack/install-deps.sh --helm-path)"; "$helm" version --short'

if [ "${#failures[@]}" -gt 0 ]; then
  reasons="$(printf '%s; ' "${failures[@]}")"
  fail "not so in the fresh root: ${reasons%; } (base root cached: $cached, $((SECONDS - started)) s)"
fi
reported=1
echo "fresh-root-check: ok (base root cached: $cached, $((SECONDS - started)) s)"
