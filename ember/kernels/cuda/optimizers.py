"""Multi-tensor optimizer updates on CuPy arrays: one kernel launch per parameter group.

The twin of the cpu backend's Numba kernels (:mod:`ember.kernels.cpu.optim_updates`), on
lists of CuPy arrays updated **in place**, taking the same state and args objects
(:mod:`ember.kernels.families.optimizer_args`) as the composed defaults they are tested
against; each update rule is stated once, in its optimizer's docstring in ``ember/optim/``. Per call, the host packs one table of device
pointers, sizes and (tensor, chunk) work items plus a small array of per-tensor
hyper-parameters, copies both to the device and launches one kernel over all chunks.

Conventions: params and state buffers are C-contiguous CuPy arrays of one float dtype
(float16, float32 or float64); ``grads[i]`` has the shape and dtype of ``params[i]``. With
float16 parameters the state buffers may be float32 (recommended) or float16; otherwise
they have the parameters' dtype. Arithmetic runs in float32 (float64 for float64 params).
State buffers start as zeros; ``lr``, ``steps`` and ``first_step`` are a scalar or one
value per tensor.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ember.kernels.backend import DECLINED, fused
from ember.kernels.cuda import launch, modules
from ember.kernels.cuda.runtime import cupy_or_error
from ember.kernels.families.optimizer_args import AdamArgs, AdamState, SgdArgs, SgdState

__all__ = ["adam_update", "fits", "sgd_update"]

_SRC = "optim.cu"
_PARAM_DTYPES = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))


def fits(params: Sequence[Any], grads: Sequence[Any], *states: Sequence[Any] | None) -> bool:
    """Whether the multi-tensor kernels take these arrays' layouts and dtypes: C-contiguous
    arrays, parameters and gradients of one float dtype, state buffers (lists, None for an
    unused one, None entries allowed) of one dtype, the parameters' own or float32 with
    float16 parameters. The cuda backend runs the per-tensor composed update otherwise;
    malformed arguments (lengths, shapes) still reach the kernels' validation and its errors.

    Args:
        params: the parameter arrays.
        grads: their gradients.
        *states: the state buffer lists (momentum, m, v, vmax).
    """
    groups = [g for g in (params, grads) + states if g is not None]
    if not all(isinstance(g, (list, tuple)) for g in groups):
        return True  # not lists: let the kernels' validation explain
    arrays = [a for g in groups for a in g if a is not None]
    if any(getattr(a, "flags", None) is None or not a.flags.c_contiguous for a in arrays):
        return False
    if not params:
        return True
    dtype = params[0].dtype
    if dtype not in _PARAM_DTYPES or any(a.dtype != dtype for a in list(params) + list(grads)):
        return False
    state_arrays = [a for g in states if g is not None for a in g if a is not None]
    allowed = (np.dtype(np.float32), np.dtype(np.float16)) if dtype == np.float16 else (dtype,)
    return len({a.dtype for a in state_arrays}) <= 1 and all(a.dtype in allowed for a in state_arrays)


def _address(a: Any) -> int:
    """Device address of a CuPy array's first element (host address for NumPy arrays,
    which the tests' CPU emulation uses)."""
    data = a.data
    ptr = getattr(data, "ptr", None)
    return int(ptr) if ptr is not None else int(a.ctypes.data)


def _arrays(cp: Any, op: str, what: str, arrays: Any, like: list | None, in_place: bool) -> list:
    if arrays is None:
        raise ValueError(f"{op}: `{what}` is required with these settings, got None")
    if isinstance(arrays, cp.ndarray) or not isinstance(arrays, (list, tuple)):
        raise TypeError(f"{op}: `{what}` must be a list of {cp.__name__} arrays, got {type(arrays).__name__}")
    if like is not None and len(arrays) != len(like):
        raise ValueError(f"{op}: `{what}` has {len(arrays)} arrays but `params` has {len(like)}")
    out = []
    for i, a in enumerate(arrays):
        if not isinstance(a, cp.ndarray):
            raise TypeError(f"{op}: `{what}[{i}]` must be a {cp.__name__}.ndarray, got {type(a).__name__}")
        if a.dtype not in _PARAM_DTYPES:
            raise TypeError(f"{op}: `{what}[{i}]` must be float16/32/64, got dtype {a.dtype}")
        if in_place and not a.flags.c_contiguous:
            raise ValueError(
                f"{op}: `{what}[{i}]` is updated in place and must be C-contiguous (shape {tuple(a.shape)})"
            )
        if like is not None and tuple(a.shape) != tuple(like[i].shape):
            raise ValueError(
                f"{op}: `{what}[{i}]` has shape {tuple(a.shape)} but "
                f"`params[{i}]` has shape {tuple(like[i].shape)}"
            )
        out.append(a if a.flags.c_contiguous else cp.ascontiguousarray(a))
    if len({a.dtype for a in out}) > 1:
        raise TypeError(f"{op}: all `{what}` must share one dtype, got {sorted({str(a.dtype) for a in out})}")
    return out


def _state_ctype(op: str, what: str, states: list, param_dtype: np.dtype) -> str:
    if not states:
        return modules.ctype_of(param_dtype)
    dtype = states[0].dtype
    allowed = (np.dtype(np.float32), np.dtype(np.float16)) if param_dtype == np.float16 else (param_dtype,)
    if dtype not in allowed:
        raise TypeError(
            f"{op}: `{what}` has dtype {dtype}; with {param_dtype} parameters it "
            f"must be {' or '.join(str(d) for d in allowed)}"
        )
    return modules.ctype_of(dtype)


def _table(cp: Any, columns: list[list[Any]], sizes: list[int], extra: list[np.ndarray]) -> tuple[Any, int]:
    """Device table [pointer columns | sizes | extra columns | chunk_tensor | chunk_start]."""
    tensor, start = launch.optim_chunks(sizes)
    words = [np.array([_address(a) if a is not None else 0 for a in col], dtype=np.uint64) for col in columns]
    words.append(np.array(sizes, dtype=np.uint64))
    words.extend(e.astype(np.uint64) for e in extra)
    words.append(np.array(tensor, dtype=np.uint64))
    words.append(np.array(start, dtype=np.uint64))
    return cp.asarray(np.concatenate(words)), len(tensor)


def _params_grads(cp: Any, op: str, params: Any, grads: Any) -> tuple[list, list]:
    """The checked parameter list (updated in place) and its gradients, one per parameter."""
    p = _arrays(cp, op, "params", params, None, in_place=True)
    return p, _arrays(cp, op, "grads", grads, p, in_place=False)


def _param_dtype(op: str, p: list, g: list) -> np.dtype:
    """The parameters' dtype, which the gradients must share (``p`` is non-empty)."""
    dtype = p[0].dtype
    if g[0].dtype != dtype:
        raise TypeError(f"{op}: `grads` have dtype {g[0].dtype} but `params` have {dtype}")
    return dtype


def _launch(name: str, pt: str, st: str, table: Any, n: int, chunks: int, args: tuple) -> None:
    """One launch of the multi-tensor kernel ``name`` over ``table``'s ``chunks`` of ``n``
    tensors; ``args`` follow the table, tensor count and chunk size."""
    fn = modules.kernel(_SRC, pt, name, pt, st)
    fn((chunks,), (launch.OPTIM_THREADS,), (table, np.int32(n), np.int64(launch.OPTIM_CHUNK), *args))


def sgd_update(params: Sequence[Any], grads: Sequence[Any], state: SgdState, args: SgdArgs) -> None:
    """SGD with optional L2 weight decay and (Nesterov) momentum, in place.

    Update rule: :class:`ember.optim.Sgd` (its docstring).

    Args:
        params: CuPy parameter arrays, updated in place.
        grads: gradients, same shapes and dtype.
        state: the velocity buffers (zeros initially), updated in place; or None (then
            ``args.momentum`` must be 0 and ``args.nesterov`` False).
        args: the hyper-parameters.
    """
    op = "sgd_update"
    cp = cupy_or_error()
    p, g = _params_grads(cp, op, params, grads)
    n = len(p)
    has_momentum = state.momentum_bufs is not None
    args.check_state(has_momentum)
    b = _arrays(cp, op, "momentum_bufs", state.momentum_bufs, p, in_place=True) if has_momentum else []
    rates, first = args.lr_per_tensor(n), args.first_per_tensor(n)
    if n == 0:
        return
    dtype = _param_dtype(op, p, g)
    pt = modules.ctype_of(dtype)
    st = (
        _state_ctype(op, "momentum_bufs", b, dtype)
        if has_momentum
        else ("float" if pt == "ember_half" else pt)
    )
    sizes = [int(a.size) for a in p]
    table, chunks = _table(cp, [p, g, b if has_momentum else [None] * n], sizes, [first.astype(np.uint64)])
    if chunks == 0:
        return
    acc = modules.acc_dtype(dtype)
    per = cp.asarray(rates.astype(acc))
    hp = (args.weight_decay, args.momentum, 1.0 - args.dampening)
    flags = (np.int32(has_momentum), np.int32(args.nesterov))
    _launch("sgd_multi", pt, st, table, n, chunks, (per, *(acc.type(h) for h in hp), *flags))


def adam_update(params: Sequence[Any], grads: Sequence[Any], state: AdamState, args: AdamArgs) -> None:
    """Adam / AdamW / AMSGrad (``state.vmax`` given), in place.

    Update rule: :class:`ember.optim.Adam`, and :class:`ember.optim.AdamW` when
    ``args.decoupled`` (both computed in Adam's form, ε added after the bias correction).

    Args:
        params: CuPy parameter arrays, updated in place.
        grads: gradients, same shapes and dtype.
        state: first and second moments (and AMSGrad's maxima), zeros initially, updated in place.
        args: the hyper-parameters and steps.
    """
    op = "adam_update"
    cp = cupy_or_error()
    p, g = _params_grads(cp, op, params, grads)
    n = len(p)
    mt = _arrays(cp, op, "m", state.m, p, in_place=True)
    vt = _arrays(cp, op, "v", state.v, p, in_place=True)
    amsgrad = state.vmax is not None
    vm = _arrays(cp, op, "vmax", state.vmax, p, in_place=True) if amsgrad else [None] * n
    per = args.per_tensor(n)
    if n == 0:
        return
    dtype = _param_dtype(op, p, g)
    pt = modules.ctype_of(dtype)
    states = mt + vt + ([a for a in vm if a is not None])
    if len({a.dtype for a in states}) > 1:
        raise TypeError(
            f"{op}: m, v and vmax must share one dtype, got {sorted({str(a.dtype) for a in states})}"
        )
    st = _state_ctype(op, "m", states, dtype)
    acc = modules.acc_dtype(dtype)
    sizes = [int(a.size) for a in p]
    table, chunks = _table(cp, [p, g, mt, vt, vm], sizes, [])
    if chunks == 0:
        return
    flags = (np.int32(amsgrad), np.int32(args.mode))
    _launch(
        "adam_multi",
        pt,
        st,
        table,
        n,
        chunks,
        (cp.asarray(per.astype(acc).reshape(-1)), *(acc.type(b) for b in args.betas), *flags),
    )


class CudaOptimizerOps:
    """The optimizer family on ``cuda``: SGD and Adam/AdamW as one multi-tensor kernel launch
    per parameter group, updating the arrays passed in and returning them; layouts or dtypes
    the kernels lack decline, and RMSprop, AdaGrad, Lion and clipping run the per-tensor
    defaults."""

    @fused(ready_arg=None)
    def optim_own(self, x, copy=False):
        return x.copy() if copy or not x.flags.c_contiguous else x

    @fused
    def sgd_update(self, params, grads, state, args):
        if not fits(params, grads, *state):  # layouts / dtypes the kernel lacks
            return DECLINED
        params, state = _listed(params), SgdState(*map(_listed, state))
        sgd_update(params, list(grads), state, args)
        return params, state

    @fused
    def adam_update(self, params, grads, state, args):
        if not fits(params, grads, *state):
            return DECLINED
        params, state = _listed(params), AdamState(*map(_listed, state))
        adam_update(params, list(grads), state, args)
        return params, state


def _listed(arrays):
    """``arrays`` as a list (None stays None)."""
    return None if arrays is None else list(arrays)
