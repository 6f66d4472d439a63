"""The leaf layer: the op table and the dtypes, read by the kernels and by everything above them.

Nothing here imports from ember (see ``ember/_layers.py``); this ``__init__`` imports nothing,
so ``from ember.core import op_table`` loads that one module.
"""
