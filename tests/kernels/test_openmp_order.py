"""An OpenMP runtime loaded before ember (``import torch`` first brings PyTorch's libgomp) reads
no ``OMP_WAIT_POLICY`` and spins after every parallel region. ember then binds Numba's OpenMP layer
to a runtime of its own where the loader gives one (PyTorch's libgomp is another file than the
system's), else runs its Numba kernels on the workqueue layer (launches serialised, so threads
calling ember at once do not abort it), and leaves its C++ OpenMP kernels aside; loaded after
``import ember``, the runtime is passive."""

from __future__ import annotations

import ctypes.util
import json
import os
import subprocess
import sys

import pytest

_GOMP = ctypes.util.find_library("gomp")

_PROBE = """
import ctypes, json, os, sys, threading, time
if {preload!r}:
    ctypes.CDLL({gomp!r}, mode=ctypes.RTLD_GLOBAL)
if {torch_first!r}:
    import torch
import numpy as np
import ember, numba
from ember.kernels import threads
x = np.random.default_rng(0).standard_normal((512, 300)).astype(np.float32)
want = ember.softmax(ember.tensor(x, device="reference"), 1).numpy()
errors = []
def work():
    try:
        for _ in range(30):
            got = ember.softmax(ember.tensor(x), 1).numpy()
            assert np.allclose(got, want, rtol=1e-5, atol=1e-7)
    except Exception as exc:
        errors.append(repr(exc))
workers = [threading.Thread(target=work) for _ in range(3)]
[w.start() for w in workers]
[w.join() for w in workers]
# CPU time burnt in one second after a kernel: a spinning runtime's threads show up here
start = time.process_time()
ember.softmax(ember.tensor(x), 1).numpy()
time.sleep(1.0)
print("RESULT " + json.dumps({{
    "idle_cpu_s": time.process_time() - start,
    "runtimes": sorted(threads.openmp_runtimes()),
    "spinning": threads.SPINNING_OPENMP,
    "layer": numba.threading_layer(),
    "native": ember.Device("cpu").backend._native,
    "policy": os.environ.get("OMP_WAIT_POLICY"),
    "errors": errors,
}}))
"""


def _probe(preload: bool, torch_first: bool = False, **env) -> dict:
    full_env = {**os.environ, "EMBER_BACKGROUND_COMPILE": "0", **env}
    for name in ("OMP_WAIT_POLICY", "NUMBA_THREADING_LAYER"):
        if name not in env:
            full_env.pop(name, None)
    code = _PROBE.format(preload=preload, gomp=_GOMP, torch_first=torch_first)
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=full_env, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))
    return json.loads(line[len("RESULT ") :])


def test_import_sets_a_passive_policy_and_stays_light():
    code = "import os, sys, ember; print(os.environ.get('OMP_WAIT_POLICY'), 'numba' in sys.modules)"
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.split() == ["passive", "False"]


needs_gomp = pytest.mark.skipif(_GOMP is None, reason="no libgomp to load before ember")


@needs_gomp
def test_a_runtime_loaded_first_moves_the_kernels_off_openmp():
    got = _probe(preload=True)
    assert got["spinning"] is True
    assert got["layer"] == "workqueue"
    assert got["native"] is False
    assert got["errors"] == []  # three threads at once: serialised launches, same results


@needs_gomp
def test_a_policy_set_by_the_user_keeps_openmp():
    got = _probe(preload=True, OMP_WAIT_POLICY="passive")
    assert got["spinning"] is False and got["policy"] == "passive"
    assert got["layer"] != "workqueue" or os.environ.get("NUMBA_THREADING_LAYER") == "workqueue"
    assert got["errors"] == []


@needs_gomp
def test_a_threading_layer_set_by_the_user_wins():
    got = _probe(preload=True, NUMBA_THREADING_LAYER="omp")
    assert got["spinning"] is True and got["layer"] == "omp" and got["errors"] == []


def test_nothing_loaded_first_keeps_numbas_choice():
    got = _probe(preload=False)
    assert got["spinning"] is False and got["policy"] == "passive" and got["errors"] == []


def test_pytorch_imported_first_gets_numba_a_passive_runtime_of_its_own():
    pytest.importorskip("torch")
    got = _probe(preload=False, torch_first=True)
    assert got["spinning"] is True and got["native"] is False
    assert len(got["runtimes"]) == 2, got["runtimes"]  # PyTorch's libgomp and Numba's own
    assert got["layer"] == "omp"
    assert got["idle_cpu_s"] < 0.2  # no thread spins while ember waits
    assert got["errors"] == []  # three threads at once, same results


def test_a_layer_ember_chose_in_a_parent_process_is_chosen_anew():
    # a child of a process that imported PyTorch first inherits ember's choice, marked as such;
    # with nothing loaded before ember here, Numba's own choice applies again
    got = _probe(
        preload=False, NUMBA_THREADING_LAYER="workqueue", EMBER_CHOSE_NUMBA_THREADING_LAYER="workqueue"
    )
    assert got["spinning"] is False and got["layer"] != "workqueue" and got["errors"] == []
