"""``Communicator``: what data-parallel training needs from a collective engine (MPI, NCCL).

Two kinds of operations:

* **device collectives** on the arrays of the backend being trained (NumPy arrays for the
  ``reference`` and ``cpu`` backends with MPI, CuPy arrays on a GPU with NCCL): the gradient
  all-reduce and the parameter broadcast. They work on buffers in place; nothing is pickled.
* **host collectives** on small NumPy arrays and byte strings (records, metric outputs, stop
  flags), always over MPI, which also starts every rank.

Every blocking wait is bounded by ``timeout`` seconds: a rank whose peer died or hangs raises
:class:`~ember.distributed.errors.DistributedTimeoutError` instead of waiting forever.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["Communicator", "PendingCollective"]

_FIRST_PAUSE_S, _MAX_PAUSE_S = 2e-5, 1e-3


def poll_until(done: Callable[[], bool], timeout: float, spin_polls: int = 0) -> bool:
    """Poll ``done()`` until it is true (then True) or ``timeout`` seconds have passed (then
    False): the first ``spin_polls`` polls back to back, so a fast collective costs no sleep,
    then sleeping between polls, 20 µs doubling up to 1 ms."""
    deadline = time.monotonic() + timeout
    polls, pause = 0, _FIRST_PAUSE_S
    while not done():
        polls += 1
        if polls <= spin_polls:
            continue
        if time.monotonic() > deadline:
            return False
        time.sleep(pause)
        pause = min(pause * 2, _MAX_PAUSE_S)
    return True


class PendingCollective(ABC):
    """A started collective; :meth:`wait` blocks (at most the communicator's timeout) until done."""

    @abstractmethod
    def wait(self) -> None:
        """Block until the collective has completed on this rank.

        Raises:
            DistributedTimeoutError: it did not complete within the timeout.
        """


class HandlePending(PendingCollective):
    """A collective started on ``communicator`` that its ``_wait(handle, what)`` completes: the
    handle is MPI's request or the CUDA event recorded after an NCCL call, ``what`` names the
    collective in a timeout's message."""

    __slots__ = ("_communicator", "_handle", "_what")

    def __init__(self, communicator: Any, handle: Any, what: str):
        self._communicator = communicator
        self._handle = handle
        self._what = what

    def wait(self) -> None:
        self._communicator._wait(self._handle, self._what)


class Communicator(ABC):
    """The ranks of a distributed run and their collectives.

    Attributes:
        rank: this process's rank, 0 … ``world_size - 1``.
        world_size: the number of ranks.
        timeout: seconds any wait may take before it raises.
    """

    rank: int
    world_size: int
    timeout: float

    @property
    def is_main(self) -> bool:
        """True on rank 0, the rank that writes artifacts and shows the display."""
        return self.rank == 0

    # ---- device collectives (arrays of the trained backend) ----------------------------------
    @abstractmethod
    def start_allreduce_sum(self, array: Any) -> PendingCollective:
        """Start summing ``array`` over the ranks, in place (a contiguous 1-D buffer).

        Args:
            array: a NumPy array (MPI) or a CuPy array on this rank's GPU (NCCL).
        """

    @abstractmethod
    def broadcast_array(self, array: Any, root: int = 0) -> None:
        """Overwrite ``array`` on every rank with ``root``'s values (same shape and dtype)."""

    def allreduce_sum(self, array: Any) -> None:
        """Sum ``array`` over the ranks, in place, and wait for the result."""
        self.start_allreduce_sum(array).wait()

    # ---- host collectives (NumPy arrays and bytes) --------------------------------------------
    @abstractmethod
    def allreduce_host(self, array: np.ndarray, op: str = "sum") -> None:
        """Reduce a NumPy array over the ranks in place.

        Args:
            array: a contiguous NumPy array.
            op: ``"sum"``, ``"max"`` or ``"min"``.
        """

    @abstractmethod
    def broadcast_bytes(self, data: bytes | None, root: int = 0) -> bytes:
        """``root``'s bytes on every rank (the other ranks pass None)."""

    @abstractmethod
    def gather_bytes(self, data: bytes, root: int = 0) -> list[bytes] | None:
        """Every rank's bytes, in rank order, on ``root``; None on the other ranks."""

    @abstractmethod
    def barrier(self) -> None:
        """Return once every rank has reached this call."""

    @abstractmethod
    def abort(self, code: int = 1) -> None:
        """End every rank of the job now (after a failure nothing else can recover from)."""

    def any(self, flag: bool) -> bool:
        """True on every rank when ``flag`` is true on at least one."""
        value = np.array([1 if flag else 0], dtype=np.int32)
        self.allreduce_host(value, "max")
        return bool(value[0])

    def broadcast_value(self, values: tuple[int, ...], root: int = 0) -> tuple[int, ...]:
        """``root``'s tuple of integers on every rank."""
        array = np.asarray(values, dtype=np.int64)
        raw = self.broadcast_bytes(array.tobytes() if self.rank == root else None, root)
        return tuple(int(v) for v in np.frombuffer(raw, dtype=np.int64))

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(rank={self.rank}, world_size={self.world_size}, timeout={self.timeout})"
        )
