"""On AVX-512 CPUs ember asks LLVM for 512-bit vectors (its tuning otherwise stays at 256 bits),
through ``NUMBA_CPU_FEATURES``; a target the user chose (``NUMBA_CPU_NAME`` or
``NUMBA_CPU_FEATURES``) is left alone, and the kernel-cache marker follows the features."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("numba")

_PROBE = """
import json, os
import llvmlite.binding as llvm
from ember.kernels.cpu import background_compile, jit, vector_ir
print("RESULT " + json.dumps({
    "features": os.environ.get("NUMBA_CPU_FEATURES"),
    "host_avx512": "+avx512f" in llvm.get_host_cpu_features().flatten().split(","),
    "vector_bytes": vector_ir.VECTOR_BYTES,
    "fingerprint": background_compile.fingerprint(),
}))
"""


def _probe(**env_changes) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CPU_FEATURES", "NUMBA_CPU_NAME")}
    env.update(env_changes)
    run = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    line = next(line for line in run.stdout.splitlines() if line.startswith("RESULT "))
    return json.loads(line[len("RESULT ") :])


def test_avx512_hosts_get_512_bit_vectors():
    got = _probe()
    if got["host_avx512"]:
        assert got["features"].endswith(",-prefer-256-bit")
        assert "+avx512f" in got["features"].split(",")
        assert got["vector_bytes"] == 64
    else:
        assert got["features"] is None
        assert got["vector_bytes"] in (16, 32)


def test_a_target_the_user_chose_is_left_alone_and_changes_the_cache_marker():
    default = _probe()
    chosen = _probe(NUMBA_CPU_FEATURES="+sse2,+sse4.1")
    assert chosen["features"] == "+sse2,+sse4.1"
    assert chosen["vector_bytes"] == 16  # the micro-kernel follows the features Numba compiles for
    assert chosen["fingerprint"] != default["fingerprint"]
    assert _probe(NUMBA_CPU_NAME="generic")["features"] is None
