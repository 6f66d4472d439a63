"""Training strategies accepted by ``SupervisedTraining.with_training_strategy`` (Burn's
``TrainingStrategy`` / ``ExecutionStrategy``, ``strategies/base.rs``).

Only one device is built today; the multi-device and distributed strategies are accepted
as values (so code written for them reads as in Burn) and refused at launch with a clear
error until their issue lands.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["DistributedDataParallel", "MultiDevice", "SingleDevice", "TrainingStrategy"]


class TrainingStrategy:
    """Base of every strategy."""

    def check_supported(self) -> None:
        """Raise ``NotImplementedError`` when this strategy cannot run yet."""


@dataclass(frozen=True)
class SingleDevice(TrainingStrategy):
    """Train on one device (default: the device of the model's first parameter).

    Args:
        device: an ``ember.Device`` or a name such as ``"cpu"``; None keeps the model's.
    """

    device: Any = None


@dataclass(frozen=True)
class MultiDevice(TrainingStrategy):
    """One model replica per device, gradients gathered on the main device (Burn's
    ``MultiDevice``). With a single device it is :class:`SingleDevice`, as in Burn.

    Args:
        devices: the devices.
        optim: ``"main_device"`` (Burn's OptimMainDevice) or ``"sharded"`` (OptimSharded).
    """

    devices: tuple = field(default_factory=tuple)
    optim: str = "main_device"

    def check_supported(self) -> None:
        if len(self.devices) > 1:
            raise NotImplementedError(
                f"SupervisedTraining: MultiDevice over {len(self.devices)} devices is not built yet "
                "(tracked by the distributed-training issue); use SingleDevice or one device"
            )


@dataclass(frozen=True)
class DistributedDataParallel(TrainingStrategy):
    """Data-parallel training across processes (Burn's ``DistributedDataParallel``).

    Args:
        devices: the local devices of this process.
        communicator: the communicator (MPI or NCCL) once ``ember.distributed`` exists.
    """

    devices: tuple = field(default_factory=tuple)
    communicator: Any = None

    def check_supported(self) -> None:
        raise NotImplementedError(
            "SupervisedTraining: DistributedDataParallel is not built yet (it comes with "
            "ember.distributed, MPI via mpi4py and NCCL via CuPy); train on a single device for now"
        )
