"""Dropout op family: masks from a counter-based hash, regenerated in backward instead of stored.

The hash (SplitMix64's finaliser over the element's counter and the seed) gives masks that are
bit-identical on every backend; :meth:`DropoutOps.dropout_keep_mask` is each backend's.
"""

from __future__ import annotations

from ember.kernels.families.declare import composite, primitive

GOLDEN = 0x9E3779B97F4A7C15
MIX1 = 0xBF58476D1CE4E5B9
MIX2 = 0x94D049BB133111EB


class DropoutOps:
    """Dropout forward and backward, scaled by ``1 / (1 - p)``."""

    @primitive
    def dropout_keep_mask(self, shape, p, seed):
        """Boolean keep-mask ``[shape]``: element i (row-major, counted from 1) is kept when the
        top 24 bits of ``splitmix64(i * GOLDEN + seed)``, as a fraction of 2**24, are >= ``p``."""

    @composite(half=())
    def dropout(self, x, p, seed):
        """``x`` with the elements the mask drops set to 0, the kept ones scaled by ``1 / (1 - p)``."""
        if p <= 0.0:
            return self.binary("mul", x, self._scalar(1.0, x))
        if p >= 1.0:
            return self.full(x.shape, 0.0, self.dtype_of(x))
        keep = self.dropout_keep_mask(x.shape, p, seed)
        return self.where(
            keep,
            self.binary("mul", x, self._scalar(1.0 / (1.0 - p), x)),
            self.full((), 0.0, self.dtype_of(x)),
        )

    @composite(half=())
    def dropout_backward(self, dy, p, seed):
        """The gradient: the same mask and scale applied to ``dy``."""
        return self.dropout(dy, p, seed)
