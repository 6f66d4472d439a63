"""Moved to :mod:`ember.core.op_table` (the leaf layer, which the kernels may read); this name stays
importable for code written against it, as the very same module object."""

import sys

from ember.core import op_table

sys.modules[__name__] = op_table
