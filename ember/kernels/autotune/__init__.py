"""Autotune: kernels with several ways to run measure them on first use for an input class,
keep the winner in a cache shared by processes, and reuse it (Burn/CubeCL's autotune).

:mod:`~.tunable` declares a tuned op and decides; :mod:`~.cache` keeps the decisions on disk
(one JSON-lines file per op, per ember version and machine fingerprint, under a file lock);
:mod:`~.fingerprint` says what identifies the machine; :mod:`~.log` writes the autotune log.
Configured by ``[autotune]`` in ``ember.toml``: ``level``, ``cache``, ``logger``.
"""

from .cache import Store, cache_folder
from .fingerprint import fingerprint, folder_name
from .log import LOG
from .tunable import (
    LEVELS,
    Candidate,
    Tunable,
    anchor,
    forced,
    key,
    measured_count,
    paced,
    reset,
    store,
    tunables,
)

__all__ = [
    "LEVELS",
    "LOG",
    "Candidate",
    "Store",
    "Tunable",
    "anchor",
    "cache_folder",
    "fingerprint",
    "folder_name",
    "forced",
    "key",
    "measured_count",
    "paced",
    "reset",
    "store",
    "tunables",
]
