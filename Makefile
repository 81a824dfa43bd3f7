# kuota — the two commands a newcomer needs are `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test lint bench crds clean setup

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/kuota demo

test: $(STAMP) lint
	$(BIN)/python -m pytest -q -n 2 tests

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/mypy quota queueing admission placement multicluster kuota
	$(BIN)/kuota crds --check manifests/crds --docs docs/reference/api.md

bench: $(STAMP)
	$(BIN)/python benchmarks/simulate_kueue_baseline.py

crds: $(STAMP)
	$(BIN)/kuota crds --write manifests/crds --docs docs/reference/api.md

clean:
	rm -rf $(VENV) build *.egg-info
