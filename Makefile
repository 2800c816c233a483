# The two promises: `make demo` and `make test` work on a fresh machine.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.torch_neuronx-installed
SOURCES := $(wildcard torch_neuronx/csrc/*.cpp torch_neuronx/csrc/*.h) setup.py pyproject.toml

.PHONY: setup build demo test test-full bench clean docs

setup: $(STAMP)

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

# torch is pinned: an unpinned request would pull a multi-GB CUDA build.
$(STAMP): $(VENV)/bin/python $(SOURCES)
	$(PY) -m pip install -q torch==2.13.0 numpy pytest rich ninja setuptools wheel
	$(PY) -m pip install -q --no-build-isolation -e .
	touch $(STAMP)

build: setup

demo: setup
	$(VENV)/bin/torch-neuronx verify
	$(PY) examples/train_gpt.py --steps 20

test: setup
	$(PY) -m pytest -q -p no:cacheprovider tests

test-full: setup
	TORCH_NEURONX_TEST_FULL=1 $(PY) -m pytest -q -p no:cacheprovider tests

bench: setup
	$(PY) benchmarks/bench_eager.py
	$(PY) benchmarks/bench_compile.py
	$(PY) benchmarks/bench_collectives.py --runs 3

docs: setup
	$(VENV)/bin/torch-neuronx ops --format markdown > docs/ops.md

clean:
	rm -rf build *.egg-info torch_neuronx/_C*.so
