"""``Interrupter``: ask a running training to stop after the current batch (Burn's
``Interrupter``, ``learner/base.rs``). Thread-safe: a signal handler, another thread or a
metric callback may call ``stop``."""

from __future__ import annotations

import threading

__all__ = ["Interrupter"]


class Interrupter:
    """A stop flag with a reason, shared between the training loop and whoever stops it."""

    def __init__(self):
        self._event = threading.Event()
        self._reason: str | None = None
        self._lock = threading.Lock()

    def stop(self, reason: str | None = None) -> None:
        """Ask the loop to stop after the batch in progress.

        Args:
            reason: shown in the log and the closing message.
        """
        with self._lock:
            if reason is not None or self._reason is None:
                self._reason = reason
            self._event.set()

    def reset(self) -> None:
        """Clear the request (a new ``launch`` starts with a cleared interrupter)."""
        with self._lock:
            self._reason = None
            self._event.clear()

    def should_stop(self) -> bool:
        return self._event.is_set()

    def get_message(self) -> str | None:
        """The reason given to :meth:`stop`, if any."""
        return self._reason

    def __repr__(self) -> str:
        return f"Interrupter(stopped={self.should_stop()}, reason={self._reason!r})"
