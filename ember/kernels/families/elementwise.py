"""Element-wise op family: casts, the op table's unary and binary ops, and selection.

The op names ``unary`` and ``binary`` take come from the op table (``ember/core/op_table.py``).
"""

from __future__ import annotations

from ember.core import op_table
from ember.kernels.families.declare import primitive

UNARY_OPS = op_table.names(op_table.UNARY)
BINARY_OPS = op_table.names(op_table.BINARY)


class ElementwiseOps:
    """One output element from the same element of each input."""

    @primitive
    def cast(self, x, dtype):
        """``x`` converted to ``dtype`` (NumPy's casting: float to int truncates)."""

    @primitive
    def unary(self, op, x):
        """The unary op ``op`` (one of :data:`UNARY_OPS`) of ``x``, in ``x``'s dtype."""

    @primitive
    def binary(self, op, a, b):
        """The binary op ``op`` (one of :data:`BINARY_OPS`) of ``a`` and ``b``, broadcast."""

    @primitive
    def where(self, cond, a, b):
        """``a`` where ``cond`` is True, else ``b``, broadcast."""
