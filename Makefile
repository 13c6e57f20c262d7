# The two commands a new user needs: `make run` and `make test`. Both set everything up.
# While working: `make test-fast` (the suite less its slow tests), `make test-slow` (only those) and
# `make check` (ruff, mypy).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
TORCH_PIN := torch==2.13.0
# Installs say nothing unless they fail: `-q -q` hides pip's WARNING lines too (a pip config
# naming an index folder that is missing warns per package) and setuptools' editable-install
# warning, which pip logs at WARNING; errors still print.
PIP_INSTALL := -m pip install -q -q

.PHONY: run test test-fast test-slow check clean realworld fix-realworld sweep-score reach-score reach-run-deps

# Silent (`@`), so that `make run` prints the findings first on a fresh clone.
$(BIN)/python:
	@$(PYTHON) -m venv $(VENV)
	@$(BIN)/python $(PIP_INSTALL) --upgrade pip

$(VENV)/.installed: $(BIN)/python pyproject.toml
	@$(BIN)/python $(PIP_INSTALL) -e .
	@touch $@

$(VENV)/.dev-installed: $(BIN)/python pyproject.toml
	$(BIN)/python $(PIP_INSTALL) -e ".[dev,verify]" "$(TORCH_PIN)"
	touch $@ $(VENV)/.installed

# Lint the bundled examples, then show the diff --fix would apply. Findings (exit 1) are
# the point here; only a usage or internal error (exit 2) fails the target.
run: $(VENV)/.installed
	@$(BIN)/compile-lint examples/; status=$$?; [ $$status -le 1 ]
	@echo
	@echo "--- what 'compile-lint --fix --unsafe-fixes examples/' would change:"
	@$(BIN)/compile-lint --diff --unsafe-fixes examples/; status=$$?; [ $$status -le 1 ]

# The whole suite, over all cores with pytest-xdist (CI runs it: .ci/run).
test: $(VENV)/.dev-installed
	$(BIN)/python -m pytest -n auto

# The quick lane while working: the suite less its tests marked slow (the real compiler end to
# end, pip and pre-commit installs, whole real files), over all cores.
test-fast: $(VENV)/.dev-installed
	$(BIN)/python -m pytest -m "not slow" -n auto

# The calibration lane: only the tests marked slow (the real compiler, installs, real files).
test-slow: $(VENV)/.dev-installed
	$(BIN)/python -m pytest -m slow -n auto

# The project's own lint and type check: ruff over the repository (pyproject.toml [tool.ruff]),
# then mypy over compile_lint/ ([tool.mypy]); both run, and the target fails if either fails.
# CI runs it (.ci/run), so a finding fails CI.
check: $(VENV)/.dev-installed
	@status=0; $(BIN)/ruff check || status=1; $(BIN)/mypy compile_lint || status=1; exit $$status

clean:
	rm -rf $(VENV) .pytest_cache .compile-lint-cache .ruff_cache .mypy_cache

# Real-world calibration: compile-lint against torch.compile on transformers, timm and
# diffusers models (benchmarks/README.md). ARGS="--limit 5" or ARGS="--models timm/resnet18".
$(VENV)/.realworld-installed: $(VENV)/.dev-installed
	$(BIN)/python $(PIP_INSTALL) -e ".[verify,realworld]" "$(TORCH_PIN)"
	touch $@

realworld: $(VENV)/.realworld-installed
	$(BIN)/python benchmarks/realworld.py $(ARGS)

# Proof of --fix on real models (benchmarks/README.md): fixes copies of transformers, timm and
# diffusers, then runs every pinned model whose forward runs a fixed line on the original and
# the fixed libraries. ARGS="--models timm/resnet18" or ARGS="--select ALL".
fix-realworld: $(VENV)/.realworld-installed
	$(BIN)/python benchmarks/fix_realworld.py $(ARGS)

# Architecture sweep (benchmarks/README.md, "Architecture sweep"): score compile-lint against
# the committed ground truth without running a model. ARGS="--codes JIT101" or ARGS="--out PREFIX".
sweep-score: $(VENV)/.realworld-installed
	$(BIN)/python benchmarks/sweep_score.py $(ARGS)

# Reach corpus (benchmarks/README.md, "Reach corpus"): score compile-lint's cross-file reach against
# the committed ground truth of real libraries laid out across files, without running a model.
# Linting needs only the libraries' sources: the pinned `reach` extra goes in with --no-deps.
# ARGS="--out benchmarks/results/reach_score" or ARGS="--libraries whisper,kokoro".
REACH_PINS = $$($(BIN)/python -c 'import tomllib; print(" ".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["reach"]))')

$(VENV)/.reach-installed: $(VENV)/.dev-installed pyproject.toml
	$(BIN)/python $(PIP_INSTALL) --no-deps $(REACH_PINS)
	touch $@

reach-score: $(VENV)/.reach-installed
	$(BIN)/python benchmarks/reach_score.py $(ARGS)

# What re-measuring it needs (benchmarks/reach_run.py builds and compiles the models).
reach-run-deps: $(VENV)/.reach-installed
	$(BIN)/python $(PIP_INSTALL) -e ".[dev,verify,reach-run]" "$(TORCH_PIN)"
