"""Data-parallel training on engines clusters already run: MPI between CPU processes and hosts
(mpi4py), NCCL between GPUs (CuPy).

* :class:`Communicator` — ranks and collectives; :class:`MpiCommunicator` and
  :class:`NcclCommunicator` implement it. Every wait is bounded (``EMBER_DISTRIBUTED_TIMEOUT``).
* :class:`DistributedSampler` / :class:`ShardedDataLoader` — each rank's part of every step, in
  the global order of a single process.
* :class:`GradientAverager` — the bucketed, item-weighted mean all-reduce of the gradients.
* :func:`broadcast_learner_state` — rank 0's model, optimizer state and schedule on every rank.
* :func:`gather_output` — the step outputs of all ranks merged on rank 0, for exact metrics.
* ``python -m ember.distributed.launch -n N script.py ...`` — runs ``mpiexec`` with one compute
  thread set per rank and names the rank that failed.

``ember.train.DistributedDataParallel`` puts these together for ``SupervisedTraining``. Importing
this package needs neither mpi4py nor CuPy; creating a communicator without them raises
:class:`MissingDistributedDependency` saying what to install.
"""

from .communicator import Communicator, PendingCollective
from .environment import env_rank, env_world_size, launched_distributed
from .errors import DistributedError, DistributedTimeoutError, MissingDistributedDependency
from .gradient_sync import GradientAverager
from .mpi import MpiCommunicator
from .nccl import NcclCommunicator
from .output_gather import gather_output, merge_fields
from .sampler import DistributedSampler, RankShard, global_order
from .sharded_loader import ShardedDataLoader
from .state_sync import broadcast_learner_state, broadcast_module

__all__ = [
    "Communicator",
    "DistributedError",
    "DistributedSampler",
    "DistributedTimeoutError",
    "GradientAverager",
    "MissingDistributedDependency",
    "MpiCommunicator",
    "NcclCommunicator",
    "PendingCollective",
    "RankShard",
    "ShardedDataLoader",
    "broadcast_learner_state",
    "broadcast_module",
    "env_rank",
    "env_world_size",
    "gather_output",
    "global_order",
    "launched_distributed",
    "merge_fields",
]
