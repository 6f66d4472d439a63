"""Fixtures of the cuda kernel tests: the ``xp`` array module each test runs on.

``xp`` is parametrized over:

* ``emulated`` -- the kernels compiled with g++ and run on the CPU by the host emulator
  (``cuda_host_emulator``), through a NumPy stand-in for CuPy. Runs everywhere a C++
  compiler exists, so the kernels' logic, indexing, barriers and argument types are checked
  in CI without a GPU.
* ``cupy`` -- real CuPy on a GPU; marked ``cuda`` and skipped with the runtime's reason when
  CuPy or a device is missing (``pytest -m cuda`` selects exactly these).
"""

from __future__ import annotations

import cuda_host_emulator
import pytest

_BACKENDS = ["emulated", pytest.param("cupy", marks=pytest.mark.cuda)]


@pytest.fixture(scope="session")
def emulated_cupy():
    """The NumPy-backed stand-in for CuPy, with every kernel source prebuilt."""
    if cuda_host_emulator.compiler() is None:
        pytest.skip("no C++ compiler (g++) for the CUDA host emulator")
    from ember.kernels.cuda import modules

    cuda_host_emulator.prebuild([modules.source_text(s) for s in modules.NAME_EXPRESSIONS])
    return cuda_host_emulator.make_fake_cupy()


@pytest.fixture(params=_BACKENDS)
def xp(request, monkeypatch):
    """The array module the cuda kernels run on in this test (CuPy or the emulator's)."""
    from ember.kernels.cuda import runtime

    if request.param == "cupy":
        reason = runtime.unavailable_reason()
        if reason is not None:
            pytest.skip(reason)
        return runtime.cupy_or_error()
    fake = request.getfixturevalue("emulated_cupy")
    monkeypatch.setattr(runtime, "_probe_result", (fake, None))
    return fake
