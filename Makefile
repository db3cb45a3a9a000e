# orch: the two fresh-machine commands are `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
ORCH := $(VENV)/bin/orch
COMMIT ?= 0c1e57098
BACKEND ?= auto
CUDA_ARCH ?=

.PHONY: install build test test-unit demo clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e '.[test]'
	@# Ray (`orch run --executor ray` and its tests) where a wheel exists; orch and the rest of the tests without it.
	$(VENV)/bin/pip install --quiet -e '.[ray]' || echo "make: Ray not installed: --executor ray and its tests are skipped"
	touch $@

install: $(VENV)/.installed  ## create .venv with orch, its test extra and (where it installs) the ray extra

build: install  ## build llama.cpp: make build COMMIT=x [BACKEND=auto|cpu|cuda] [CUDA_ARCH=86]
	$(ORCH) build $(COMMIT) --backend $(BACKEND) $(if $(CUDA_ARCH),--cuda-arch '$(CUDA_ARCH)')

test: install  ## import direction (lint-imports), then the whole suite, real llama.cpp builds included
	$(VENV)/bin/lint-imports
	$(VENV)/bin/pytest -ra

demo: build  ## the main job: build, tiny models, recipes A and B, then their one table read back from DuckDB
	$(ORCH) models tiny
	$(ORCH) run recipes/recipe_a.j2 --build $(COMMIT) --vars recipes/tiny.toml --no-summary
	$(ORCH) run recipes/recipe_b.j2 --build $(COMMIT) --vars recipes/tiny_single.toml --no-summary
	@echo; echo "== recipes A and B on the tiny models, from results.duckdb =="
	$(ORCH) summary --last 2

test-unit: install  ## import direction, then only the tests that start no process
	$(VENV)/bin/lint-imports
	$(VENV)/bin/pytest -ra -m 'not integration'

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache
