"""What identifies this machine to the autotune cache: the CPU's model, the instruction-set
features that change which kernel wins, and the cores this process may use.

Two machines with the same fingerprint are expected to pick the same winners; a different
fingerprint gets its own folder of decisions (a cache directory shared over NFS, or a
container moved to another host, never reads another machine's choices).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
from functools import lru_cache

__all__ = ["fingerprint", "folder_name"]

# The features a kernel's speed depends on (vector width, FMA, matrix units); the rest of
# /proc/cpuinfo's flags (power management, virtualisation...) would split the cache for nothing.
_FEATURES = (
    "sse4_2", "avx", "avx2", "fma", "f16c",
    "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16", "avx512_fp16",
    "amx_tile", "amx_bf16", "amx_int8",
    "asimd", "sve", "sve2",
)  # fmt: skip


def _cpuinfo() -> tuple[str, set[str]]:
    model, flags = "", set()
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                name, _, value = line.partition(":")
                name = name.strip().lower()
                if (
                    not model
                    and name in ("model name", "cpu model", "processor")
                    and not value.strip().isdigit()
                ):
                    model = value.strip()
                elif name in ("flags", "features") and not flags:
                    flags = set(value.split())
    except OSError:  # not Linux: the platform module's words, no flags
        pass
    return model or platform.processor() or platform.machine() or "unknown", flags


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


@lru_cache(maxsize=1)
def fingerprint() -> dict:
    """This machine, as plain data: ``{"cpu", "arch", "features", "cores"}``."""
    model, flags = _cpuinfo()
    return {
        "cpu": " ".join(model.split()),
        "arch": platform.machine(),
        "features": [f for f in _FEATURES if f in flags],
        "cores": _cores(),
    }


def folder_name(machine: dict) -> str:
    """A folder name for ``machine`` (a :func:`fingerprint`): a readable slug of the CPU's
    model and a hash of the whole fingerprint, so two machines never share a folder."""
    slug = re.sub(r"[^a-z0-9]+", "-", machine["cpu"].lower()).strip("-")[:40] or "cpu"
    digest = hashlib.sha256(json.dumps(machine, sort_keys=True).encode()).hexdigest()[:12]
    return f"{slug}-{machine['cores']}c-{digest}"
