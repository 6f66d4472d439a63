"""The errors of ``ember.distributed``."""

from __future__ import annotations

__all__ = ["DistributedError", "DistributedTimeoutError", "MissingDistributedDependency"]


class DistributedError(RuntimeError):
    """A collective operation or the set-up of a distributed run failed."""


class DistributedTimeoutError(DistributedError):
    """A collective did not complete in time: a peer rank died, hangs or is far behind."""


class MissingDistributedDependency(DistributedError, ImportError):
    """An engine ember.distributed drives (mpi4py, an MPI, CuPy's NCCL) is not installed."""
