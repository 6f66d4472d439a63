"""Reduction and scan op family."""

from __future__ import annotations

from ember.core import op_table
from ember.kernels.families.declare import primitive

REDUCE_OPS = op_table.names(op_table.REDUCE)


class ReductionOps:
    """Reductions over axes, arg-reductions, scans and sorting."""

    @primitive
    def reduce(self, op, x, axes, keepdim):
        """The reduction ``op`` (one of :data:`REDUCE_OPS`) of ``x`` over ``axes``; ``sum`` and
        ``prod`` keep ``x``'s dtype."""

    @primitive
    def arg_reduce(self, op, x, axis, keepdim):
        """``argmax`` or ``argmin`` over ``axis`` as int64 (the first position on ties)."""

    @primitive
    def cumsum(self, x, axis):
        """The running sum along ``axis``, in ``x``'s dtype."""

    @primitive
    def sort(self, x, axis, descending):
        """``(sorted values, int64 positions)`` along ``axis``: stable, NaN last ascending and
        first descending, as PyTorch."""
