"""``MpiCommunicator``: collectives over MPI through mpi4py, for CPU processes on one or many hosts.

Only mpi4py's buffer (upper-case) collectives are used, on NumPy arrays: gradients and
parameters travel as raw memory, never pickled. Each collective is started non-blocking and
waited on by polling with a deadline, so a rank whose peer died raises
:class:`DistributedTimeoutError` after ``timeout`` seconds instead of hanging; polling also
drives MPI's progress engine. Install with ``pip install "ember[distributed]"`` (mpi4py and the
MPICH wheel), or build mpi4py against a cluster's own MPI.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .communicator import Communicator, HandlePending, PendingCollective, poll_until
from .environment import timeout_from_env
from .errors import DistributedTimeoutError, MissingDistributedDependency
from .failure import announce_rank, install_abort_on_exception

__all__ = ["MpiCommunicator", "import_mpi"]

_INSTALL_HINT = (
    'install it with `pip install "ember[distributed]"` (mpi4py and the MPICH wheel, whose '
    "mpiexec lands beside python), or `pip install mpi4py` built against your cluster's MPI"
)
# Polls of a request before the wait starts sleeping (a fast collective costs no sleep).
_SPIN_POLLS = 200


def import_mpi():
    """mpi4py's ``MPI`` module (importing it starts MPI).

    Raises:
        MissingDistributedDependency: mpi4py or its MPI library is missing; says what to install.
    """
    try:
        from mpi4py import MPI
    except ImportError as error:
        raise MissingDistributedDependency(
            f"ember.distributed needs mpi4py ({error}); {_INSTALL_HINT}"
        ) from error
    except RuntimeError as error:  # mpi4py present, its MPI library not loadable
        raise MissingDistributedDependency(
            f"ember.distributed: mpi4py cannot load an MPI library ({error}); {_INSTALL_HINT}"
        ) from error
    return MPI


class MpiCommunicator(Communicator):
    """The ranks of an MPI job (``mpiexec -n N python script.py``, ``srun``, or one process alone).

    Args:
        comm: an ``mpi4py.MPI.Comm``; ``MPI.COMM_WORLD`` by default.
        timeout: seconds a collective may wait for the other ranks; default
            ``EMBER_DISTRIBUTED_TIMEOUT`` or 300.

    Raises:
        MissingDistributedDependency: mpi4py or an MPI is not installed.

    With more than one rank, an uncaught exception in this process prints which rank failed
    and aborts the job (see :mod:`ember.distributed.failure`).
    """

    def __init__(self, comm: Any = None, timeout: float | None = None):
        mpi = import_mpi()
        self._mpi = mpi
        self.comm = mpi.COMM_WORLD if comm is None else comm
        self.rank = int(self.comm.Get_rank())
        self.world_size = int(self.comm.Get_size())
        self.timeout = timeout_from_env() if timeout is None else float(timeout)
        if not self.timeout > 0:
            raise ValueError(f"MpiCommunicator: timeout must be > 0 seconds, got {timeout!r}")
        self._ops = {"sum": mpi.SUM, "max": mpi.MAX, "min": mpi.MIN}
        self._count = 0  # collectives so far, to say which one timed out
        if self.world_size > 1:
            announce_rank(self.rank, self.world_size)
            install_abort_on_exception(self.rank, self.world_size, self.abort)

    # ---- waiting ----------------------------------------------------------------------------
    def _wait(self, request, what: str) -> None:
        if not poll_until(request.Test, self.timeout, _SPIN_POLLS):
            raise DistributedTimeoutError(
                f"MpiCommunicator: rank {self.rank} of {self.world_size} waited {self.timeout:g} s in "
                f"{what} (collective #{self._count}) and the other ranks did not join: a rank has "
                "died, hangs, or runs far behind (raise EMBER_DISTRIBUTED_TIMEOUT if it is only slow)"
            )

    def _started(self, request, what: str) -> HandlePending:
        self._count += 1
        return HandlePending(self, request, what)

    # ---- device collectives -----------------------------------------------------------------
    def start_allreduce_sum(self, array: np.ndarray) -> PendingCollective:
        _check_buffer("start_allreduce_sum", array)
        request = self.comm.Iallreduce(self._mpi.IN_PLACE, array, op=self._mpi.SUM)
        return self._started(request, f"allreduce of {array.size} {array.dtype} values")

    def broadcast_array(self, array: np.ndarray, root: int = 0) -> None:
        _check_buffer("broadcast_array", array)
        self._started(self.comm.Ibcast(array, root=root), f"broadcast of {array.size} {array.dtype}").wait()

    # ---- host collectives -------------------------------------------------------------------
    def allreduce_host(self, array: np.ndarray, op: str = "sum") -> None:
        _check_buffer("allreduce_host", array)
        if op not in self._ops:
            raise ValueError(
                f"MpiCommunicator.allreduce_host: op must be one of {sorted(self._ops)}, got {op!r}"
            )
        request = self.comm.Iallreduce(self._mpi.IN_PLACE, array, op=self._ops[op])
        self._started(request, f"allreduce ({op}) of {array.size} {array.dtype}").wait()

    def broadcast_bytes(self, data: bytes | None, root: int = 0) -> bytes:
        size = np.array([len(data) if self.rank == root else 0], dtype=np.int64)
        self.broadcast_array(size, root)
        buffer = (
            np.frombuffer(data, dtype=np.uint8).copy()
            if self.rank == root
            else np.empty(int(size[0]), np.uint8)
        )
        if buffer.size:
            self.broadcast_array(buffer, root)
        return buffer.tobytes()

    def gather_bytes(self, data: bytes, root: int = 0) -> list[bytes] | None:
        sizes = np.zeros(self.world_size, dtype=np.int64) if self.rank == root else None
        mine = np.array([len(data)], dtype=np.int64)
        self._started(self.comm.Igather(mine, sizes, root=root), "gather of sizes").wait()
        send = np.frombuffer(data, dtype=np.uint8)
        if self.rank != root:
            self._started(self.comm.Igatherv(send, None, root=root), "gather of bytes").wait()
            return None
        counts = [int(n) for n in sizes]
        offsets = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        received = np.empty(int(sum(counts)), dtype=np.uint8)
        spec = [received, counts, [int(o) for o in offsets], self._mpi.BYTE]
        self._started(self.comm.Igatherv(send, spec, root=root), "gather of bytes").wait()
        return [received[o : o + n].tobytes() for o, n in zip(offsets, counts)]

    def barrier(self) -> None:
        self._started(self.comm.Ibarrier(), "barrier").wait()

    def abort(self, code: int = 1) -> None:
        self.comm.Abort(int(code))


def _check_buffer(op: str, array: Any) -> None:
    if not isinstance(array, np.ndarray):
        raise TypeError(
            f"MpiCommunicator.{op}: expected a NumPy array (a tensor of the reference or cpu backend), "
            f"got {type(array).__name__}; GPU arrays go through NcclCommunicator"
        )
    if not array.flags.c_contiguous:
        raise ValueError(f"MpiCommunicator.{op}: the array (shape {list(array.shape)}) must be C-contiguous")
