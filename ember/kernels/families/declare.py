"""How the backend contract declares its methods, and the one fallback of every fused kernel.

Each method of an op family (the classes of :mod:`ember.kernels.families`) is one of:

* a **primitive** (``@primitive``): every backend implements it; the family only documents it;
* a **composite** (``@composite``): the family's default, composed from primitives, is the
  behaviour every backend must give; ``half`` says how it treats float16 (computed in float32,
  the results at the given positions — saved statistics — kept float32);
* a backend's **fused** override of a composite (``@fused``, in the backend's own files). The
  fused method may return :data:`DECLINED` for an input its kernel cannot take (a dtype, a
  layout, a size past its limits, kernels still compiling); the family's default then runs,
  with its float16 rule. That is the only fallback: no backend writes its own.

A ``@fused`` override of a name the contract does not declare as a composite fails at import,
and ``tests/kernels/test_backend_interface.py`` fails when a backend misses a primitive or
defines a public method the contract does not have.
"""

from __future__ import annotations

import functools
import inspect

import numpy as np

from ember.core import dtypes as dt

__all__ = [
    "COMPOSITES",
    "DECLINED",
    "PRIMITIVE_NAMES",
    "composite",
    "fused",
    "fused_call",
    "primitive",
    "role_of",
]


class _Declined:
    """The type of :data:`DECLINED`."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "DECLINED"


DECLINED = _Declined()
"""What a fused kernel returns for an input it does not take: the family's default runs instead."""

PRIMITIVE_NAMES: list[str] = []
"""The primitives, in declaration order (filled as the families are defined)."""

COMPOSITES: dict[str, object] = {}
"""Each composite's default, float16 rule applied, by name (filled as the families are defined)."""


def primitive(method):
    """Declare a primitive: the family states its signature and meaning; every backend defines it."""
    name = method.__name__

    @functools.wraps(method)
    def missing(self, *args, **kwargs):
        raise NotImplementedError(f"backend {self.name!r} does not implement the primitive {name!r}")

    missing.contract_role = "primitive"
    PRIMITIVE_NAMES.append(name)
    return missing


def composite(method=None, *, half: tuple | None = None):
    """Declare a composite with its default ``method``, composed from primitives.

    ``half``: float16 inputs are computed in float32 and the results given back in float16,
    except those at these positions of a tuple result (saved statistics, int64 rows), which
    stay float32 — half-precision squares, exponentials and sums would overflow or round away.
    ``None``: float16 is computed as given.
    """

    def declare(method):
        run = method if half is None else half_via_single(half)(method)
        run.contract_role = "composite"
        run.half = half
        if method.__name__ in COMPOSITES:
            raise TypeError(f"composite {method.__name__!r} is declared twice in the backend contract")
        COMPOSITES[method.__name__] = run
        return run

    return declare if method is None else declare(method)


def fused(method=None, *, half: bool = False, ready_arg: int | None = 0, accepts=None):
    """Mark a backend's fused override of the composite of the same name.

    ``half``: the kernel takes float32/float64 only, so float16 inputs run through it in
    float32 under the composite's own float16 rule. ``ready_arg``: the positional argument whose
    dtype must have its kernels ready (:meth:`~ember.kernels.families.creation.CreationOps.kernels_ready`)
    before the kernel runs (``None``: the method decides itself). ``accepts``: when given, a
    test of the first argument (what the kernel takes: dtypes, launch limits); the method
    declines an input that fails it. Returning :data:`DECLINED`, or kernels not ready, runs the
    composite's default.
    """

    def mark(method):
        name = method.__name__
        default = COMPOSITES.get(name)
        if default is None:
            raise TypeError(
                f"@fused {name!r}: the backend contract has no composite of that name "
                f"(composites: {', '.join(sorted(COMPOSITES))})"
            )
        stats = default.half
        if half and stats is None:
            raise TypeError(f"@fused(half=True) {name!r}: the composite has no float16 rule to follow")
        if accepts is not None:
            method = _declining(accepts, method)
        kernel = half_via_single(stats)(method) if half else method

        @functools.wraps(method)
        def run(self, *args, **kwargs):
            if ready_arg is None or self.kernels_ready(_argument(args, kwargs, ready_arg), name):
                out = kernel(self, *args, **kwargs)
                if out is not DECLINED:
                    return out
            return default(self, *args, **kwargs)

        run.contract_role = "fused"
        run.kernel = method
        return run

    return mark if method is None else mark(method)


def fused_call(function, *, half: bool = False, accepts=None):
    """The ``@fused`` override that calls ``function``, the backend module's entry point of the
    composite of the same name, with the method's arguments (``half`` as for :func:`fused`).

    ``accepts``: as for :func:`fused` (the kernel's launch limits, say).
    """

    def method(self, *args, **kwargs):
        return function(*args, **kwargs)

    method.__name__ = method.__qualname__ = function.__name__
    method.__doc__ = function.__doc__
    signature = inspect.signature(function)
    self_parameter = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    method.__signature__ = signature.replace(parameters=[self_parameter, *signature.parameters.values()])
    return fused(method, half=half, accepts=accepts)


def _declining(accepts, method):
    """``method``, returning :data:`DECLINED` for a first argument that fails ``accepts``."""

    @functools.wraps(method)
    def checked(self, *args, **kwargs):
        if not accepts(_argument(args, kwargs, 0)):
            return DECLINED
        return method(self, *args, **kwargs)

    return checked


def _argument(args, kwargs, index):
    if len(args) > index:
        return args[index]
    return next(iter(kwargs.values()), None)


def half_via_single(stats: tuple = ()):
    """Run a method on float16 arrays in float32 and give float16 back, except the results at
    positions ``stats`` of a tuple result, which stay float32 (or wider, as a kernel made them).
    Other dtypes pass through, and so does :data:`DECLINED`. Works on the backend's array
    module (``self.xp``: NumPy, or CuPy), or on its ``_array_type`` (PyTorch tensors)."""

    def decorate(method):
        @functools.wraps(method)
        def run(self, *args, **kwargs):
            # a backend whose arrays are not NumPy-like names their class and float16 dtype
            array = getattr(self, "_array_type", None) or getattr(self, "xp", np).ndarray
            half = getattr(self, "_float16", np.float16)
            if not any(isinstance(a, array) and a.dtype == half for a in args):
                return method(self, *args, **kwargs)
            args = [self.cast(a, dt.float32) if isinstance(a, array) and a.dtype == half else a for a in args]
            out = method(self, *args, **kwargs)
            if out is DECLINED:
                return out
            if isinstance(out, tuple):
                return tuple(
                    o if o is None or i in stats else self.cast(o, dt.float16) for i, o in enumerate(out)
                )
            return self.cast(out, dt.float16)

        return run

    return decorate


def role_of(cls, name: str) -> str | None:
    """``"primitive"``, ``"composite"`` or ``"fused"``: how ``cls`` defines ``name`` (None: not
    a contract method)."""
    attr = getattr(cls, name, None)
    return getattr(attr, "contract_role", None)
