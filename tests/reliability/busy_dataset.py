"""A dataset whose `get()` never returns, for the DataLoader kill test (worker processes
import it by name, so it lives in a file)."""

from __future__ import annotations

import ctypes
import os
import time
from pathlib import Path
from typing import Any


class BusyDataset:
    """Each `get()` writes a marker file `<markers>/<pid>` and then blocks for an hour:
    in `time.sleep` (the GIL released), or with `hold_gil` in C code that keeps the GIL (so
    no other thread of the worker can run)."""

    def __init__(self, markers: str, hold_gil: bool) -> None:
        self.markers = markers
        self.hold_gil = hold_gil

    def __len__(self) -> int:
        return 100

    def __getitem__(self, index: int) -> Any:
        Path(self.markers, str(os.getpid())).touch()
        if self.hold_gil:
            ctypes.PyDLL(None).sleep(3600)  # PyDLL calls keep the GIL
        else:
            time.sleep(3600)
        return index


class ListBatcher:
    def batch(self, items: list, device: Any) -> list:
        return list(items)
