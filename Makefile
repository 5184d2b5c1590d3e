# Two entry points, both idempotent: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PLUGINS := embeddings_local embeddings_openai prism sandbox_docker models_openai
STAMP  := $(VENV)/.installed

.PHONY: setup demo test bench bench-env

$(STAMP): pyproject.toml $(wildcard plugins/*/pyproject.toml) Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check -e '.[test]' $(foreach p,$(PLUGINS),-e plugins/$(p))
	touch $@

## setup: create .venv with clawcore, every plugin and the test tools
setup: $(STAMP)

## demo: the main job on the embedded defaults, in a throwaway home
demo: setup
	$(BIN)/clawcore --home .demo-home demo

## test: the whole test suite; a private Podman engine runs for the docker sandbox
## tests and is stopped afterwards (without one they skip, except under CI=true)
test: setup
	scripts/podman-service run -- $(BIN)/python -m pytest -q

## bench: the benchmarks in bench/ (tables, not tests)
bench: setup
	$(BIN)/python bench/run_all.py

## bench-env: the separate .bench-venv with the peers (txtai, LanceDB, LangChain, bm25s) for bench/peers.py
bench-env:
	PYTHON=$(PYTHON) bench/setup
