"""Autotune: kernels with several ways to run measure them on first use for an input class,
keep the winner in a cache shared by processes, and reuse it (Burn/CubeCL's autotune).

:mod:`~.tunable` declares a tuned op and decides; :mod:`~.cache` keeps the decisions on disk
(one JSON-lines file per op, per ember version and machine fingerprint, under a file lock);
:mod:`~.fingerprint` says what identifies the machine; :mod:`~.log` writes the autotune log.
Configured by ``[autotune]`` in ``ember.toml``: ``level``, ``cache``, ``logger``.
"""

# ruff: noqa: F403  (a module whose whole __all__ is re-exported is star-imported, so its
# public names are listed once, in its own __all__)

from . import cache as _cache
from . import tunable as _tunable
from .cache import *
from .fingerprint import fingerprint, folder_name
from .log import LOG
from .tunable import *

__all__ = [*_tunable.__all__, *_cache.__all__, "LOG", "fingerprint", "folder_name"]
