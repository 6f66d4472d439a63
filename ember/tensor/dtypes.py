"""Moved to :mod:`ember.core.dtypes` (the leaf layer, which the kernels may read); this name stays
importable for code written against it, as the very same module object."""

import sys

from ember.core import dtypes

sys.modules[__name__] = dtypes
