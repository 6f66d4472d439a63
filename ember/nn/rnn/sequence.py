"""Sequence plumbing shared by the recurrent layers: input checks, the input projection of all
time steps in one GEMM, cutting it into steps, and stacking the outputs back.

Cutting into steps without a quadratic backward pass: a slice's gradient is a tensor of the
*whole* input's shape (zero outside the slice), so taking T slices of one tensor directly makes
backward add T full-size tensors: O(T²) work. Slicing in two levels — ~√T chunks, then the
steps of each chunk — makes it O(T^1.5), with the same values.
"""

from __future__ import annotations

import math

from ember.tensor.creation import zeros
from ember.tensor.ops._core import needs_grad, normalize_dim, shape_str
from ember.tensor.ops.movement import stack
from ember.tensor.tensor import Tensor

__all__ = [
    "check_input",
    "check_state",
    "initial_state",
    "project_steps",
    "stack_steps",
    "time_order",
    "unbind_steps",
]

# Below this many steps the two-level split saves less than its extra nodes cost.
_DIRECT_MAX = 16


def unbind_steps(x: Tensor, dim: int = 0) -> list[Tensor]:
    """The slices of ``x`` along ``dim``, each with that dim removed (``torch.unbind``).

    Args:
        x: the sequence tensor.
        dim: the time dim.
    """
    d = normalize_dim("unbind_steps", dim, x.ndim)
    n = x.shape[d]
    lead = (slice(None),) * d
    if n <= _DIRECT_MAX or not needs_grad(x):
        return [x[lead + (t,)] for t in range(n)]
    out = []
    for chunk in x.split(max(1, math.isqrt(n)), d):
        out.extend(chunk[lead + (t,)] for t in range(chunk.shape[d]))
    return out


def check_input(op: str, x, d_input: int) -> None:
    """``x`` must be a float ``[batch, seq, d_input]`` (or seq-first) tensor."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor input, got {type(x).__name__}")
    if not x.dtype.is_float:
        raise TypeError(f"{op}: expected a float input, got {x.dtype}")
    if x.ndim != 3 or x.shape[2] != d_input:
        raise ValueError(
            f"{op}: input must be [batch, seq_length, d_input={d_input}] (or [seq_length, batch, "
            f"d_input] when batch_first=False), got {shape_str(x.shape)}"
        )


def check_state(op: str, name: str, state, shape: tuple) -> None:
    """An initial state tensor must have ``shape``."""
    if not isinstance(state, Tensor):
        raise TypeError(f"{op}: {name} must be a Tensor, got {type(state).__name__}")
    if state.shape != tuple(shape):
        raise ValueError(
            f"{op}: {name} must be {shape_str(shape)} (the batch and d_hidden of this layer), got "
            f"{shape_str(state.shape)}"
        )


def initial_state(
    op: str, name: str, state: Tensor | None, batch: int, d_hidden: int, like: Tensor
) -> Tensor:
    """The initial ``[batch, d_hidden]`` state tensor of a recurrence in ``like``'s dtype: zeros
    when ``state`` is None, else ``state`` once its shape is checked."""
    if state is None:
        return zeros(batch, d_hidden, dtype=like.dtype, device=like.device)
    check_state(op, name, state, (batch, d_hidden))
    return state.to(like.dtype)


def time_order(seq: int, reverse: bool) -> range:
    """The step indices a recurrence visits: forward in time, or from the last step."""
    return range(seq - 1, -1, -1) if reverse else range(seq)


def project_steps(x: Tensor, weight: Tensor, bias: Tensor | None) -> list[Tensor]:
    """``x @ weight + bias`` for every time step in one GEMM, cut into steps.

    Args:
        x: ``[batch, seq, d_input]``.
        weight: ``[d_input, G]``.
        bias: ``[G]`` or None.

    Returns:
        ``seq`` tensors ``[batch, G]``.
    """
    b, t, d = x.shape
    # time-major rows, so that each step is one contiguous block of the product
    rows = x.swap_dims(0, 1).reshape(t * b, d) @ weight.to(x.dtype)
    if bias is not None:
        rows = rows + bias.to(x.dtype)
    return unbind_steps(rows.reshape(t, b, weight.shape[1]), 0)


def stack_steps(outputs: list[Tensor], batch: int, d_hidden: int, like: Tensor) -> Tensor:
    """The per-step ``[batch, d_hidden]`` outputs (in time order) as ``[batch, seq, d_hidden]``."""
    if not outputs:
        return zeros(batch, 0, d_hidden, dtype=like.dtype, device=like.device)
    return stack(outputs, 1)
