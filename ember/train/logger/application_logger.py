"""``experiment.log``: the run's application log (Burn's ``FileApplicationLoggerInstaller``).

Records of the ``logging`` module — INFO and above from ember and the user's script,
WARNING and above from other libraries — are appended to the file while training runs, without ANSI colours; an exception that ends the
run is written there with its traceback before it propagates.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

__all__ = ["FileApplicationLoggerInstaller", "OwnInfoFilter"]


class _UtcFormatter(logging.Formatter):
    converter = time.gmtime

    def formatTime(self, record, datefmt=None):  # (logging's name)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", self.converter(record.created))
        return f"{stamp}.{int(record.msecs * 1000):06d}Z"


class OwnInfoFilter(logging.Filter):
    """INFO from ember and the user's script; third-party libraries only from WARNING up
    (Burn filters wgpu's INFO the same way)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.WARNING:
            return True
        name = record.name
        return name in ("root", "__main__") or name == "ember" or name.startswith("ember.")


class FileApplicationLoggerInstaller:
    """Installs a file handler on the root logger for the duration of a run.

    Args:
        path: the log file (created with its directory; appended to).
        level: the lowest level written (INFO as in Burn).
    """

    def __init__(self, path: str | os.PathLike, level: int = logging.INFO):
        self.path = Path(path)
        self.level = level
        self._handler: logging.Handler | None = None
        self._previous_level: int | None = None

    def install(self) -> logging.Handler:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(self.path, mode="a", encoding="utf-8")
        handler.setLevel(self.level)
        handler.addFilter(OwnInfoFilter())
        handler.setFormatter(_UtcFormatter("%(asctime)s %(levelname)5s %(name)s: %(message)s"))
        root = logging.getLogger()
        root.addHandler(handler)
        if root.level > self.level or root.level == logging.NOTSET:
            self._previous_level = root.level
            root.setLevel(self.level)
        self._handler = handler
        return handler

    def uninstall(self) -> None:
        if self._handler is None:
            return
        root = logging.getLogger()
        root.removeHandler(self._handler)
        self._handler.close()
        if self._previous_level is not None:
            root.setLevel(self._previous_level)
        self._handler = None
