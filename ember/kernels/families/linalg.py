"""Linear-algebra op family: the matrix product, and the linear layer composed from it."""

from __future__ import annotations

from ember.kernels.families.declare import composite, primitive


class LinalgOps:
    """Matrix products."""

    @primitive
    def matmul(self, a, b):
        """``a @ b`` with NumPy's broadcasting of leading (batch) axes; one dtype."""

    @composite
    def linear(self, x, w, b):
        """``x [N, d_in] @ w [d_in, d_out] + b [d_out]`` (``b`` None: no bias), all one dtype."""
        y = self.matmul(x, w)
        return y if b is None else self.binary("add", y, b)
