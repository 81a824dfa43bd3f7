#!/usr/bin/env bash
# Build the peer controllers kuota's real test tier runs beside it (JobSet, the
# Kubeflow training and MPI operators, KubeRay, LeaderWorkerSet, Kubeflow Trainer v2; see versions.sh), from their Go modules, into a cache outside the repository:
#
#   $KUOTA_CACHE/controllers/<name>/<version>/bin/manager     the controller manager
#   $KUOTA_CACHE/controllers/<name>/<version>/crds/*.yaml     its CRDs, as released
#   $KUOTA_CACHE/controllers/<name>/<version>/webhook/        its webhook kustomization
#   $KUOTA_CACHE/controllers/<name>/<version>/rbac/           its ServiceAccount and RBAC kustomization
#   $KUOTA_CACHE/controllers/<name>/<version>/module.json     what was built (go mod download -json)
#   $KUOTA_CACHE/controllers/<name>/<version>/src/go.mod      the wrapper module it was built in
#
# KUOTA_CACHE defaults to ~/.cache/kuota. A build that is already complete (its
# .complete stamp exists) is skipped, so running this again takes a second; an
# incomplete one is started again from scratch. Progress goes to the terminal (a
# line every 30 s), the full log to <version>/build.log.
#
# Why from the module: the controllers' images and release manifests live on
# registries CI need not reach; the Go module proxy serves each release tag, and a
# wrapper module requiring only that release builds exactly the dependency versions
# of the release's go.mod, checked against the checksum database. The CRDs and webhook
# configurations are copied from the same module, so they always match the binary.
# Nothing of the controllers is kept in this repository.
#
# Usage: hack/controllers/build-controllers.sh [NAME...]   (default: every entry of versions.sh)
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=versions.sh
. "$here/versions.sh"
cache="${KUOTA_CACHE:-$HOME/.cache/kuota}"

export CGO_ENABLED=0 GOFLAGS=-mod=mod GOTOOLCHAIN=local
command -v go >/dev/null || { echo "build-controllers: go is not on PATH (Go >= 1.26 is needed)" >&2; exit 1; }

# Run a long build step, printing a progress line every 30 s (packages compiled
# so far) so CI logs show it is alive. As hack/cluster/build-bins.sh's, but it
# looks every second, so a warm build is not held up to the next 30 s mark.
run_logged() {
  local log="$1"; shift
  local start=$SECONDS last=$SECONDS
  ( "$@" ) >>"$log" 2>&1 &
  local pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    kill -0 "$pid" 2>/dev/null || break
    [ $((SECONDS - last)) -ge 30 ] || continue
    last=$SECONDS
    echo "  ... $((SECONDS - start)) s, $(grep -c '^[a-z]' "$log" || true) log lines ($(tail -n 1 "$log" | cut -c1-80))"
  done
  if ! wait "$pid"; then
    echo "build-controllers: failed; last lines of $log:" >&2
    tail -n 40 "$log" >&2
    return 1
  fi
}

# A JSON string field of `go mod download -json` output (the first one of that name).
json_field() {
  sed -n 's/^\s*"'"$2"'": "\(.*\)",\{0,1\}$/\1/p' "$1" | head -n 1
}

# Copy a directory out of the module cache (read-only there) so it can be removed later.
copy_tree() {
  cp -r "$1" "$2"
  chmod -R u+w "$2"
}

# keep_manifests MODULE-DIR FROM INTO: keep the module's manifests FROM in INTO (webhook/,
# rbac/) for kubectl kustomize. FROM is a kustomize directory (copied as it is), or a
# directory without a kustomization, or a comma-separated list of YAML files (copied, with
# a kustomization listing them written beside: some releases list their RBAC files only in
# a kustomization that also holds their Deployment and CRDs).
keep_manifests() {
  local src="$1" from="$2" into="$3" file
  local -a files=()
  if [ -d "$src/$from" ] && [ -f "$src/$from/kustomization.yaml" ]; then
    copy_tree "$src/$from" "$into"
    return
  fi
  if [ -d "$src/$from" ]; then
    for file in "$src/$from"/*.yaml; do
      [ -f "$file" ] && files+=("$file")
    done
  else
    local IFS=,
    for file in $from; do
      [ -f "$src/$file" ] || { echo "build-controllers: no $file in the module" >&2; return 1; }
      files+=("$src/$file")
    done
  fi
  [ ${#files[@]} -gt 0 ] || { echo "build-controllers: no YAML in $from" >&2; return 1; }
  mkdir -p "$into"
  {
    echo "# Written by hack/controllers/build-controllers.sh: the release's $from"
    echo "apiVersion: kustomize.config.k8s.io/v1beta1"
    echo "kind: Kustomization"
    echo "resources:"
    for file in "${files[@]}"; do
      cp "$file" "$into/"
      echo "- $(basename "$file")"
    done
  } >"$into/kustomization.yaml"
  chmod -R u+w "$into"
}

# build NAME MODULE VERSION MAIN CRDS [crd-exclude=FILE,...] [webhook=DIR] [rbac=DIR|FILE,...]
#       [version-var=PKG.VAR] [commit-var=PKG.VAR]
build() {
  local name="$1" module="$2" v="$3" main="$4" crds="$5"
  shift 5
  local webhook="" rbac="" version_var="" commit_var="" crd_exclude="" option
  for option in "$@"; do
    case "$option" in
      crd-exclude=*) crd_exclude="${option#crd-exclude=}" ;;
      webhook=*) webhook="${option#webhook=}" ;;
      rbac=*) rbac="${option#rbac=}" ;;
      version-var=*) version_var="${option#version-var=}" ;;
      commit-var=*) commit_var="${option#commit-var=}" ;;
      *) echo "build-controllers: $name: unknown option '$option' in versions.sh" >&2; exit 1 ;;
    esac
  done
  local dir="$cache/controllers/$name/$v"
  if [ -f "$dir/.complete" ]; then
    echo "$name $v: already built in $dir/bin"
    return
  fi
  echo "$name $v: building into $dir/bin (log: $dir/build.log)"
  rm -rf "$dir"
  mkdir -p "$dir/bin" "$dir/crds"
  local log="$dir/build.log"
  : >"$log"
  local started=$SECONDS

  echo "  downloading $module@$v ..."
  if ! go mod download -json "$module@$v" >"$dir/module.json" 2>>"$log"; then
    echo "build-controllers: could not download $module@$v from the Go module proxy:" >&2
    cat "$dir/module.json" "$log" >&2
    exit 1
  fi
  local src modfile commit
  src="$(json_field "$dir/module.json" Dir)"
  modfile="$(json_field "$dir/module.json" GoMod)"
  commit="$(json_field "$dir/module.json" Hash)"
  [ -d "$src" ] && [ -f "$modfile" ] || { echo "build-controllers: $module@$v: no Dir/GoMod in $dir/module.json" >&2; exit 1; }

  # GOTOOLCHAIN=local: a module asking for a newer Go than the installed one fails
  # here with a clear message instead of a toolchain download or a cryptic error.
  local needed have
  needed="$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$modfile")"
  have="$(go env GOVERSION | sed 's/^go//')"
  if [ -n "$needed" ] && [ "$(printf '%s\n%s\n' "$needed" "$have" | sort -V | tail -n 1)" != "$have" ]; then
    echo "build-controllers: $module@$v needs Go $needed (its go.mod's go directive); the local toolchain is $have" >&2
    exit 1
  fi

  # The CRDs: every CRD YAML of a directory (not its kustomization, less the crd-exclude
  # ones), or one YAML file.
  local crd_count=0 crd
  if [ -f "$src/$crds" ]; then
    cp "$src/$crds" "$dir/crds/"
    crd_count=1
  else
    for crd in "$src/$crds"/*.yaml; do
      [ -f "$crd" ] || continue
      grep -q '^kind: CustomResourceDefinition' "$crd" || continue
      [[ ",$crd_exclude," == *",$(basename "$crd"),"* ]] && continue
      cp "$crd" "$dir/crds/"
      crd_count=$((crd_count + 1))
    done
  fi
  [ "$crd_count" -gt 0 ] || { echo "build-controllers: $module@$v has no CRD YAML in $crds" >&2; exit 1; }
  chmod u+w "$dir/crds"/*.yaml
  local kept
  for kept in "webhook=$webhook" "rbac=$rbac"; do
    local into="${kept%%=*}" from="${kept#*=}"
    [ -n "$from" ] || continue
    if [ "$into" = webhook ] && [ ! -f "$src/$from/kustomization.yaml" ]; then
      echo "build-controllers: $module@$v has no kustomization in $from" >&2
      exit 1
    fi
    keep_manifests "$src" "$from" "$dir/$into" || { echo "build-controllers: $module@$v: could not keep $into from $from" >&2; exit 1; }
  done

  # The version the manager reports in its log, stamped as its own Makefile does.
  local ldflags="-s -w"
  [ -z "$version_var" ] || ldflags+=" -X $version_var=$v"
  [ -z "$commit_var" ] || ldflags+=" -X $commit_var=$commit"
  local pkg="$module"
  [ "$main" = "." ] || pkg="$module/$main"
  # A wrapper module requiring only the release: its build list is the release's own
  # go.mod (minimal version selection adds nothing), and the go.sum entries are checked
  # against the checksum database. Not `go install pkg@version`: that also asks the
  # proxy for the module's version list (for deprecation notices), which is refused
  # where only exact versions are served.
  mkdir -p "$dir/src"
  {
    echo "// Generated by hack/controllers/build-controllers.sh: builds $name $v."
    echo "module kuota.dev/controllers/$name"
    echo
    echo "go $needed"
    echo
    echo "require $module $v"
  } >"$dir/src/go.mod"
  echo "  compiling $pkg (Go $needed module, toolchain $have) ..."
  run_logged "$log" bash -c "cd '$dir/src' && go build -v -trimpath -ldflags '$ldflags' \
    -o '$dir/bin/manager.tmp' '$pkg'"
  mv "$dir/bin/manager.tmp" "$dir/bin/manager"
  touch "$dir/.complete"
  echo "$name $v: built in $((SECONDS - started)) s: bin/manager, $crd_count CRD(s)${webhook:+, webhook}${rbac:+, rbac}"
}

wanted=("$@")
found=0
for entry in "${KUOTA_CONTROLLERS[@]}"; do
  read -r -a fields <<<"$entry"
  [ ${#fields[@]} -ge 5 ] || { echo "build-controllers: malformed entry in versions.sh: '$entry'" >&2; exit 1; }
  if [ ${#wanted[@]} -gt 0 ] && [[ ! " ${wanted[*]} " == *" ${fields[0]} "* ]]; then
    continue
  fi
  found=$((found + 1))
  build "${fields[@]}"
done
if [ ${#wanted[@]} -gt 0 ] && [ "$found" -ne ${#wanted[@]} ]; then
  echo "build-controllers: not every one of '${wanted[*]}' is in hack/controllers/versions.sh" >&2
  exit 1
fi
