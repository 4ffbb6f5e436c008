#!/usr/bin/env bash
# Builds the real kube-apiserver and kube-controller-manager (and kubectl of the same release) from the `k8s.io/kubernetes` Go
# module at one pinned release, outside the clone, and prints the directory that holds them.
#
# The tests in tests/e2e/kube.rs run versa behind these binaries: kube is the judge of "exact
# Kubernetes behaviour". Nothing of Kubernetes' source is kept in the repository, only the pin
# below and this script; the Go module proxy serves the source, and the build goes to
#   ${XDG_CACHE_HOME:-~/.cache}/versa-kube/<version>/bin/{kube-apiserver,kube-controller-manager,kubectl}
# with a stamp beside it, so that a second run with the same pin does nothing.
#
# How: `k8s.io/kubernetes` is not meant to be required as a library. Its go.mod replaces every
# `k8s.io/<staging>` module with a directory of its own tree (`./staging/src/k8s.io/...`), which
# the published module zip leaves out. A small module that requires `k8s.io/kubernetes` and
# replaces each of those staging modules with its published `v0.<minor>.<patch>` release builds
# the commands as kube's own tree would. The staging list is read from the pinned go.mod, so a
# new pin brings its own list (1.36 has 33).
#
# Version ldflags are passed as kube's own build does, so that `/version` answers the pin, not
# `v0.0.0-master` (clients and the aggregator compare it).
#
# A cold build took 7 minutes on this project's two-core machines (with a cargo build beside it;
# the module download is about 600 MiB into the Go module cache); a warm one, nothing. Go >= the pin's `go` line (1.26
# for 1.36) is needed: hack/install-deps.sh --kube checks for it and says what is missing.
#
# `hack/kube.sh` builds when needed and prints the bin directory on stdout (progress on stderr).
# VERSA_KUBE_BIN_DIR names a directory with both binaries to use instead (no build).
set -euo pipefail

KUBE_VERSION="${VERSA_KUBE_VERSION:-1.36.3}"

if [ -n "${VERSA_KUBE_BIN_DIR:-}" ]; then
  for b in kube-apiserver kube-controller-manager kubectl; do
    [ -x "$VERSA_KUBE_BIN_DIR/$b" ] || { echo "hack/kube.sh: VERSA_KUBE_BIN_DIR has no $b" >&2; exit 1; }
  done
  echo "$VERSA_KUBE_BIN_DIR"
  exit 0
fi

if ! command -v go >/dev/null 2>&1; then
  echo "hack/kube.sh: the Go toolchain (go >= 1.26) is needed to build kube-apiserver ${KUBE_VERSION}; none is on PATH" >&2
  exit 1
fi

root="${XDG_CACHE_HOME:-$HOME/.cache}/versa-kube/v${KUBE_VERSION}"
bin="$root/bin"
stamp_want="kubernetes v${KUBE_VERSION} $(go env GOVERSION) $(go env GOOS)/$(go env GOARCH)"
if [ -f "$root/stamp" ] && [ "$(cat "$root/stamp")" = "$stamp_want" ] \
  && [ -x "$bin/kube-apiserver" ] && [ -x "$bin/kube-controller-manager" ] && [ -x "$bin/kubectl" ]; then
  echo "$bin"
  exit 0
fi

echo "hack/kube.sh: building kube-apiserver and kube-controller-manager v${KUBE_VERSION} into $bin (a cold build takes 7-15 minutes)" >&2
src="$root/src"
mkdir -p "$src" "$bin"
cd "$src"

# The pinned kubernetes go.mod, for its list of staging modules.
kube_mod="$(go mod download -json "k8s.io/kubernetes@v${KUBE_VERSION}" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')"
[ -f "$kube_mod" ] || { echo "hack/kube.sh: could not download k8s.io/kubernetes@v${KUBE_VERSION}" >&2; exit 1; }
staging="$(sed -n 's|^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/src/k8s.io/.*$|\1|p' "$kube_mod")"
[ -n "$staging" ] || { echo "hack/kube.sh: no staging modules found in $kube_mod" >&2; exit 1; }
go_line="$(sed -n 's/^go \(.*\)$/\1/p' "$kube_mod")"

staging_version="v0.${KUBE_VERSION#1.}"
{
  echo "module versa.test/kube-build"
  echo
  echo "go ${go_line}"
  echo
  echo "godebug default=go${go_line%.*}"
  echo
  echo "require k8s.io/kubernetes v${KUBE_VERSION}"
  echo
  echo "replace ("
  for m in $staging; do echo "	$m => $m $staging_version"; done
  echo ")"
} >go.mod
cat >tools.go <<'EOF'
//go:build tools

// Package tools names the commands this module builds, so that `go mod tidy` keeps their
// dependencies.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
EOF

go mod tidy >&2

major="${KUBE_VERSION%%.*}"
minor="${KUBE_VERSION#*.}"; minor="${minor%%.*}"
ldflags=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X ${pkg}.gitVersion=v${KUBE_VERSION}"
  ldflags+=" -X ${pkg}.gitMajor=${major} -X ${pkg}.gitMinor=${minor}"
  ldflags+=" -X ${pkg}.gitTreeState=clean -X ${pkg}.buildDate=1970-01-01T00:00:00Z"
done

for cmd in kube-apiserver kube-controller-manager kubectl; do
  echo "hack/kube.sh: go build $cmd" >&2
  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w${ldflags}" -o "$bin/$cmd.tmp" "k8s.io/kubernetes/cmd/$cmd" >&2
  mv "$bin/$cmd.tmp" "$bin/$cmd"
done
"$bin/kube-apiserver" --version >&2
echo "$stamp_want" >"$root/stamp"
echo "$bin"
