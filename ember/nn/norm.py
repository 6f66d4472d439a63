"""Normalisation over the last dim: LayerNorm and RmsNorm."""

from __future__ import annotations

from ember.nn.init import Ones, Zeros
from ember.nn.module import Module
from ember.nn.param import Param
from ember.record.config import Config
from ember.tensor import dtypes as dt
from ember.tensor.ops._core import shape_str
from ember.tensor.ops.nn import layer_norm, rms_norm
from ember.tensor.tensor import Tensor

__all__ = ["LayerNorm", "LayerNormConfig", "RmsNorm", "RmsNormConfig"]


def _check_last_dim(op: str, x: Tensor, d: int) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor input, got {type(x).__name__}")
    if x.ndim == 0 or x.shape[-1] != d:
        raise ValueError(f"{op}: input of shape {shape_str(x.shape)} does not end with d_model={d}")


class LayerNormConfig(Config):
    """Configuration of :class:`LayerNorm`.

    Args:
        d_model: size of the normalised (last) dim.
        epsilon: added to the variance (1e-5, as Burn).
        bias: learn ``beta``.
    """

    d_model: int
    epsilon: float = 1e-5
    bias: bool = True

    def init(self, device=None, dtype=None) -> "LayerNorm":
        """Build the layer: gamma = 1, beta = 0."""
        if self.d_model <= 0:
            raise ValueError(f"LayerNormConfig: d_model must be positive, got {self.d_model}")
        gamma = Ones().init((self.d_model,), device, dtype)
        beta = Zeros().init((self.d_model,), device, dtype) if self.bias else None
        return LayerNorm(gamma, beta, self.epsilon)


class LayerNorm(Module):
    """``(x − mean) / √(var + ε) · gamma + beta`` over the last dim (biased variance).

    Runs the fused ``ember.layer_norm`` kernel; float16 inputs are normalised in float32.

    Args:
        gamma: Param ``[d_model]``.
        beta: Param ``[d_model]`` or None.
        epsilon: added to the variance.
    """

    def __init__(self, gamma: Param, beta: Param | None = None, epsilon: float = 1e-5):
        self.gamma = gamma
        self.beta = beta
        self.epsilon = float(epsilon)

    def forward(self, x: Tensor) -> Tensor:
        _check_last_dim("LayerNorm", x, self.gamma.shape[0])
        beta = None if self.beta is None else self.beta.val()
        if x.dtype is dt.float16:  # accumulate in float32, as Burn does for half precision
            return layer_norm(
                x.to(dt.float32),
                self.gamma.val().to(dt.float32),
                None if beta is None else beta.to(dt.float32),
                self.epsilon,
            ).to(dt.float16)
        return layer_norm(x, self.gamma.val(), beta, self.epsilon)

    def extra_repr(self) -> dict:
        return {"d_model": self.gamma.shape[0], "epsilon": self.epsilon, "bias": self.beta is not None}


class RmsNormConfig(Config):
    """Configuration of :class:`RmsNorm`.

    Args:
        d_model: size of the normalised (last) dim.
        epsilon: added to the mean square (1e-5); must be positive.
    """

    d_model: int
    epsilon: float = 1e-5

    def init(self, device=None, dtype=None) -> "RmsNorm":
        """Build the layer: gamma = 1."""
        if self.epsilon <= 0:
            raise ValueError(f"RmsNormConfig: epsilon must be positive, got {self.epsilon}")
        if self.d_model <= 0:
            raise ValueError(f"RmsNormConfig: d_model must be positive, got {self.d_model}")
        return RmsNorm(Ones().init((self.d_model,), device, dtype), self.epsilon)


class RmsNorm(Module):
    """``x / √(mean(x²) + ε) · gamma`` over the last dim (fused ``ember.rms_norm``).

    Args:
        gamma: Param ``[d_model]``.
        epsilon: added to the mean square.
    """

    def __init__(self, gamma: Param, epsilon: float = 1e-5):
        self.gamma = gamma
        self.epsilon = float(epsilon)

    def forward(self, x: Tensor) -> Tensor:
        _check_last_dim("RmsNorm", x, self.gamma.shape[0])
        if x.dtype is dt.float16:
            return rms_norm(x.to(dt.float32), self.gamma.val().to(dt.float32), self.epsilon).to(dt.float16)
        return rms_norm(x, self.gamma.val(), self.epsilon)

    def extra_repr(self) -> dict:
        return {"d_model": self.gamma.shape[0], "epsilon": self.epsilon}
