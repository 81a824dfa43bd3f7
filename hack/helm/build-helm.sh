#!/usr/bin/env bash
# Build the helm client kuota's chart tests use, from its Go module, into a
# cache outside the repository:
#
#   $KUOTA_CACHE/helm/<version>/bin/helm
#
# KUOTA_CACHE defaults to ~/.cache/kuota. A build that is already complete (its
# .complete stamp exists) is skipped, so running this again takes milliseconds.
# A cold build takes a few minutes on 2 cores (helm and its Kubernetes client
# libraries); the full log goes to <version>/build.log.
#
# Why build it: helm's release archives live on get.helm.sh, which CI need not
# reach; the Go module proxy serves helm.sh/helm/v3 at every release tag, and
# `go install` checks it against the checksum database.
#
# Usage: hack/helm/build-helm.sh [HELM_VERSION]   (default: the pinned one)
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=version.sh
. "$here/version.sh"
cache="${KUOTA_CACHE:-$HOME/.cache/kuota}"
v="${1:-$KUOTA_HELM_VERSION}"
dir="$cache/helm/$v"

if [ -f "$dir/.complete" ]; then
  echo "helm $v: already built in $dir/bin"
  exit 0
fi

export CGO_ENABLED=0 GOFLAGS=-mod=mod GOTOOLCHAIN=local
command -v go >/dev/null || { echo "build-helm: go is not on PATH (Go >= 1.26 is needed)" >&2; exit 1; }

echo "helm $v: building into $dir/bin (log: $dir/build.log)"
mkdir -p "$dir/bin"
log="$dir/build.log"
: >"$log"
started=$SECONDS
# Stamped as helm's own Makefile does: its version (`helm version`), and the Kubernetes
# version `helm template` and `helm lint` assume without a cluster — the minor of the
# client-go it is built with (unstamped, it would be 1.20 and fail kubeVersion checks).
modfile="$(go mod download -json "helm.sh/helm/v3@$v" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
[ -f "$modfile" ] || { echo "build-helm: could not download helm.sh/helm/v3@$v" >&2; exit 1; }
k8s_minor="$(sed -n 's#^\s*k8s.io/client-go v0\.\([0-9]*\)\..*#\1#p' "$modfile")"
[ -n "$k8s_minor" ] || { echo "build-helm: no k8s.io/client-go in $modfile" >&2; exit 1; }
ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$v"
ldflags+=" -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
  ldflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$k8s_minor"
done
if ! GOBIN="$dir/bin" go install -trimpath -ldflags "$ldflags" "helm.sh/helm/v3/cmd/helm@$v" >>"$log" 2>&1; then
  echo "build-helm: go install failed; last lines of $log:" >&2
  tail -n 40 "$log" >&2
  exit 1
fi
"$dir/bin/helm" version >>"$log" 2>&1
touch "$dir/.complete"
echo "helm $v: built in $((SECONDS - started)) s: $("$dir/bin/helm" version --short)"
