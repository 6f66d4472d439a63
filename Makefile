# Two commands for a fresh machine (see README): `make demo` and `make test`.
# Both create the virtual environment $(VENV) and install ember into it the first time, then
# again only when pyproject.toml, setup.py or the C++ sources change (`make -B install` forces it).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: demo test install bench lint format clean

# What `pip install -e` builds from: the package metadata and the C++ extension's sources.
INSTALL_INPUTS := pyproject.toml setup.py $(wildcard csrc/*.cpp csrc/*.hpp)
# Stamps in the venv: a fresh venv (.ci/run's .venv-ci, after `make clean`) has none, so it
# installs everything; later runs skip pip until an input above changes.
INSTALLED := $(VENV)/.ember-installed
PRECOMPILED := $(VENV)/.ember-precompiled
TUNED := $(VENV)/.ember-tuned

$(PY):
	$(PYTHON) -m venv $(VENV)

$(INSTALLED): $(INSTALL_INPUTS) | $(PY)
	$(PY) -m pip install -e ".[test,text,train,examples,distributed,interop]"
	touch $@

# Compiles the cpu kernels into the on-disk cache (a minute at most) so that the first
# training step starts at once; again only when the kernels or the install change (the cache
# is keyed by the kernel sources and Numba's version; a cache emptied meanwhile refills in
# the background on first use).
$(PRECOMPILED): $(INSTALLED) $(wildcard ember/kernels/cpu/*.py)
	$(PY) -m ember.precompile
	touch $@

# Tunes the cpu kernels for the performance table's two models into the autotune cache
# (seconds), so that their first steps measure nothing; again after a new precompile.
$(TUNED): $(PRECOMPILED) $(wildcard ember/kernels/autotune/*.py)
	$(PY) -m ember.autotune --model agnews --model dbpedia
	touch $@

install: $(TUNED)

demo: install
	$(PY) examples/text_classification/demo.py

test: install
	$(PY) -m pytest

# Lint and format with ruff (configured in pyproject.toml); `make test` checks both too.
lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: install
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

bench: install
	$(PY) bench/run.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .benchmarks
