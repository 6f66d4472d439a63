# Two commands for a fresh machine (see README): `make demo` and `make test`.
# Both create the virtual environment $(VENV) and install ember into it first.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: demo test install bench lint format clean

$(PY):
	$(PYTHON) -m venv $(VENV)

# Installs ember, then compiles its cpu kernels into the on-disk cache (a minute at most, once
# per version) so that the first training step starts at once.
install: $(PY)
	$(PY) -m pip install -e ".[test,text,train,examples,distributed]"
	$(PY) -m ember.precompile

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
