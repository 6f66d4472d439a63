"""Kernel sources, their template instantiations, and compiled-module caching.

Each ``kernels/<name>.cu`` file is compiled with ``common.cuh`` prepended, by
``cupy.RawModule`` (NVRTC), once per (device, source, variant) and cached in memory (CuPy
also caches the binary on disk); a variant is the element type, and for attention the element
type and padded head dimension. :data:`NAME_EXPRESSIONS` lists, for every source and
variant, the template instantiations to compile; wrappers fetch kernels with
:func:`kernel`, which builds the name expression with the same :func:`name_expr` formatter so
the two can never disagree.
"""

from __future__ import annotations

import threading
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from ember.kernels.cuda.runtime import cupy_or_error

__all__ = [
    "ATTENTION_DPADS",
    "COMPILE_OPTIONS",
    "INLINE_SOURCES",
    "KERNEL_DIR",
    "NAME_EXPRESSIONS",
    "acc_dtype",
    "acc_scalar",
    "attention_variant",
    "clear_cache",
    "ctype_of",
    "index_ctype_of",
    "kernel",
    "kernel_text",
    "name_expr",
    "register",
    "source_text",
]

KERNEL_DIR = Path(__file__).resolve().parent / "kernels"
COMPILE_OPTIONS = ("-std=c++17",)

_FLOAT_CTYPES = {
    np.dtype(np.float32): "float",
    np.dtype(np.float64): "double",
    np.dtype(np.float16): "ember_half",
}
_INDEX_CTYPES = {np.dtype(np.int64): "long long", np.dtype(np.int32): "int"}
_BOOLS = ("true", "false")
_INDEX = ("long long", "int")
#: Attention kernels are specialised on Dh rounded up to one of these.
ATTENTION_DPADS = (32, 64, 128)


def name_expr(name: str, *targs: object) -> str:
    """The C++ name expression ``name<a, b, ...>`` (just ``name`` without arguments).

    Args:
        name: kernel name.
        *targs: template arguments (C type names, ``"true"``/``"false"``, integers).
    """
    if not targs:
        return name
    return f"{name}<{', '.join(str(a) for a in targs)}>"


def attention_variant(ctype: str, dpad: int) -> str:
    """Module variant key of the attention kernels for one element type and padded Dh.

    Args:
        ctype: element C type.
        dpad: Dh rounded up to a member of :data:`ATTENTION_DPADS`.
    """
    return f"{ctype}/d{dpad}"


def _names(t: str) -> dict[str, dict[str, tuple[str, ...]]]:
    """Name expressions of every source for element C type ``t``, by module variant."""
    sum_partials = (name_expr("sum_partials", t),)
    index_check = tuple(name_expr("index_check", i) for i in _INDEX)
    optim_states = {"float": ("float",), "double": ("double",), "ember_half": ("float", "ember_half")}[t]
    per_type = {
        "softmax.cu": tuple(
            name_expr(k, t, w, lg) for k in ("softmax_fwd", "softmax_bwd") for w in _BOOLS for lg in _BOOLS
        ),
        "norms.cu": tuple(
            name_expr(k, t, w)
            for k in ("layer_norm_fwd", "layer_norm_bwd", "rms_norm_fwd", "rms_norm_bwd")
            for w in _BOOLS
        )
        + tuple(name_expr("norm_param_grad", t, r) for r in _BOOLS)
        + sum_partials,
        "cross_entropy.cu": tuple(
            name_expr(k, t, i, w)
            for k in ("cross_entropy_fwd", "cross_entropy_bwd")
            for i in _INDEX
            for w in _BOOLS
        )
        + index_check,
        "embedding.cu": tuple(name_expr(k, t, i) for k in ("embedding_fwd", "embedding_bwd") for i in _INDEX)
        + sum_partials
        + index_check,
        "dropout.cu": (name_expr("dropout_apply", t), "dropout_mask"),
        "optim.cu": tuple(name_expr(k, t, s) for k in ("sgd_multi", "adam_multi") for s in optim_states),
    }
    out = {src: {t: exprs} for src, exprs in per_type.items()}
    # The attention kernels are large: one module per (type, padded Dh) keeps the first
    # compile short and compiles only what a model uses.
    out["attention.cu"] = {
        attention_variant(t, d): tuple(
            name_expr(k, t, d) for k in ("attention_fwd", "attention_bwd_dq", "attention_bwd_dkv")
        )
        + (name_expr("attention_bwd_delta", t),)
        for d in ATTENTION_DPADS
    }
    return out


#: source file -> module variant (element C type, or attention_variant) -> name expressions
#: compiled together in one module.
NAME_EXPRESSIONS: dict[str, dict[str, tuple[str, ...]]] = {}
for _t in ("float", "double", "ember_half"):
    for _src, _variants in _names(_t).items():
        NAME_EXPRESSIONS.setdefault(_src, {}).update(_variants)
del _t, _src, _variants


def ctype_of(dtype: Any) -> str:
    """C element type of a float dtype (``float``, ``double`` or ``ember_half``).

    Args:
        dtype: a NumPy-compatible dtype.
    """
    return _FLOAT_CTYPES[np.dtype(dtype)]


def index_ctype_of(dtype: Any) -> str:
    """C type of an index dtype (``long long`` for int64, ``int`` for int32).

    Args:
        dtype: a NumPy-compatible dtype.
    """
    return _INDEX_CTYPES[np.dtype(dtype)]


def acc_dtype(dtype: Any) -> np.dtype:
    """Accumulation dtype of a float dtype: float64 for float64, else float32.

    Args:
        dtype: a NumPy-compatible float dtype.
    """
    return np.dtype(np.float64) if np.dtype(dtype) == np.float64 else np.dtype(np.float32)


def acc_scalar(dtype: Any, value: float) -> np.floating:
    """``value`` as the NumPy scalar type matching a kernel's accumulation-type parameter.

    Kernel arguments are passed by value with the size of their NumPy type, so every float
    parameter must get exactly float32 or float64.

    Args:
        dtype: the element dtype the kernel was instantiated for.
        value: the value.
    """
    return acc_dtype(dtype).type(value)


INLINE_SOURCES: dict[str, str] = {}
"""Sources written in the Python module that launches them (short element-wise kernels), by
the name they are registered under; the others are files in :data:`KERNEL_DIR`."""


def register(source: str, per_type, text: str | None = None) -> None:
    """Declare the kernels of ``source``: ``per_type(t)`` gives their name expressions for the
    element C type ``t`` (one module variant per type). ``text``: the source itself, for a
    kernel written beside its launcher (``source`` is then the name compile logs and tests
    show); without it, ``source`` is a file in :data:`KERNEL_DIR`.

    Args:
        source: the source's name, e.g. ``"activations.cu"``.
        per_type: element C type -> tuple of name expressions.
        text: the CUDA source, or None for a file.
    """
    if text is not None:
        INLINE_SOURCES[source] = text
    NAME_EXPRESSIONS[source] = {t: tuple(per_type(t)) for t in ("float", "double", "ember_half")}
    source_text.cache_clear()


def kernel_text(source: str) -> str:
    """The CUDA text of ``source`` alone (without ``common.cuh``)."""
    inline = INLINE_SOURCES.get(source)
    return inline if inline is not None else (KERNEL_DIR / source).read_text()


@cache
def source_text(source: str) -> str:
    """The full program text of ``source``: common.cuh followed by the kernel source.

    Args:
        source: a registered source, e.g. ``"softmax.cu"``.
    """
    common = (KERNEL_DIR / "common.cuh").read_text()
    return f"{common}\n// ---- {source} ----\n{kernel_text(source)}"


_modules: dict[tuple[int, int, str, str], Any] = {}
_functions: dict[tuple[int, int, str, str, str], Any] = {}
_modules_lock = threading.Lock()


def _module(cp: Any, device: int, source: str, variant: str) -> Any:
    key = (id(cp), device, source, variant)
    mod = _modules.get(key)
    if mod is None:
        with _modules_lock:
            mod = _modules.get(key)
            if mod is None:
                mod = cp.RawModule(
                    code=source_text(source),
                    options=COMPILE_OPTIONS,
                    name_expressions=list(NAME_EXPRESSIONS[source][variant]),
                )
                _modules[key] = mod
    return mod


def kernel(source: str, variant: str, name: str, *targs: object) -> Any:
    """The compiled kernel ``name<targs...>`` from the module ``(source, variant)``.

    Compiles the module on first use on the current device; kernel handles are cached per
    device, so later calls cost a dictionary lookup.

    Args:
        source: kernel file name, e.g. ``"softmax.cu"``.
        variant: module variant: the element C type (see :func:`ctype_of`), or
            :func:`attention_variant` for ``attention.cu``.
        name: kernel name.
        *targs: template arguments of the kernel.

    Raises:
        CudaUnavailableError: CuPy or a GPU is missing.
        KeyError: the instantiation is not listed in :data:`NAME_EXPRESSIONS`.
    """
    expr = name_expr(name, *targs)
    if expr not in NAME_EXPRESSIONS.get(source, {}).get(variant, ()):
        raise KeyError(f"{expr!r} is not instantiated in {source} for variant {variant}")
    cp = cupy_or_error()
    device = int(cp.cuda.Device().id)
    key = (id(cp), device, source, variant, expr)
    fn = _functions.get(key)
    if fn is None:
        fn = _module(cp, device, source, variant).get_function(expr)
        _functions[key] = fn
    return fn


def clear_cache() -> None:
    """Drop every compiled module (they are rebuilt, from CuPy's disk cache, on next use)."""
    with _modules_lock:
        _modules.clear()
        _functions.clear()
