"""Picklable helpers for the ember.data tests (worker processes import this module by name,
so it must live in a file, not inside a test function)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

import numpy as np


class ListBatcher:
    """Returns the items as they are, plus the device it was given (as text)."""

    def batch(self, items: list, device: Any) -> dict:
        return {"items": list(items), "device": str(device)}


class ArrayBatcher:
    """Stacks integer items into an int64 array."""

    def batch(self, items: list, device: Any) -> np.ndarray:
        return np.asarray(items, dtype=np.int64)


class BigBatcher:
    """Returns a 1 MiB array per batch: more than a pipe buffer holds."""

    def batch(self, items: list, device: Any) -> np.ndarray:
        return np.full(1 << 17, items[0], dtype=np.int64)


class SlowBatcher:
    """Sleeps `delay` seconds per batch."""

    def __init__(self, delay: float) -> None:
        self.delay = delay

    def batch(self, items: list, device: Any) -> list:
        time.sleep(self.delay)
        return list(items)


class _MisbehavesOn:
    """Returns items at once, except for the batch holding the item `bad`: there it calls
    `misbehave(items)` first."""

    def __init__(self, bad: int) -> None:
        self.bad = bad

    def batch(self, items: list, device: Any) -> list:
        if self.bad in items:
            self.misbehave(items)
        return list(items)

    def misbehave(self, items: list) -> None:
        raise NotImplementedError


class StallingBatcher(_MisbehavesOn):
    """Sleeps for an hour on the batch holding `bad`."""

    def misbehave(self, items: list) -> None:
        time.sleep(3600)


def _explode(items: list) -> None:
    raise ValueError(f"bad item in {items}")


class FailingBatcher(_MisbehavesOn):
    """Raises ValueError (from the helper `_explode`) for the batch containing `bad`."""

    def misbehave(self, items: list) -> None:
        _explode(items)


class NeedsTwoArgsError(Exception):
    """An exception that cannot be unpickled (its constructor needs two arguments)."""

    def __init__(self, code: int, detail: str) -> None:
        super().__init__(f"code {code}: {detail}")


class UnpicklableErrorBatcher:
    def batch(self, items: list, device: Any) -> list:
        raise NeedsTwoArgsError(7, "custom failure")


class ExitingBatcher(_MisbehavesOn):
    """Kills its own process (exit code 3) on the batch containing `bad`."""

    def misbehave(self, items: list) -> None:
        os._exit(3)


class HoldsLambdaBatcher:
    """Cannot be pickled: holds a lambda."""

    def __init__(self) -> None:
        self.fn = lambda items: items

    def batch(self, items: list, device: Any) -> list:
        return self.fn(items)


def double(item: int) -> int:
    return 2 * item


@dataclass
class TensorBatch:
    values: Any
    mask: Any
    labels: list


class TensorBatcher:
    """Builds ember tensors on the device it is given."""

    def batch(self, items: list, device: Any) -> TensorBatch:
        import ember

        values = ember.from_numpy(np.asarray(items, dtype=np.float32), device=device)
        mask = ember.from_numpy(np.asarray(items, dtype=np.int64) % 2 == 0, device=device)
        return TensorBatch(values=values, mask=mask, labels=list(items))


def pid_alive(pid: int) -> bool:
    """Whether process `pid` exists and is not a zombie (Linux /proc; falls back to kill 0)."""
    status = f"/proc/{pid}/status"
    if os.path.exists("/proc"):
        try:
            with open(status) as handle:
                for line in handle:
                    if line.startswith("State:"):
                        return "Z" not in line.split()[1]
        except FileNotFoundError:
            return False
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def wait_dead(pids: list[int], timeout: float = 10.0) -> list[int]:
    """Wait up to `timeout` seconds for `pids` to end; returns those still alive."""
    deadline = time.monotonic() + timeout
    alive = [pid for pid in pids if pid_alive(pid)]
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = [pid for pid in alive if pid_alive(pid)]
    return alive
