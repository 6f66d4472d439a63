"""The backend contract states itself: op families, primitives, composites, one fallback.

Every backend meets it (each primitive implemented, composites overridden only with ``@fused``
and with the composite's parameters, no method the contract lacks, no ``__getattr__``), and a
backend that misses a method or overrides one that does not exist is caught.
"""

from __future__ import annotations

import numpy as np
import pytest

from ember.kernels import backend as contract
from ember.kernels.backend import DECLINED, Backend, contract_violations, fused
from ember.kernels.cpu.backend import CpuBackend
from ember.kernels.cuda.backend import CudaBackend  # importable without CuPy or a GPU
from ember.kernels.reference import ArrayBackend, ReferenceBackend

BACKENDS = (ReferenceBackend, CpuBackend, CudaBackend)


@pytest.mark.parametrize("backend_class", BACKENDS, ids=lambda c: c.__name__)
def test_every_backend_meets_the_contract(backend_class):
    assert contract_violations(backend_class) == []


def test_the_contract_is_the_families_and_nothing_resolves_late():
    assert not any("__getattr__" in vars(klass) for klass in Backend.__mro__)
    declared = set(contract.PRIMITIVES) | set(contract.COMPOSITE_NAMES)
    from_families = {
        name
        for family in contract.FAMILIES
        for name, attr in vars(family).items()
        if not name.startswith("_") and callable(attr)
    }
    assert from_families == declared
    assert not set(contract.PRIMITIVES) & set(contract.COMPOSITE_NAMES)
    for name in declared:  # each method documented once, in its family
        assert getattr(Backend, name).__doc__, f"{name} has no docstring in its family"


def test_a_backend_missing_a_primitive_is_caught():
    del_name = "cumsum"

    class Missing(Backend):  # implements everything but one primitive, as a new backend might
        pass

    for name in contract.PRIMITIVES:
        if name != del_name:
            setattr(Missing, name, getattr(ArrayBackend, name))
    assert contract_violations(Missing) == [f"Missing does not implement the primitive {del_name!r}"]
    with pytest.raises(NotImplementedError, match="does not implement the primitive 'cumsum'"):
        Missing().cumsum(np.zeros(3), 0)


def test_an_override_the_contract_does_not_have_is_caught():
    with pytest.raises(TypeError, match="no composite of that name"):

        class Typo(ReferenceBackend):
            @fused
            def layernorm(self, x, gamma, beta, eps):  # (layer_norm)
                return DECLINED

    class Extra(ReferenceBackend):
        def layernorm(self, x, gamma, beta, eps):
            return x

    class Plain(ReferenceBackend):
        def softmax(self, x):  # a composite overridden without @fused: no fallback
            return x

    class Reordered(ReferenceBackend):
        @fused
        def softmax_backward(self, dy, y):
            return DECLINED

    assert contract_violations(Extra) == ["Extra.layernorm is not a method of the backend contract"]
    assert contract_violations(Plain) == ["Plain.softmax overrides a composite without @fused"]
    assert contract_violations(Reordered) == [
        "Reordered.softmax_backward takes ('self', 'dy', 'y'), the contract ('self', 'y', 'dy')"
    ]


class _Declining(ReferenceBackend):
    """Declines float64 rows, fuses the rest with a marker value; counts its calls."""

    calls = 0

    @fused(half=True)
    def softmax(self, x):
        type(self).calls += 1
        assert x.dtype != np.float16, "half=True: the kernel sees float32"
        return DECLINED if x.dtype == np.float64 else np.full(x.shape, 7.0, x.dtype)


def test_a_declined_input_runs_the_family_default_with_its_float16_rule():
    backend = _Declining(seed=0)
    x64 = np.array([[0.0, np.log(3.0)]])
    np.testing.assert_allclose(backend.softmax(x64), [[0.25, 0.75]])  # the default
    assert backend.softmax(x64.astype(np.float32)).tolist() == [[7.0, 7.0]]  # the kernel
    half = backend.softmax(np.array([[300.0, 300.0]], np.float16))
    assert half.dtype == np.float16 and half.tolist() == [[7.0, 7.0]]
    assert _Declining.calls == 3


def test_the_float16_rule_of_a_default_is_stated_once_and_applies_on_every_backend():
    reference = ReferenceBackend(seed=0)
    x = np.array([[300.0, 300.0]], np.float16)  # x² overflows float16: computed in float32
    y, mean, rstd = reference.layer_norm(x, None, None, 1e-5)
    assert y.dtype == np.float16 and mean.dtype == np.float32 and rstd.dtype == np.float32
    assert np.isfinite(rstd).all()
    assert contract.COMPOSITES["layer_norm"].half == (1, 2)


def test_kernels_not_ready_run_the_default():
    class Compiling(ReferenceBackend):
        def kernels_ready(self, array, kernel=None):
            assert kernel == "gelu"  # the fused method asks about its own kernel
            return False

        @fused
        def gelu(self, x, approximate):
            raise AssertionError("the kernel ran before it was ready")

    x = np.linspace(-3, 3, 7)
    np.testing.assert_allclose(
        Compiling(seed=0).gelu(x, True), ReferenceBackend(seed=0).gelu(x, True), rtol=1e-12
    )
