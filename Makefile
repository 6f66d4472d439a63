# Two commands for a fresh machine (see README): `make demo` and `make test`.
# Both create the virtual environment $(VENV) and install ember into it first.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: demo test install bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)

install: $(PY)
	$(PY) -m pip install -e ".[test,text,train,examples]"

demo: install
	$(PY) examples/text_classification/demo.py

test: install
	$(PY) -m pytest

bench: install
	$(PY) bench/run.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .benchmarks
