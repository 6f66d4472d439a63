"""Benchmarks: pytest-benchmark modules (bench_*.py). Run them all with `python bench/run.py`.

Convention: every benchmark sets ``benchmark.group`` (the kernel and size) and
``benchmark.extra_info["impl"]`` (ember-cpu, ember-reference, numpy, torch, native, numba...),
so that run.py can print ratios between implementations measured side by side in one run.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
