"""Sliding windows ("im2col") built from tensor ops, shared by convolutions, pools and folds.

A padded input ``[B, C, *spatial]`` is flattened over its spatial dims and one
``index_select`` with a precomputed index picks every window element at once, giving
``[B, C, K, L]`` (K elements per window, L windows). The inverse direction ("col2im",
:func:`fold_windows`) adds ``[B, C, K, L]`` back into the spatial block with one accumulating
``index_put`` on the same index; it serves transposed convolutions and ``Fold4d``. Gradients
come from the ops' own rules (``index_select`` backward scatter-adds, ``index_put`` backward
gathers), so no layer needs a hand-written backward.
"""

from __future__ import annotations

import numpy as np

from ember.tensor import dtypes as dt
from ember.tensor.creation import from_numpy, zeros
from ember.tensor.grad_mode import no_grad
from ember.tensor.ops._core import needs_grad
from ember.tensor.ops.elementwise import where
from ember.tensor.tensor import Tensor

__all__ = ["fold_windows", "max_over_windows", "out_size", "per_axis", "unfold_windows"]

_INDEX_CACHE: dict = {}


def per_axis(op: str, name: str, value, n: int) -> tuple:
    """``value`` as one int per spatial axis; a single int stands for all ``n`` axes
    (``kernel_size=3`` is ``(3, 3)`` in 2-D, as PyTorch and Burn users write it).

    Args:
        op: the config or layer, for the error message.
        name: the setting's name, for the error message.
        value: an int or a sequence of ``n`` ints.
        n: the number of spatial axes.

    Returns:
        A tuple of ``n`` ints.

    Raises:
        ValueError: ``value`` is not an int or ``n`` ints.
    """
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return (int(value),) * n
    if isinstance(value, (tuple, list)) and len(value) == n:
        if all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in value):
            return tuple(int(v) for v in value)
    raise ValueError(f"{op}: {name} must be an int or {n} ints, got {value!r}")


def out_size(
    size: int, kernel: int, stride: int, dilation: int, ceil_mode: bool = False, pad_after: int = 0
) -> int:
    """Number of windows along one dim of padded length ``size``.

    With ``ceil_mode`` a partial last window counts, as long as it starts inside the input or
    its leading padding, i.e. before ``size - pad_after`` (PyTorch's and Burn's rule).
    """
    extent = dilation * (kernel - 1) + 1
    if size < extent:
        return 0
    span = size - extent
    if not ceil_mode:
        return span // stride + 1
    n = -(-span // stride) + 1
    if (n - 1) * stride >= size - pad_after:
        n -= 1
    return n


def _window_index(padded: tuple, kernel: tuple, stride: tuple, dilation: tuple, outs: tuple) -> np.ndarray:
    """Flat positions (into the padded spatial block) of every window element, K-major."""
    key = (padded, kernel, stride, dilation, outs)
    found = _INDEX_CACHE.get(key)
    if found is not None:
        return found
    n = len(padded)
    k_grid = np.indices(kernel).reshape(n, -1)  # [n, K]
    o_grid = np.indices(outs).reshape(n, -1)  # [n, L]
    flat = np.zeros((k_grid.shape[1], o_grid.shape[1]), dtype=np.int64)
    mult = 1
    for d in reversed(range(n)):
        pos = o_grid[d][None, :] * stride[d] + k_grid[d][:, None] * dilation[d]
        flat += pos * mult
        mult *= padded[d]
    index = flat.reshape(-1)
    if len(_INDEX_CACHE) > 256:
        _INDEX_CACHE.clear()
    _INDEX_CACHE[key] = index
    return index


def unfold_windows(x: Tensor, kernel: tuple, stride: tuple, dilation: tuple, outs: tuple) -> Tensor:
    """Windows of an (already padded) ``x [B, C, *spatial]`` as ``[B, C, K, L]``.

    Args:
        x: the padded input.
        kernel, stride, dilation: per spatial dim.
        outs: number of windows per spatial dim (L = their product).
    """
    b, c = x.shape[:2]
    spatial = tuple(x.shape[2:])
    k = int(np.prod(kernel))
    n_out = int(np.prod(outs))
    index = _window_index(spatial, tuple(kernel), tuple(stride), tuple(dilation), tuple(outs))
    flat = x.reshape(b, c, int(np.prod(spatial)))
    picked = flat.index_select(2, from_numpy(index, x.device))
    return picked.reshape(b, c, k, n_out)


def max_over_windows(
    windows: Tensor, inside: np.ndarray, kernel: tuple, stride: tuple, dilation: tuple, outs: tuple
) -> Tensor:
    """The maximum of each window of ``windows [B, C, K, L]`` (from :func:`unfold_windows` of a
    block padded with ``-inf``), as ``[B, C, L]``, whose gradient goes to one element per window
    as in PyTorch's max pooling: the first maximum (in row-major window order), the last NaN of a
    window holding NaNs, and the first element inside the input when all of them are ``-inf``
    (never the padding).

    Args:
        windows: the unfolded windows.
        inside: bool ``[*padded]``, True on the input's own positions of the padded block.
        kernel, stride, dilation, outs: what ``windows`` was unfolded with.
    """
    if not needs_grad(windows):  # the same values; only the gradient needs the picks
        return windows.max(2)
    k = windows.shape[2]
    with no_grad():
        nan = windows.isnan()
        if nan.any().item():  # (rare: checked once so the common case skips three passes)
            pick = windows.mask_fill(nan, float("-inf")).argmax(2, keepdim=True)  # argmax: the first
            last_nan = (k - 1) - nan.flip(2).to(dt.int32).argmax(2, keepdim=True)
            pick = where(nan.any(2, keepdim=True), last_nan, pick)
        else:
            pick = windows.argmax(2, keepdim=True)
        index = _window_index(inside.shape, tuple(kernel), tuple(stride), tuple(dilation), tuple(outs))
        first_inside = inside.reshape(-1)[index].reshape(k, -1).argmax(0)  # [L]
        if first_inside.any():  # padding leads some window: all -inf there takes the first inside
            all_low = windows.max(2, keepdim=True) == float("-inf")
            fallback = from_numpy(first_inside.reshape(1, 1, 1, -1).astype(np.int64), windows.device)
            pick = where(all_low, fallback, pick)
    return windows.gather(2, pick.expand(windows.shape[:2] + (1, windows.shape[3]))).squeeze(2)


def fold_windows(
    cols: Tensor, padded: tuple, kernel: tuple, stride: tuple, dilation: tuple, outs: tuple
) -> Tensor:
    """Sum windows ``cols [B, C, K, L]`` back into a ``[B, C, *padded]`` block (col2im): each
    window element is added at the position :func:`unfold_windows` would read it from, so
    overlapping windows accumulate. The adjoint of ``unfold_windows``.

    Args:
        cols: window elements, K-major as ``unfold_windows`` returns them.
        padded: the spatial size of the block to fill.
        kernel, stride, dilation: per spatial dim.
        outs: number of windows per spatial dim (L = their product).

    Returns:
        ``[B, C, *padded]``; positions no window covers are zero.
    """
    b, c = cols.shape[:2]
    index = _window_index(tuple(padded), tuple(kernel), tuple(stride), tuple(dilation), tuple(outs))
    flat = zeros((b, c, int(np.prod(padded))), dtype=cols.dtype, device=cols.device)
    values = cols.reshape(b, c, index.shape[0])
    filled = flat.index_put(
        (slice(None), slice(None), from_numpy(index, cols.device)), values, accumulate=True
    )
    return filled.reshape((b, c) + tuple(padded))
