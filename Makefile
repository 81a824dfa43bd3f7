# kuota — the two commands a newcomer needs are `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# Two stamps: the demo's (kuota and what it runs on: no Kubernetes client, no development
# tools; ~15 s from nothing) and the full one (`make test`, `make setup`: the `kubernetes`
# and `dev` extras too), so `make test` after `make demo` upgrades the same virtualenv.
STAMP      := $(VENV)/.installed
DEMO_STAMP := $(VENV)/.installed-demo

.PHONY: demo test test-fast test-slow test-real cluster-bins helm-bin controllers sandbox lint bench crds clean setup image

setup: $(STAMP)

$(VENV)/bin/pip:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(VENV)/bin/pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP) $(DEMO_STAMP)

# (a full install that is current holds the demo's: nothing to install then)
$(DEMO_STAMP): pyproject.toml | $(VENV)/bin/pip
	test $(STAMP) -nt pyproject.toml || $(BIN)/pip install --quiet -e .
	touch $(DEMO_STAMP)

demo: $(DEMO_STAMP)
	$(BIN)/kuota demo

# The whole suite: the fast tier (emulator, Redis) and the real tier (tests/real, marked
# `cluster`: a real control plane per pinned Kubernetes version, skipped when its binaries
# are not built; `make cluster-bins` builds them). loadgroup keeps each control plane's
# tests on one worker.
test: $(STAMP) lint
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup tests

test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -n 2 -m 'not slow and not cluster' tests

# The slow-marked checks, which `make test` leaves out: the 1,000-job chaos run and the two
# raw-record fuzzes. CI runs them after the suite with KUOTA_FUZZ_EXAMPLES=300 (a few
# minutes); unset, each fuzz runs its 10,000 examples (the pool one about an hour and a half).
test-slow: $(STAMP)
	$(BIN)/python -m pytest -q -n 2 -m slow tests

test-real: $(STAMP) cluster-bins
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup -m cluster tests/real

# etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and kwok built from
# Go modules into ~/.cache/kuota (KUOTA_CACHE); idempotent, cold 20-45 min per version.
cluster-bins:
	bash hack/cluster/build-bins.sh

# kuota on a local Kubernetes control plane with kwok nodes (hack/sandbox/sandbox.py): builds
# or reuses the binaries (cluster-bins, helm-bin), installs the chart, runs the operator out of
# cluster, prints `export KUBECONFIG=...`; Ctrl-C stops it all. ~30-60 s with the binaries
# built. SANDBOX_ARGS: e.g. --version v1.34.4, --workdir DIR, --ready-file PATH.
sandbox: $(STAMP)
	$(BIN)/python hack/sandbox/sandbox.py $(SANDBOX_ARGS)

# helm built from its Go module into ~/.cache/kuota/helm (KUOTA_CACHE), for the chart's
# tests (tests/packaging/test_helm_chart.py, tests/real/test_real_helm.py); cold ~2 min.
helm-bin:
	bash hack/helm/build-helm.sh

# The peer controllers the real tier runs beside kuota (JobSet, ...; hack/controllers/versions.sh)
# built from their Go modules into ~/.cache/kuota/controllers (KUOTA_CACHE), with their CRDs,
# webhook and RBAC manifests; idempotent, cold ~1.5-3 min each (JobSet, the Kubeflow training and
# MPI operators, KubeRay, LeaderWorkerSet, Kubeflow Trainer v2), one after the other.
controllers:
	bash hack/controllers/build-controllers.sh

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/mypy quota queueing admission placement multicluster kuota
	$(BIN)/kuota crds --check manifests/crds --docs docs/reference/api.md
	$(BIN)/kuota crds --check charts/kuota/crds
	$(BIN)/kuota crds --kueue --check manifests/kueue
	$(BIN)/kuota crds --kueue --check charts/kuota/kueue

bench: $(STAMP)
	$(BIN)/python benchmarks/simulate_kueue_baseline.py

# The CRDs are generated from the API models into both places that ship them: the
# kustomize manifests and the Helm chart (whose crds/ Helm installs before the rest).
crds: $(STAMP)
	$(BIN)/kuota crds --write manifests/crds --docs docs/reference/api.md
	$(BIN)/kuota crds --write charts/kuota/crds
	$(BIN)/kuota crds --kueue --write manifests/kueue
	$(BIN)/kuota crds --kueue --write charts/kuota/kueue

# The container image (needs a Docker engine); the manifests name kuota:<version>.
IMAGE ?= kuota:$(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)
image:
	docker build -t $(IMAGE) .

clean:
	rm -rf $(VENV) build *.egg-info
