"""Normalisation op family: layer norm and RMS norm over the last axis, with their backward.

The forward returns the saved statistics (mean, rstd) beside the output; float16 inputs are
computed in float32 with float32 statistics.
"""

from __future__ import annotations

import math

from ember.kernels.families.declare import composite


class NormOps:
    """Layer norm and RMS norm over the last axis, forward and backward."""

    @composite(half=(1, 2))
    def layer_norm(self, x, gamma, beta, eps):
        """``((x - mean) * rstd * gamma + beta, mean, rstd)``; the statistics ``[*x.shape[:-1]]``; ``gamma``/``beta`` may be None."""
        ax = (x.ndim - 1,)
        d = max(x.shape[-1], 1)  # an empty axis: empty output, mean 0 and var 0 (no 0 / 0)
        mean = self.binary("div", self.reduce("sum", x, ax, True), self._scalar(d, x))
        xc = self.binary("sub", x, mean)
        var = self.binary("div", self.reduce("sum", self.unary("square", xc), ax, True), self._scalar(d, x))
        rstd = self.unary("rsqrt", self.binary("add", var, self._scalar(eps, x)))
        # a variance past the dtype's range would give rstd 0 and a row of zeros that looks
        # healthy: NaN instead (as PyTorch for a row with 1e20 in float32), forward and backward
        rstd = self.where(self.unary("isinf", var), self.full(rstd.shape, math.nan, self.dtype_of(x)), rstd)
        y = self.binary("mul", xc, rstd)
        if gamma is not None:
            y = self.binary("mul", y, gamma)
        if beta is not None:
            y = self.binary("add", y, beta)
        return y, self.reshape(mean, x.shape[:-1]), self.reshape(rstd, x.shape[:-1])

    @composite(half=())
    def layer_norm_backward(self, dy, x, mean, rstd, gamma):
        """``(dx, dgamma, dbeta)`` from the saved ``mean`` and ``rstd`` (``dgamma``, ``dbeta`` None without ``gamma``)."""
        ax = (x.ndim - 1,)
        d = max(x.shape[-1], 1)
        mean = self.reshape(mean, mean.shape + (1,))
        rstd = self.reshape(rstd, rstd.shape + (1,))
        xhat = self.binary("mul", self.binary("sub", x, mean), rstd)
        rows = tuple(range(x.ndim - 1))
        dgamma = dbeta = None
        g = dy
        if gamma is not None:
            dgamma = self.reduce("sum", self.binary("mul", dy, xhat), rows, False)
            dbeta = self.reduce("sum", dy, rows, False)
            g = self.binary("mul", dy, gamma)
        mg = self.binary("div", self.reduce("sum", g, ax, True), self._scalar(d, x))
        mgx = self.binary(
            "div", self.reduce("sum", self.binary("mul", g, xhat), ax, True), self._scalar(d, x)
        )
        dx = self.binary(
            "mul", self.binary("sub", self.binary("sub", g, mg), self.binary("mul", xhat, mgx)), rstd
        )
        return dx, dgamma, dbeta

    @composite(half=(1,))
    def rms_norm(self, x, gamma, eps):
        """``(x * rstd * gamma, rstd)`` with ``rstd = 1 / sqrt(mean(x²) + eps)``; ``gamma`` may be None."""
        ax = (x.ndim - 1,)
        ms = self.binary(
            "div", self.reduce("sum", self.unary("square", x), ax, True), self._scalar(max(x.shape[-1], 1), x)
        )
        rstd = self.unary("rsqrt", self.binary("add", ms, self._scalar(eps, x)))
        y = self.binary("mul", x, rstd)
        if gamma is not None:
            y = self.binary("mul", y, gamma)
        return y, self.reshape(rstd, x.shape[:-1])

    @composite(half=())
    def rms_norm_backward(self, dy, x, rstd, gamma):
        """``(dx, dgamma)`` from the saved ``rstd``; a row whose mean square overflowed gets NaN."""
        ax = (x.ndim - 1,)
        rstd = self.reshape(rstd, rstd.shape + (1,))
        xhat = self.binary("mul", x, rstd)
        dgamma = None
        g = dy
        if gamma is not None:
            dgamma = self.reduce("sum", self.binary("mul", dy, xhat), tuple(range(x.ndim - 1)), False)
            g = self.binary("mul", dy, gamma)
        mgx = self.binary(
            "div",
            self.reduce("sum", self.binary("mul", g, xhat), ax, True),
            self._scalar(max(x.shape[-1], 1), x),
        )
        dx = self.binary("mul", self.binary("sub", g, self.binary("mul", xhat, mgx)), rstd)
        # rstd 0: the mean square overflowed; the forward's x * 0 is PyTorch's, the gradient is
        # NaN (as PyTorch's at 3e38), not a 0 that hides the overflow
        overflowed = self.binary("eq", rstd, self._scalar(0.0, rstd))
        dx = self.where(overflowed, self.full(dx.shape, math.nan, self.dtype_of(dx)), dx)
        return dx, dgamma
