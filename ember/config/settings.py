"""Every setting of ``ember.toml``, declared as data: its section, key, kind, default, the
environment variable that overrides it, and a line saying what it does.

This table is the whole schema: the loader accepts exactly these sections and keys, ``python
-m ember.config`` lists them, and the README's example is checked against them. A subsystem
that gains settings (the fusion engine's ``[fusion]``, autotune's ``[autotune]``) adds its
rows here and reads them with :func:`ember.config.get`; nothing else changes.

Environment variables that are escape hatches or internal hand-offs rather than settings
(``EMBER_DISABLE_NATIVE``, ``EMBER_NATIVE_ISA``, ``EMBER_MPIEXEC``, the variables the launcher
and the OpenMP set-up pass to child processes) stay environment-only and are not listed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .kinds import (
    Choice,
    ChoiceOrPath,
    Count,
    EventLogger,
    Kind,
    PathKind,
    PositiveInt,
    PositiveSeconds,
    Switch,
)

__all__ = ["SETTINGS", "Setting", "by_name", "sections"]


@dataclass(frozen=True)
class Setting:
    section: str
    key: str
    kind: Kind
    #: the value when neither the file nor the environment sets it (None: unset, the code
    #: using it decides); a callable is called on each read (a path under the home directory)
    default: object
    env: str
    doc: str

    @property
    def name(self) -> str:
        return f"{self.section}.{self.key}"

    def default_value(self) -> object:
        return self.default() if callable(self.default) else self.default


def _home_cache() -> Path:
    return Path.home() / ".cache" / "ember"


SETTINGS: tuple[Setting, ...] = (
    Setting("threads", "num_threads", PositiveInt(), None, "EMBER_NUM_THREADS",
            "threads for Numba kernels, the native extension and BLAS (unset: all cores)"),
    Setting("threads", "gemm_pool", Switch(), True, "EMBER_GEMM_POOL",
            "split matrix products over ember's threads with BLAS single-threaded (false: NumPy's BLAS threads)"),
    Setting("memory", "malloc_tuning", Switch(), True, "EMBER_MALLOC_TUNING",
            "raise glibc's malloc thresholds so large activations are reused (false: leave malloc alone)"),
    Setting("compile", "cache_dir", PathKind(), _home_cache, "EMBER_CACHE_DIR",
            "where compiled kernels (numba/) and converted datasets (datasets/) are cached"),
    Setting("compile", "background", Switch(), True, "EMBER_BACKGROUND_COMPILE",
            "on an empty kernel cache, compile the cpu kernels in a background process"),
    Setting("data", "dataset_cache", PathKind(), None, "EMBER_DATASET_CACHE",
            "where HuggingfaceDatasetLoader keeps its SQLite files (unset: <cache_dir>/datasets)"),
    Setting("cuda", "tf32", Switch(), False, "EMBER_CUDA_TF32",
            "TF32 matrix products on CUDA (faster, changes float32 results)"),
    Setting("train", "renderer", Choice("cli", "tui", "auto"), "auto", "EMBER_RENDERER",
            "training progress display: the dashboard on a terminal (auto), or always cli / tui"),
    Setting("distributed", "timeout", PositiveSeconds(), 300.0, "EMBER_DISTRIBUTED_TIMEOUT",
            "seconds a collective waits for the other ranks before the run is declared broken"),
    Setting("fusion", "enabled", Switch(), True, "EMBER_FUSION",
            "record element-wise ops on cpu and compute each chain as one compiled kernel"),
    Setting("fusion", "min_elements", Count(), 1 << 15, "EMBER_FUSION_MIN_ELEMENTS",
            "results smaller than this run at once unless they continue a recorded chain (0: record all)"),
    Setting("fusion", "compile_after", PositiveInt(), 2, "EMBER_FUSION_COMPILE_AFTER",
            "compile a chain on this sighting; before, its ops run one by one (1: compile at once)"),
    Setting("fusion", "logger", EventLogger("fusion log", ("disabled", "basic", "medium", "full"),
                                            "EMBER_FUSION_LOG_LEVEL", "medium"), None, "EMBER_FUSION_LOG",
            "the fusion log, one JSON object a line: { file = PATH or stderr = true, level = 'basic' } "
            "(unset: none; levels disabled, basic, medium, full)"),
    Setting("autotune", "level", Choice("minimal", "balanced", "extensive", "full"), "balanced",
            "EMBER_AUTOTUNE_LEVEL",
            "how much a tuned kernel measures on first use for an input class (minimal: nothing, "
            "a cached decision or the default)"),
    Setting("autotune", "cache", ChoiceOrPath("user", "project", "off"), "user", "EMBER_AUTOTUNE_CACHE",
            "where autotune's decisions are kept: under cache_dir (user), .ember/ beside ember.toml "
            "(project), a directory, or this process only (off)"),
    Setting("autotune", "logger", EventLogger("autotune log", ("disabled", "basic", "full"),
                                              "EMBER_AUTOTUNE_LOG_LEVEL", "basic"), None, "EMBER_AUTOTUNE_LOG",
            "the autotune log, one JSON object a line: { file = PATH or stderr = true, level = 'basic' } "
            "(unset: none; levels disabled, basic, full)"),
)  # fmt: skip


def by_name() -> dict[str, Setting]:
    """``"section.key"`` -> setting."""
    return {s.name: s for s in SETTINGS}


def sections() -> dict[str, dict[str, Setting]]:
    """Section -> key -> setting, in declaration order."""
    out: dict[str, dict[str, Setting]] = {}
    for setting in SETTINGS:
        out.setdefault(setting.section, {})[setting.key] = setting
    return out
