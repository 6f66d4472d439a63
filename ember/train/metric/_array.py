"""Small helpers letting metrics and outputs take ember tensors or NumPy arrays alike.

Reductions that shrink a large tensor (argmax / top-k over a vocabulary, log-softmax and
gather for perplexity) run on the tensor's own device; only their small results are read back.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import ember
from ember.tensor import Tensor

__all__ = [
    "as_bool",
    "check_same_shape",
    "detach",
    "is_tensor",
    "one_hot_bool",
    "reshape",
    "shape_of",
    "to_numpy",
]


def is_tensor(x: Any) -> bool:
    """True for an ``ember.Tensor``."""
    return isinstance(x, Tensor)


def to_numpy(x: Any) -> np.ndarray:
    """A host NumPy array of ``x`` (tensor, array, list or scalar)."""
    if is_tensor(x):
        return x.detach().numpy()
    return np.asarray(x)


def shape_of(x: Any) -> tuple[int, ...]:
    """The shape of a tensor or array-like."""
    shape = getattr(x, "shape", None)
    return tuple(shape) if shape is not None else np.shape(x)


def check_same_shape(metric: str, field: str, scores: Any, targets: Any) -> tuple[int, int]:
    """Check ``scores [B, C]`` against ``targets`` of the same shape and return ``(B, C)``.

    Args:
        metric: the metric's name for the message.
        field: what the message calls the scores (``predictions``, ``outputs``).

    Raises:
        ValueError: not ``[B, C]`` or shapes differ; names the metric and the shapes.
    """
    s_shape, t_shape = shape_of(scores), shape_of(targets)
    if len(s_shape) != 2 or tuple(s_shape) != tuple(t_shape):
        raise ValueError(
            f"{metric}: expected {field} [B, C] and targets [B, C] of the same shape, "
            f"got {list(s_shape)} and {list(t_shape)}"
        )
    return s_shape[0], s_shape[1]


def reshape(x: Any, shape: tuple[int, ...]) -> Any:
    """``x`` reshaped, staying a tensor on its device when it is one."""
    return x.reshape(shape) if is_tensor(x) else np.reshape(np.asarray(x), shape)


def detach(x: Any) -> Any:
    """``x`` cut from the autodiff graph (arrays and None pass through)."""
    return x.detach() if is_tensor(x) else x


def as_bool(x: Any) -> Any:
    """``x != 0`` as a bool tensor/array."""
    if is_tensor(x):
        return x if x.dtype.is_bool else x.bool()
    return np.asarray(x).astype(bool)


def one_hot_bool(targets: Any, num_classes: int) -> Any:
    """``[B]`` class indices to a ``[B, num_classes]`` bool one-hot.

    Raises:
        IndexError: a target is outside ``[0, num_classes)``.
    """
    if is_tensor(targets):
        return ember.one_hot(targets, num_classes).bool()
    t = np.asarray(targets).astype(np.int64)
    if t.size and (t.min() < 0 or t.max() >= num_classes):
        raise IndexError(
            f"one_hot: targets must lie in [0, {num_classes}), got values in [{t.min()}, {t.max()}]"
        )
    return np.eye(num_classes, dtype=bool)[t]


def argmax_rows(x: Any) -> np.ndarray:
    """Index of the largest value of each row of ``[N, C]`` (first one on ties), on the host."""
    if is_tensor(x):
        return x.detach().argmax(-1).numpy()
    return np.argmax(np.asarray(x), axis=-1)


def topk_rows(x: Any, k: int) -> np.ndarray:
    """``[N, k]`` indices of the ``k`` largest values of each row (lower index first on ties)."""
    if is_tensor(x):
        return ember.topk(x.detach(), k, -1)[1].numpy()
    a = np.asarray(x)
    # Descending as ``ember.topk``: NaN first, lower index first on ties, and no negation (which
    # overflows an integer type's minimum): a stable ascending sort of the reversed row, reversed.
    n = a.shape[-1]
    return (n - 1 - np.argsort(a[..., ::-1], axis=-1, kind="stable")[..., ::-1])[..., :k]


def target_log_probs(logits: Any, targets: Any) -> np.ndarray:
    """``log_softmax(logits)[i, targets[i]]`` for ``[N, V]`` logits, as float64 on the host.

    Raises:
        IndexError: a target is outside ``[0, V)``.
    """
    n, v = shape_of(logits)
    if is_tensor(logits):
        x = logits.detach()
        if x.dtype.is_float and x.dtype.itemsize < 4:  # float16 loses too much in log-softmax
            x = x.float()
        t = (
            targets
            if is_tensor(targets)
            else ember.tensor(np.asarray(targets, dtype=np.int64), device=x.device)
        )
        t = t.to(x.device) if t.device != x.device else t
        logp = ember.log_softmax(x, -1)
        return ember.gather(logp, 1, t.long().reshape((n, 1))).reshape((n,)).numpy().astype(np.float64)
    a = np.asarray(logits, dtype=np.float64)
    t = np.asarray(to_numpy(targets), dtype=np.int64).reshape(n)
    if t.size and (t.min() < 0 or t.max() >= v):
        raise IndexError(f"perplexity: targets must lie in [0, {v}), got values in [{t.min()}, {t.max()}]")
    shifted = a - a.max(axis=1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return logp[np.arange(n), t]
