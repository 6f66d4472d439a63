"""Training strategies accepted by ``SupervisedTraining.with_training_strategy`` (Burn's
``TrainingStrategy`` / ``ExecutionStrategy``, ``strategies/base.rs``).

A strategy is the object the training loop asks, at a few points, how this process takes
part in the run: which device it trains on, which loader it reads, what becomes of a step's
gradients and output, and whether a decision holds for every process. The defaults of
:class:`TrainingStrategy` are one process (they change nothing); :class:`DistributedDataParallel`
shards the data, averages the gradients and merges the metrics across ranks through
``ember.distributed``. :class:`MultiDevice` over several devices in one process is accepted as
a value (so code written for it reads as in Burn) and refused at launch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ember.distributed import (
    GradientAverager,
    MpiCommunicator,
    NcclCommunicator,
    ShardedDataLoader,
    broadcast_learner_state,
    gather_output,
)

__all__ = ["DistributedDataParallel", "MultiDevice", "SingleDevice", "TrainingStrategy"]


class TrainingStrategy:
    """Base of every strategy; its hooks are those of a single process."""

    def check_supported(self) -> None:
        """Raise ``NotImplementedError`` when this strategy cannot run."""

    def run_device(self) -> Any:
        """The device this process trains on; None keeps the model's."""
        return None

    # ---- the training loop's hooks -----------------------------------------------------------
    @property
    def is_main(self) -> bool:
        """Whether this process writes the artifacts (logs, checkpoints, plots) and shows the run."""
        return True

    def start(self, learner) -> None:
        """Called once before the first epoch (after a resume), on every process."""

    def loader(self, loader):
        """The loader this process reads for a split (given the one passed to the builder)."""
        return loader

    def gradients(self, grads, model, loader):
        """The gradients the optimizer applies, given this process's gradients of one step."""
        return grads

    def metric_item(self, item, loader):
        """The step output the metrics see (None: this process measures nothing)."""
        return item

    def any_process(self, flag: bool) -> bool:
        """True when ``flag`` is true in at least one process of the run."""
        return flag

    def from_main(self, values: tuple[int, ...]) -> tuple[int, ...]:
        """The main process's integers, in every process."""
        return values


@dataclass(frozen=True)
class SingleDevice(TrainingStrategy):
    """Train on one device (default: the device of the model's first parameter).

    Args:
        device: an ``ember.Device`` or a name such as ``"cpu"``; None keeps the model's.
    """

    device: Any = None

    def run_device(self) -> Any:
        return self.device


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
                f"SupervisedTraining: MultiDevice over {len(self.devices)} devices in one process is not "
                "built; run one process per device with DistributedDataParallel "
                "(python -m ember.distributed.launch -n N script.py)"
            )

    def run_device(self) -> Any:
        return self.devices[0] if self.devices else None


class DistributedDataParallel(TrainingStrategy):
    """Data-parallel training, one process (rank) per device (Burn's ``DistributedDataParallel``).

    Every rank runs the same script. At the start, rank 0's model, optimizer state and
    schedule are broadcast to all. In every epoch each rank reads its part of every step (the
    loader's batch size is the batch of one rank; the global order is a single process's, see
    :class:`ember.distributed.DistributedSampler`), the gradients are averaged over the ranks
    (bucketed all-reduce) before the optimizer step, and the step outputs are merged on rank 0
    so that the metrics aggregate exactly. Only rank 0 writes artifacts, logs and checkpoints
    and shows the display; resuming from a checkpoint works with any number of ranks.

    Args:
        devices: this process's device (one); None/empty keeps the model's.
        communicator: an ``ember.distributed`` communicator; by default an
            ``NcclCommunicator`` when the device is a GPU, else an ``MpiCommunicator``.
        bucket_mb: the largest gradient bucket sent in one all-reduce, in MiB.
    """

    def __init__(self, devices: tuple = (), communicator: Any = None, bucket_mb: float = 25.0):
        if devices is not None and not isinstance(devices, (tuple, list)):
            devices = (devices,)
        self.devices = tuple(devices or ())
        if len(self.devices) > 1:
            raise ValueError(
                f"DistributedDataParallel: one device per process, got {len(self.devices)}; start one "
                "process per device (python -m ember.distributed.launch -n N script.py)"
            )
        if not bucket_mb > 0:
            raise ValueError(f"DistributedDataParallel: bucket_mb must be > 0, got {bucket_mb}")
        self._communicator = communicator
        self.bucket_mb = float(bucket_mb)
        self._averager = None

    @property
    def communicator(self):
        """The communicator (created on first use when none was given)."""
        if self._communicator is None:
            device = str(self.devices[0]) if self.devices else ""
            self._communicator = NcclCommunicator() if device.startswith("cuda") else MpiCommunicator()
        return self._communicator

    def check_supported(self) -> None:
        self.communicator  # noqa: B018  (raises, saying what to install, when MPI/NCCL is missing)

    def run_device(self) -> Any:
        return self.devices[0] if self.devices else None

    @property
    def is_main(self) -> bool:
        return self.communicator.is_main

    def start(self, learner) -> None:
        broadcast_learner_state(self.communicator, learner)
        self._averager = GradientAverager(self.communicator, int(self.bucket_mb * 1024 * 1024))

    def loader(self, loader):
        return ShardedDataLoader(loader, self.communicator)

    def gradients(self, grads, model, loader):
        return self._averager.average(grads, model, loader.step_weight)

    def metric_item(self, item, loader):
        return gather_output(self.communicator, item, loader.step_count)

    def any_process(self, flag: bool) -> bool:
        return self.communicator.any(flag)

    def from_main(self, values: tuple[int, ...]) -> tuple[int, ...]:
        return self.communicator.broadcast_value(values)

    def __repr__(self) -> str:
        return f"DistributedDataParallel(devices={self.devices}, communicator={self._communicator!r})"
