"""A log of events, one JSON object per line, switched on by a ``logger`` setting of
``ember.toml``: the base of the fusion log and the autotune log.

Each subclass names its setting (``"fusion.logger"``) and its levels, lowest first, the first
being ``"disabled"``; every other level becomes a boolean attribute that is true when the log
is at that level or above, so a hook costs one attribute read while the log is off. The
configuration is read on the first such read, not at ``import ember``. The file is opened
once, appended to and line-buffered; a write that fails warns once and turns the log off:
a log never stops a computation.
"""

from __future__ import annotations

import json
import sys
import threading
import warnings

from ember import config

__all__ = ["EventLog"]


class EventLog:
    """Where the events go and which are written (see the module docstring)."""

    #: what the log is called in messages ("fusion log")
    what: str = "event log"
    #: the ``ember.toml`` setting naming its target and level ("fusion.logger")
    setting: str = ""
    #: the levels, lowest first; ``levels[0]`` is ``"disabled"``
    levels: tuple[str, ...] = ("disabled", "basic")

    def __init__(self):
        self._lock = threading.RLock()
        self._stream = None  # the open file; None with stderr (looked up on each write) or off
        self._stderr = False
        self._target = ""

    def __getattr__(self, name):
        # only the level switches are looked up here (a first read, or after reset())
        if name != "level" and name not in self.levels[1:]:
            raise AttributeError(name)
        with self._lock:
            if "level" not in self.__dict__:
                logger = config.get(self.setting) or {}
                self.configure(
                    logger.get("level", "disabled"), logger.get("file"), logger.get("stderr", False)
                )
        return self.__dict__[name]

    # ---- set-up --------------------------------------------------------------------------
    def configure(self, level: str, file=None, stderr: bool = False) -> None:
        """Write events up to ``level`` to ``file`` (appended to) or to standard error, in
        place of what the setting says; ``"disabled"`` turns the log off.

        Raises:
            ValueError: ``level`` is not one of the log's levels, or not exactly one of
                ``file`` and ``stderr`` is given for a level that writes.
        """
        if level not in self.levels:
            raise ValueError(f"{self.what}: level must be one of {', '.join(self.levels)}, got {level!r}")
        if level != "disabled" and (file is None) == (not stderr):
            raise ValueError(f"{self.what}: give exactly one of file and stderr=True, got {file=}, {stderr=}")
        with self._lock:
            self._close()
            self._set(level)
            if level == "disabled":
                return
            self._stderr = bool(stderr)
            self._target = "standard error" if stderr else str(file)
            if not stderr:
                try:  # opened once, kept open, line-buffered: each event reaches the file whole
                    self._stream = open(file, "a", buffering=1, encoding="utf-8")
                except OSError as error:
                    self._fail(error)

    def reset(self) -> None:
        """Close the log; the next level test reads the setting again."""
        with self._lock:
            self._close()
            for name in ("level", *self.levels[1:]):
                self.__dict__.pop(name, None)

    def _set(self, level: str) -> None:
        rank = self.levels.index(level)
        self.level = level
        for at, name in enumerate(self.levels[1:], start=1):
            setattr(self, name, rank >= at)

    def _close(self) -> None:
        stream, self._stream, self._stderr = self._stream, None, False
        if stream is not None:
            try:
                stream.close()
            except OSError:
                pass

    def _fail(self, error: Exception) -> None:
        target = self._target
        self._close()
        self._set("disabled")
        warnings.warn(
            f"ember {self.what}: cannot write to {target} ({error}); the log is off for this process",
            RuntimeWarning,
            stacklevel=4,
        )

    def write(self, event: dict) -> None:
        """Append one event (a JSON object on one line)."""
        line = json.dumps(event, default=str) + "\n"
        with self._lock:
            stream = sys.stderr if self._stderr else self._stream
            if stream is None:
                return
            try:
                stream.write(line)
            except (OSError, ValueError) as error:  # ValueError: the file was closed under us
                self._fail(error)
