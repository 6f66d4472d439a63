"""Activation op family: GELU, the SwiGLU gate, and the softmax family over the last axis.

Composites, each with its default composed from primitives (:mod:`.declare`); ``cpu`` and
``cuda`` fuse them. An empty last axis gives an empty result.
"""

from __future__ import annotations

import math

from ember.kernels.families.declare import composite


class ActivationOps:
    """GELU (exact and tanh), the SwiGLU gate, softmax, log-softmax; each forward with its backward."""

    @composite(half=())
    def softmax(self, x):
        """``exp(x) / sum(exp(x))`` over the last axis (shifted by the row max)."""
        if x.shape[-1] == 0:  # an empty axis: nothing to normalise (NumPy's max would raise)
            return self.full(x.shape, 0.0, self.dtype_of(x))
        m = self.reduce("max", x, (x.ndim - 1,), True)
        e = self.unary("exp", self.binary("sub", x, m))
        return self.binary("div", e, self.reduce("sum", e, (x.ndim - 1,), True))

    @composite(half=())
    def softmax_backward(self, y, dy):
        """``dx = y * (dy - sum(dy * y))`` from the softmax output ``y``."""
        s = self.reduce("sum", self.binary("mul", dy, y), (y.ndim - 1,), True)
        return self.binary("mul", y, self.binary("sub", dy, s))

    @composite(half=())
    def log_softmax(self, x):
        """``(x - max) - log(sum(exp(x - max)))`` over the last axis."""
        # (x - max) - log(sum(exp(x - max))), as PyTorch: exact 0 for a dominant logit at any
        # magnitude (x - logsumexp(x) rounds log(sum) away beside 3e38), and NaN for a row with
        # +inf or of -inf only, as softmax gives
        if x.shape[-1] == 0:
            return x
        return self._shifted_log_softmax(x)[0]

    def _shifted_log_softmax(self, x):
        """``(log_softmax(x), log(sum(exp(x - max))))`` over the last axis."""
        shifted = self.binary("sub", x, self.reduce("max", x, (x.ndim - 1,), True))
        log_total = self.unary("log", self.reduce("sum", self.unary("exp", shifted), (x.ndim - 1,), True))
        return self.binary("sub", shifted, log_total), log_total

    @composite(half=())
    def log_softmax_backward(self, y, dy):
        """``dx = dy - exp(y) * sum(dy)`` from the log-softmax output ``y``."""
        s = self.reduce("sum", dy, (y.ndim - 1,), True)
        return self.binary("sub", dy, self.binary("mul", self.unary("exp", y), s))

    def _logsumexp(self, x):
        """log(sum(exp(x))) over the last axis, keepdim; stable for -inf rows; -inf for an
        empty axis (the log of an empty sum)."""
        if x.shape[-1] == 0:
            return self.full(x.shape[:-1] + (1,), -math.inf, self.dtype_of(x))
        m = self.reduce("max", x, (x.ndim - 1,), True)
        m = self.where(self.unary("isfinite", m), m, self.full(m.shape, 0.0, self.dtype_of(m)))
        e = self.unary("exp", self.binary("sub", x, m))
        return self.binary("add", self.unary("log", self.reduce("sum", e, (x.ndim - 1,), True)), m)

    @composite(half=())
    def gelu(self, x, approximate):
        """GELU: ``x * Phi(x)`` (``approximate`` False) or ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x³)))``."""
        half = self._scalar(0.5, x)
        if approximate:
            # 0.5 (1 + tanh z) == sigmoid(2z): no cancellation where tanh z is close to -1
            return self.binary("mul", x, self._gelu_tanh_sigmoid(x, 1.0))
        cdf = self.binary(
            "mul",
            half,
            self.binary(
                "add",
                self._scalar(1.0, x),
                self.unary("erf", self.binary("mul", x, self._scalar(1 / math.sqrt(2), x))),
            ),
        )
        return self.binary("mul", x, cdf)

    @composite(half=())
    def gelu_backward(self, x, dy, approximate):
        """``dy * gelu'(x)``, with the limits 0 and 1 beyond ``|x| = 1e4``."""
        one, half = self._scalar(1.0, x), self._scalar(0.5, x)
        # beyond |x| = 1e4 the derivative is exactly 1 (or 0): clamping keeps x² finite, so
        # huge and infinite inputs give that limit rather than inf * 0 = NaN (NaN stays NaN)
        high, low = self._scalar(1e4, x), self._scalar(-1e4, x)
        x = self.where(self.binary("gt", x, high), high, self.where(self.binary("lt", x, low), low, x))
        if approximate:
            c = math.sqrt(2 / math.pi)
            # with s = sigmoid(2z): 0.5 (1 + tanh z) = s and 0.5 (1 - tanh² z) = 2 s (1 - s),
            # where 1 - s = sigmoid(-2z) is computed directly (accurate in float32 for z << 0)
            s, s_neg = self._gelu_tanh_sigmoid(x, 1.0), self._gelu_tanh_sigmoid(x, -1.0)
            dinner = self.binary(
                "mul",
                self._scalar(c, x),
                self.binary(
                    "add", one, self.binary("mul", self._scalar(3 * 0.044715, x), self.unary("square", x))
                ),
            )
            d = self.binary(
                "add",
                s,
                self.binary(
                    "mul",
                    self.binary(
                        "mul", self.binary("mul", self._scalar(2.0, x), x), self.binary("mul", s, s_neg)
                    ),
                    dinner,
                ),
            )
            return self.binary("mul", dy, d)
        cdf = self.binary(
            "mul",
            half,
            self.binary(
                "add", one, self.unary("erf", self.binary("mul", x, self._scalar(1 / math.sqrt(2), x)))
            ),
        )
        pdf = self.binary(
            "mul",
            self._scalar(1 / math.sqrt(2 * math.pi), x),
            self.unary("exp", self.binary("mul", self._scalar(-0.5, x), self.unary("square", x))),
        )
        return self.binary("mul", dy, self.binary("add", cdf, self.binary("mul", x, pdf)))

    @composite(half=())
    def swiglu(self, a, b):
        """``silu(a) * b = (a * sigmoid(a)) * b``, element-wise; ``a`` and ``b`` of one shape."""
        return self.binary("mul", self.binary("mul", a, self.unary("sigmoid", a)), b)

    @composite(half=())
    def swiglu_backward(self, a, b, dy):
        """``(da, db)`` of :meth:`swiglu`: ``da = (dy * b) * (s * (1 + a * (1 - s)))`` with
        ``s = sigmoid(a)`` (PyTorch's silu derivative: finite at any finite ``a``) and
        ``db = dy * (a * s)``."""
        one = self._scalar(1.0, a)
        s = self.unary("sigmoid", a)
        dsilu = self.binary(
            "mul", s, self.binary("add", one, self.binary("mul", a, self.binary("sub", one, s)))
        )
        da = self.binary("mul", self.binary("mul", dy, b), dsilu)
        return da, self.binary("mul", dy, self.binary("mul", a, s))

    def _gelu_tanh_sigmoid(self, x, sign):
        """sigmoid(±2z), z the tanh-GELU inner term."""
        return self.unary(
            "sigmoid", self.binary("mul", self._scalar(2.0 * sign, x), self._gelu_tanh_inner(x))
        )

    def _gelu_tanh_inner(self, x):
        x3 = self.binary("mul", self.unary("square", x), x)
        return self.binary(
            "mul",
            self._scalar(math.sqrt(2 / math.pi), x),
            self.binary("add", x, self.binary("mul", self._scalar(0.044715, x), x3)),
        )
