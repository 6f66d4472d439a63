"""Movement and indexing op family: views, copies, and reads and writes at indices.

Index arrays are int64, in range (the tensor layer checks them first).
"""

from __future__ import annotations

from ember.kernels.families.declare import primitive


class MovementOps:
    """Reshaping, permuting, slicing, joining, and indexed reads and writes."""

    @primitive
    def reshape(self, x, shape):
        """``x`` with a new shape of the same size (a view where the layout allows)."""

    @primitive
    def permute(self, x, axes):
        """``x`` with its axes in the order ``axes``."""

    @primitive
    def expand(self, x, shape):
        """``x`` broadcast to ``shape`` (a read-only view)."""

    @primitive
    def getitem(self, x, key):
        """``x[key]`` with NumPy's indexing (slices, ints, int arrays, bool masks)."""

    @primitive
    def pad(self, x, pad_width, value):
        """``x`` padded with ``value``: ``pad_width`` is ``((before, after), ...)`` per axis."""

    @primitive
    def cat(self, xs, axis):
        """The arrays ``xs`` joined along ``axis``."""

    @primitive
    def flip(self, x, axes):
        """``x`` reversed along ``axes``."""

    @primitive
    def tile(self, x, reps):
        """``x`` repeated ``reps`` times along each axis."""

    @primitive
    def gather(self, x, axis, idx):
        """``out[..., i, ...] = x[..., idx[..., i, ...], ...]`` along ``axis``."""

    @primitive
    def scatter_add(self, x, axis, idx, src):
        """A copy of ``x`` with ``src`` added at ``idx`` along ``axis``; repeats accumulate."""

    @primitive
    def index_select(self, x, axis, idx):
        """The entries of ``x`` at the 1-D ``idx`` along ``axis``."""

    @primitive
    def index_add(self, x, key, values):
        """A copy of ``x`` with ``values`` added at ``x[key]``; repeated indices accumulate."""

    @primitive
    def index_put(self, x, key, values, accumulate):
        """A copy of ``x`` with ``values`` written at ``x[key]`` (added when ``accumulate``)."""
