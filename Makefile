# The two promises: `make demo` and `make test` work on a fresh machine.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.torch_neuronx-installed
CSRC_FILES := $(shell find torch_neuronx/csrc -name '*.cpp' -o -name '*.h')
SOURCES := $(CSRC_FILES) setup.py pyproject.toml
# The exact torch of pyproject.toml's dependencies (the reason is written there); the two must
# be equal, and tests/device/test_package.py checks that they are. An unpinned request would
# also pull a multi-GB CUDA build.
TORCH_PIN := torch==2.13.0
# `make build DEBUG=1`: the driver with debug information (-g); without it, none (issue 27:
# debug information made the driver's build ~1.4x slower). setup.py reads the variable.
DEBUG ?= 0

.PHONY: setup build demo test test-full lint coverage bench clean docs evaluate-deps evaluate-browser

setup: $(STAMP)

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

# torch and the build tools first: setup.py imports torch to compile the driver, and
# --no-build-isolation builds against the torch installed here. The extras bring the test,
# CLI and lint dependencies (pyproject.toml lists them once).
# setup.py compiles in build/ninja, so a rebuild compiles only the changed translation units.
define install_driver
	$(PY) -m pip install -q $(TORCH_PIN) ninja "setuptools>=77" wheel
	TORCH_NEURONX_DEBUG_BUILD=$(DEBUG) $(PY) -m pip install -q --no-build-isolation -e ".[test,cli,lint]"
	touch $(STAMP)
endef

$(STAMP): $(VENV)/bin/python $(SOURCES)
	$(install_driver)

# Always rebuilds (incrementally): `make build DEBUG=1` adds debug information, `make build`
# takes it out again.
build: $(VENV)/bin/python
	$(install_driver)

demo: setup
	$(VENV)/bin/torch-neuronx verify
	$(PY) examples/train_gpt.py --steps 20

# The suite on TEST_JOBS pytest-xdist workers (README, "Build time": the 2-core CI machine runs
# it in about half the time, one worker per core); `make test TEST_JOBS=0` runs it in one
# process. loadfile keeps each file's tests in order on one worker (tests/conftest.py also keeps
# compile/ and evaluate/ whole, as they share a session's compile cache and evaluate runs).
TEST_JOBS ?= 2
PYTEST := $(PY) -m pytest -q -p no:cacheprovider -n $(TEST_JOBS) --dist loadfile

test: setup
	$(PYTEST) tests

test-full: setup
	TORCH_NEURONX_TEST_FULL=1 $(PYTEST) tests

# Python: ruff's rules and formatting (configured in pyproject.toml); C++: clang-format
# (.clang-format). Reports only: nothing is rewritten.
lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/clang-format --dry-run -Werror $(CSRC_FILES)

# The full differential OpInfo sweep (every sample of every OpInfo: long) -> docs/coverage.md.
coverage: setup
	$(PY) -m torch_neuronx.tools.coverage_sweep

bench: setup
	$(PY) benchmarks/bench_eager.py
	$(PY) benchmarks/bench_compile.py
	$(PY) benchmarks/bench_collectives.py --runs 3

docs: setup
	$(VENV)/bin/torch-neuronx ops --format markdown > docs/ops.md

# `torch-neuronx evaluate`: the report's plots (the `report` extra) and a Hugging Face
# transformers model for its end-to-end tests (pinned: a release known to work with TORCH_PIN).
evaluate-deps: setup
	$(PY) -m pip install -q --no-build-isolation -e ".[report]" transformers==5.23.0

# A real browser for the HTML report's test: Debian's chromium and its driver, driven by Selenium.
evaluate-browser: setup
	apt-get install -y -q chromium chromium-driver
	$(PY) -m pip install -q selenium

clean:
	rm -rf build *.egg-info torch_neuronx/_C*.so
