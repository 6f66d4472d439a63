"""Benchmarks: pytest-benchmark modules (bench_*.py). Run them all with `python bench/run.py`.

Convention: every benchmark sets ``benchmark.group`` (the kernel and size) and
``benchmark.extra_info["impl"]`` (ember-cpu, ember-reference, numpy, torch, native, numba...),
so that run.py can print ratios between implementations measured side by side in one run.
"""

import os
import sys

# ember's cpu default (see ember/kernels/threads.py), set before PyTorch's OpenMP runtime loads
# so that a torch import in a benchmark module cannot fix the policy for ember's kernels too.
os.environ.setdefault("OMP_WAIT_POLICY", "passive")
# and ember's OpenBLAS setting (see ember/__init__.py), which NumPy reads when it loads
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "10")

sys.path.insert(0, os.path.dirname(__file__))
