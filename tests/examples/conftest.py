"""Makes the example packages under ``examples/`` importable (``import text_classification``):
they are not installed, and their modules use absolute imports rooted at ``examples/``."""

from __future__ import annotations

import os
import sys

_EXAMPLES_DIR = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "examples"
)
if _EXAMPLES_DIR not in sys.path:
    sys.path.insert(0, _EXAMPLES_DIR)
