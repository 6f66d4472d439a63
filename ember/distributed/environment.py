"""What the environment says about a distributed run, read without starting MPI.

Launchers (``mpiexec`` of MPICH or Open MPI, Slurm's ``srun``, PMIx) put each process's rank
and the world size in environment variables; reading them lets a script decide to train with
``DistributedDataParallel`` before importing mpi4py.
"""

from __future__ import annotations

import os

from ember import config

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "GUARDIAN_VARIABLE",
    "RUN_DIR_VARIABLE",
    "TIMEOUT_VARIABLE",
    "env_rank",
    "env_world_size",
    "launched_distributed",
    "timeout_from_env",
]

# Seconds a collective may wait for the other ranks before the run is declared broken (300:
# long enough for an uneven validation split or a first-step kernel compilation), and the
# variable overriding it; both declared with the setting in ember.config.settings.
_TIMEOUT_SETTING = config.SETTINGS_BY_NAME["distributed.timeout"]
DEFAULT_TIMEOUT_S = _TIMEOUT_SETTING.default
TIMEOUT_VARIABLE = _TIMEOUT_SETTING.env
# Set by ``ember.distributed.launch``: where each rank notes its pid and why it failed.
RUN_DIR_VARIABLE = "EMBER_DISTRIBUTED_RUN_DIR"
# Set by the launcher's guardian (``guardian.py``) for the rank it runs: the guardian's pid.
GUARDIAN_VARIABLE = "EMBER_DISTRIBUTED_GUARDIAN_PID"

_RANK_VARIABLES = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID")
_SIZE_VARIABLES = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS")


def _first_int(names: tuple[str, ...]) -> int | None:
    for name in names:
        raw = os.environ.get(name, "").strip()
        if raw.isdigit():
            return int(raw)
    return None


def env_rank() -> int | None:
    """This process's rank as its launcher set it, None outside a launcher."""
    return _first_int(_RANK_VARIABLES)


def env_world_size() -> int | None:
    """The number of ranks as the launcher set it, None outside a launcher."""
    return _first_int(_SIZE_VARIABLES)


def launched_distributed() -> bool:
    """True when this process is one of several started by mpiexec/srun."""
    size = env_world_size()
    return size is not None and size > 1


def timeout_from_env(default: float = DEFAULT_TIMEOUT_S) -> float:
    """``EMBER_DISTRIBUTED_TIMEOUT``, else ``[distributed] timeout`` of ember.toml, in seconds;
    else ``default``.

    Raises:
        ValueError: (a ``ConfigError``) the variable or the file holds something other than a
            positive number.
    """
    timeout = config.resolve("distributed.timeout")
    return float(default) if timeout.source == config.DEFAULT else timeout.value
