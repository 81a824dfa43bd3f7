#!/usr/bin/env bash
# Kueue's scheduler-performance binaries, built from Kueue's Go module at a pinned release,
# for benchmarks/side_by_side.py (kuota and Kueue on the same control plane):
#   minimalkueue — Kueue's scheduler and core controllers without webhooks
#   runner       — Kueue's performance-test runner (generator, recorder, finisher)
#   kueuectl     — Kueue's kubectl plugin, which the real tier drives against kuota
#                  (`kuota operator --api kueue`, tests/real/test_real_kueue_api.py)
# Into ${KUOTA_CACHE:-~/.cache/kuota}/kueue/<version>/bin; idempotent, seconds when built.
# Nothing of Kueue is kept in this repository: the module comes from the Go module proxy.
set -euo pipefail
version="${KUEUE_VERSION:-v0.15.0}"
cache="${KUOTA_CACHE:-$HOME/.cache/kuota}/kueue/$version"
bin="$cache/bin"
if [[ -x "$bin/minimalkueue" && -x "$bin/runner" && -x "$bin/kueuectl" ]]; then
  echo "kueue $version: $bin (cached)"
  exit 0
fi
mkdir -p "$cache/src" "$bin"
cd "$cache/src"
cat > go.mod <<MOD
module kuota.dev/kueue-build

go 1.25
MOD
export GOFLAGS=-mod=mod
go get "sigs.k8s.io/kueue@$version"
started=$SECONDS
for pkg in test/performance/scheduler/minimalkueue test/performance/scheduler/runner \
           cmd/kueuectl; do
  name="$(basename "$pkg")"
  [[ -x "$bin/$name" ]] && continue
  go build -o "$bin/$name.tmp" "sigs.k8s.io/kueue/$pkg"
  mv "$bin/$name.tmp" "$bin/$name"
done
echo "kueue $version: built in $((SECONDS - started)) s into $bin"
