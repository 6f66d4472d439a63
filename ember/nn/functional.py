"""Activation functions (Burn's ``burn::tensor::activation``), composed from tensor ops.

The modules in :mod:`ember.nn.activation` call these. Every function takes a float tensor
and returns one of the same shape (``glu`` halves one dim), with gradients through autodiff.
Forms are chosen so that neither the value nor the gradient overflows: branches that call
``exp`` see only the inputs they are selected for (``exp`` of a clamped input), because a
``where`` whose unselected branch is ``inf`` would still send ``0 · inf = NaN`` backwards.
At a kink, at ±0 and at NaN each function's gradient is PyTorch's (README, "A tour of the API":
gradients at kinks), checked in ``tests/tensor/test_kinks.py``.

    import ember
    from ember.nn import functional as F

    y = F.mish(ember.randn(4, 8))
"""

from __future__ import annotations

from ember.tensor.ops._core import normalize_dim, shape_str

# relu, sigmoid, silu, softplus, leaky_relu, gelu and the softmaxes are ember's tensor ops, re-exported
from ember.tensor.ops.elementwise import leaky_relu, relu, sigmoid, silu, softplus, where
from ember.tensor.ops.nn import gelu, log_softmax, quiet_softmax, softmax
from ember.tensor.tensor import Tensor

__all__ = [
    "celu",
    "elu",
    "gelu",
    "gelu_approximate",
    "glu",
    "hard_shrink",
    "hard_sigmoid",
    "hard_swish",
    "hardtanh",
    "leaky_relu",
    "log_sigmoid",
    "log_softmax",
    "mish",
    "prelu",
    "quiet_softmax",
    "relu",
    "relu6",
    "selu",
    "shrink",
    "sigmoid",
    "silu",
    "soft_shrink",
    "softmax",
    "softmin",
    "softplus",
    "softsign",
    "tanh",
    "tanhshrink",
    "threshold",
    "thresholded_relu",
]

# SELU's constants (Klambauer et al. 2017), as Burn and PyTorch write them.
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def _float(op: str, x) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")
    if not x.dtype.is_float:
        raise TypeError(f"{op}: expected a float tensor, got {x.dtype}")


def _exp_minus_one_of_negative(x: Tensor) -> Tensor:
    """``exp(min(x, 0)) − 1``: the negative branch of ELU-like functions, finite for any x."""
    return x.clamp(max=0.0).expm1()


def _clip_flat_outside(x: Tensor, low: float, high: float, outside: Tensor) -> Tensor:
    """``clamp(x, low, high)`` with gradient 0 where ``outside`` and 1 elsewhere (a NaN passes
    through with the gradient ``outside`` gives it), unlike ``clamp``'s 1 on the bounds."""
    return where(outside, x.detach().clamp(low, high), x)


def tanh(x: Tensor) -> Tensor:
    """``tanh(x)``."""
    _float("tanh", x)
    return x.tanh()


def gelu_approximate(x: Tensor) -> Tensor:
    """GELU's tanh approximation ``x/2 · (1 + tanh(√(2/π)·(x + 0.044715·x³)))``."""
    _float("gelu_approximate", x)
    return gelu(x, "tanh")


def hardtanh(x: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """``clamp(x, min_val, max_val)``; its gradient is 0 on the bounds, 1 at NaN (PyTorch's)."""
    _float("hardtanh", x)
    if not min_val <= max_val:
        raise ValueError(f"hardtanh: min_val ({min_val}) must be <= max_val ({max_val})")
    low, high = float(min_val), float(max_val)
    return _clip_flat_outside(x, low, high, (x <= low) | (x >= high))


def relu6(x: Tensor) -> Tensor:
    """``min(max(x, 0), 6)``; its gradient is 0 at 0 and 6, 1 at NaN (PyTorch's)."""
    _float("relu6", x)
    return _clip_flat_outside(x, 0.0, 6.0, (x <= 0.0) | (x >= 6.0))


def tanhshrink(x: Tensor) -> Tensor:
    """``x − tanh(x)``."""
    _float("tanhshrink", x)
    return x - x.tanh()


def prelu(x: Tensor, alpha: Tensor) -> Tensor:
    """``x`` where x > 0, ``alpha·x`` elsewhere (the gradient at 0 is ``alpha``, as PyTorch's);
    ``alpha`` is ``[1]`` or one slope per channel (dim 1 of ``x``, as Burn and PyTorch).

    Args:
        x: the input, at least 2-D when ``alpha`` has more than one element.
        alpha: ``[1]`` or ``[channels]``.
    """
    _float("prelu", x)
    if not isinstance(alpha, Tensor) or alpha.ndim != 1:
        got = shape_str(alpha.shape) if isinstance(alpha, Tensor) else type(alpha).__name__
        raise ValueError(f"prelu: alpha must be a 1-D tensor [1] or [channels], got {got}")
    n = alpha.shape[0]
    if n == 1:
        weight = alpha.reshape((1,) * max(x.ndim, 1)) if x.ndim else alpha.reshape(())
    else:
        if x.ndim < 2 or x.shape[1] != n:
            raise ValueError(
                f"prelu: {n} slopes need an input whose dim 1 has {n} channels, got {shape_str(x.shape)}"
            )
        weight = alpha.reshape((1, n) + (1,) * (x.ndim - 2))
    return where(x > 0.0, x, x * weight.to(x.dtype))


def softmin(x: Tensor, dim: int = -1) -> Tensor:
    """``exp(−x) / Σ exp(−x)`` along ``dim``."""
    _float("softmin", x)
    return softmax(-x, dim)


def hard_sigmoid(x: Tensor, alpha: float = 0.2, beta: float = 0.5) -> Tensor:
    """``max(0, min(1, alpha·x + beta))`` (Burn's defaults 0.2 and 0.5); its gradient is
    ``alpha`` strictly inside (0, 1) and 0 on the bounds and at NaN (PyTorch's)."""
    _float("hard_sigmoid", x)
    z = x * float(alpha) + float(beta)
    return _clip_flat_outside(z, 0.0, 1.0, ((z > 0.0) & (z < 1.0)).logical_not())


def log_sigmoid(x: Tensor) -> Tensor:
    """``log(1 / (1 + exp(−x))) = −softplus(−x)``, finite for any x."""
    _float("log_sigmoid", x)
    return -softplus(-x)


def hard_swish(x: Tensor) -> Tensor:
    """``x · hard_sigmoid(x, 1/6, 1/2)``: 0 for x <= −3, ``x·(x + 3)/6`` below 3, x from 3 on
    (PyTorch's gradient: 0 at −3, 1 at 3 and at NaN)."""
    _float("hard_swish", x)
    xm = x.clamp(-3.0, 3.0)  # the middle branch's gradient stays finite where it is not selected
    return where(x <= -3.0, 0.0, where(x < 3.0, xm * (xm + 3.0) / 6.0, x))


def mish(x: Tensor) -> Tensor:
    """``x · tanh(softplus(x))``; above 20 the factor is 1 in float64 already, so the value is
    ``x`` and the gradient 1 (the product rule would multiply a huge ``x`` by a zero factor: NaN
    at 3e38)."""
    _float("mish", x)
    return where(x > 20.0, x, x * softplus(x).tanh())


def elu(x: Tensor, alpha: float = 1.0) -> Tensor:
    """``x`` where x > 0, ``alpha·(exp(x) − 1)`` where x ≤ 0."""
    _float("elu", x)
    return where(x <= 0.0, _exp_minus_one_of_negative(x) * float(alpha), x)


def celu(x: Tensor, alpha: float = 1.0) -> Tensor:
    """``x`` where x > 0, ``alpha·(exp(x/alpha) − 1)`` where x ≤ 0 (alpha ≠ 0)."""
    _float("celu", x)
    if alpha == 0:
        raise ValueError("celu: alpha must not be 0 (it divides x)")
    return where(x <= 0.0, _exp_minus_one_of_negative(x / float(alpha)) * float(alpha), x)


def selu(x: Tensor) -> Tensor:
    """``scale·x`` where x > 0, ``scale·alpha·(exp(x) − 1)`` where x ≤ 0 (α ≈ 1.6733, scale ≈ 1.0507;
    the gradient at 0 is ``scale·alpha``, as PyTorch's)."""
    _float("selu", x)
    return where(x <= 0.0, _exp_minus_one_of_negative(x) * (SELU_ALPHA * SELU_SCALE), x * SELU_SCALE)


def thresholded_relu(x: Tensor, alpha: float = 1.0) -> Tensor:
    """``x`` where x > alpha, 0 elsewhere."""
    _float("thresholded_relu", x)
    return x.mask_fill(x <= float(alpha), 0.0)


def threshold(x: Tensor, threshold: float, value: float) -> Tensor:
    """``x`` where x > threshold, ``value`` elsewhere."""
    _float("threshold", x)
    return x.mask_fill(x <= float(threshold), float(value))


def glu(x: Tensor, dim: int = -1) -> Tensor:
    """Gated linear unit ``a · sigmoid(b)``, with ``a``, ``b`` the halves of ``x`` along ``dim``.

    Args:
        x: the input; its size along ``dim`` must be even.
        dim: the split dim (negative counts from the end).
    """
    _float("glu", x)
    d = normalize_dim("glu", dim, x.ndim)
    size = x.shape[d]
    if size % 2:
        raise ValueError(
            f"glu: dim {dim} of the input {shape_str(x.shape)} has odd size {size}; "
            f"it must be even to split in two halves"
        )
    a, b = x.split(size // 2, d) if size else (x, x)
    return a * sigmoid(b)


def softsign(x: Tensor) -> Tensor:
    """``x / (1 + |x|)``."""
    _float("softsign", x)
    return x / (x.abs() + 1.0)


def shrink(x: Tensor, lambd: float = 0.5, bias: float = 0.5) -> Tensor:
    """``x − bias`` where x > lambd, ``x + bias`` where x < −lambd, 0 elsewhere (ONNX Shrink)."""
    _float("shrink", x)
    return (x - x.sign() * float(bias)).mask_fill(x.abs() <= float(lambd), 0.0)


def hard_shrink(x: Tensor, lambd: float = 0.5) -> Tensor:
    """``x`` where |x| > lambd, 0 elsewhere."""
    _float("hard_shrink", x)
    return x.mask_fill(x.abs() <= float(lambd), 0.0)


def soft_shrink(x: Tensor, lambd: float = 0.5) -> Tensor:
    """``shrink(x, lambd, lambd)``: ``x ∓ lambd`` outside ``[−lambd, lambd]``, 0 inside."""
    return shrink(x, lambd, lambd)
