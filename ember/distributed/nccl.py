"""``NcclCommunicator``: gradient all-reduce and parameter broadcast between GPUs with NCCL,
through CuPy (``cupy.cuda.nccl``).

NCCL moves the device arrays (CuPy buffers, GPU to GPU, never through the host); MPI still
starts the ranks, broadcasts NCCL's unique id from rank 0, and carries the host collectives
(records, metric outputs, stop flags). Each rank drives one GPU: by default the one numbered
by its rank among the ranks of its host. Waits on NCCL are bounded like MPI's: a collective
not done within the timeout aborts the NCCL communicator and raises.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from .communicator import Communicator, HandlePending, PendingCollective, poll_until
from .errors import DistributedTimeoutError, MissingDistributedDependency
from .mpi import MpiCommunicator

__all__ = ["NcclCommunicator", "import_nccl"]

_LOCAL_RANK_VARIABLES = ("MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "LOCAL_RANK")


def import_nccl():
    """``(cupy, cupy.cuda.nccl)``.

    Raises:
        MissingDistributedDependency: CuPy or its NCCL binding is missing; says what to install.
    """
    try:
        import cupy
        from cupy.cuda import nccl
    except ImportError as error:
        raise MissingDistributedDependency(
            f"NcclCommunicator needs CuPy with NCCL ({error}); install the CUDA extra "
            '(`pip install "ember[cuda,distributed]"`, i.e. cupy-cuda12x, whose wheels bundle NCCL) '
            "on a machine with NVIDIA GPUs, or train on CPUs with MpiCommunicator"
        ) from error
    if not getattr(nccl, "available", True):
        raise MissingDistributedDependency(
            "NcclCommunicator: this CuPy was built without NCCL; install a cupy-cuda12x wheel "
            "(it bundles NCCL) or train on CPUs with MpiCommunicator"
        )
    return cupy, nccl


def _local_rank(rank: int) -> int:
    for name in _LOCAL_RANK_VARIABLES:
        raw = os.environ.get(name, "").strip()
        if raw.isdigit():
            return int(raw)
    return rank


class NcclCommunicator(Communicator):
    """The GPUs of a distributed run, one per rank.

    Args:
        device: this rank's CUDA device index; default the rank's index on its host.
        host: the MPI communicator for start-up and host collectives; a new
            :class:`MpiCommunicator` when None.
        timeout: seconds a wait may take; default the host communicator's.

    Raises:
        MissingDistributedDependency: CuPy/NCCL or mpi4py is missing.
    """

    def __init__(
        self, device: int | None = None, host: MpiCommunicator | None = None, timeout: float | None = None
    ):
        cupy, nccl = import_nccl()
        self._cupy, self._nccl = cupy, nccl
        self.host = host if host is not None else MpiCommunicator(timeout=timeout)
        self.rank, self.world_size = self.host.rank, self.host.world_size
        self.timeout = self.host.timeout if timeout is None else float(timeout)
        count = cupy.cuda.runtime.getDeviceCount()
        self.device = int(device) if device is not None else _local_rank(self.rank) % max(count, 1)
        cupy.cuda.Device(self.device).use()
        unique_id = nccl.get_unique_id() if self.rank == 0 else None
        raw = self.host.broadcast_bytes(
            np.asarray(unique_id, dtype=np.int16).tobytes() if self.rank == 0 else None
        )
        unique_id = tuple(int(v) for v in np.frombuffer(raw, dtype=np.int16))
        self.comm = nccl.NcclCommunicator(self.world_size, unique_id, self.rank)
        self.stream = cupy.cuda.Stream(non_blocking=True)
        self._types = {
            np.dtype(np.float16): nccl.NCCL_FLOAT16,
            np.dtype(np.float32): nccl.NCCL_FLOAT32,
            np.dtype(np.float64): nccl.NCCL_FLOAT64,
            np.dtype(np.int32): nccl.NCCL_INT32,
            np.dtype(np.int64): nccl.NCCL_INT64,
            np.dtype(np.uint8): nccl.NCCL_UINT8,
        }

    def _nccl_type(self, op: str, array: Any) -> int:
        if not isinstance(array, self._cupy.ndarray):
            raise TypeError(
                f"NcclCommunicator.{op}: expected a CuPy array (a tensor of the cuda backend), got "
                f"{type(array).__name__}; CPU arrays go through MpiCommunicator"
            )
        if not array.flags.c_contiguous:
            raise ValueError(
                f"NcclCommunicator.{op}: the array (shape {list(array.shape)}) must be C-contiguous"
            )
        kind = self._types.get(np.dtype(array.dtype))
        if kind is None:
            raise TypeError(f"NcclCommunicator.{op}: dtype {array.dtype} is not one NCCL reduces here")
        return kind

    def _enqueued(self, what: str) -> HandlePending:
        event = self._cupy.cuda.Event(disable_timing=True)
        event.record(self.stream)
        return HandlePending(self, event, what)

    def _wait(self, event, what: str) -> None:
        if not poll_until(lambda: event.done, self.timeout):
            self.comm.abort()
            raise DistributedTimeoutError(
                f"NcclCommunicator: rank {self.rank} of {self.world_size} waited {self.timeout:g} s in "
                f"{what} and the other ranks did not join: a rank has died, hangs, or runs far behind"
            )

    def start_allreduce_sum(self, array: Any) -> PendingCollective:
        kind = self._nccl_type("start_allreduce_sum", array)
        # The array was written on the default stream; NCCL's stream must see those writes.
        self.stream.wait_event(self._cupy.cuda.get_current_stream().record())
        ptr = array.data.ptr
        self.comm.allReduce(ptr, ptr, array.size, kind, self._nccl.NCCL_SUM, self.stream.ptr)
        return self._enqueued(f"NCCL all-reduce of {array.size} {array.dtype}")

    def broadcast_array(self, array: Any, root: int = 0) -> None:
        kind = self._nccl_type("broadcast_array", array)
        self.stream.wait_event(self._cupy.cuda.get_current_stream().record())
        ptr = array.data.ptr
        self.comm.broadcast(ptr, ptr, array.size, kind, root, self.stream.ptr)
        self._enqueued(f"NCCL broadcast of {array.size} {array.dtype}").wait()

    # Host collectives go through MPI.
    def allreduce_host(self, array: np.ndarray, op: str = "sum") -> None:
        self.host.allreduce_host(array, op)

    def broadcast_bytes(self, data: bytes | None, root: int = 0) -> bytes:
        return self.host.broadcast_bytes(data, root)

    def gather_bytes(self, data: bytes, root: int = 0) -> list[bytes] | None:
        return self.host.gather_bytes(data, root)

    def barrier(self) -> None:
        self.host.barrier()

    def abort(self, code: int = 1) -> None:
        try:
            self.comm.abort()
        finally:
            self.host.abort(code)
