"""``AsyncCheckpointer``: a checkpointer whose saves and deletes run in a background thread,
in the order they were asked (Burn's ``AsyncCheckpointer``).

One queue carries saves and deletes, so a delete can never overtake the save it follows
and no request is ever sent to a stopped worker (Burn #3990, "sending on a closed
channel"). A failure in the worker is re-raised in the training thread at the next call,
at ``flush`` or at ``close``.
"""

from __future__ import annotations

import queue
import threading

__all__ = ["AsyncCheckpointer", "CheckpointerError"]


class CheckpointerError(RuntimeError):
    """A background checkpoint write failed."""


class AsyncCheckpointer:
    """Wraps a checkpointer (``save/restore/delete``) to write in the background.

    Args:
        inner: the checkpointer doing the work (e.g. ``FileCheckpointer``).
    """

    def __init__(self, inner):
        self.inner = inner
        self._queue: queue.Queue = queue.Queue()
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def _ensure_worker(self) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="ember-checkpointer", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            task = self._queue.get()
            try:
                if task is None:
                    return
                if self._error is None:  # after a failure, later requests are not attempted
                    kind, epoch, data = task
                    if kind == "save":
                        self.inner.save(epoch, data)
                    else:
                        self.inner.delete(epoch)
            except BaseException as exc:  # (re-raised in the training thread)
                self._error = exc
            finally:
                self._queue.task_done()

    def _raise_pending(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise CheckpointerError(
                f"checkpoint write failed in the background ({self.inner!r}): {type(error).__name__}: {error}"
            ) from error

    def save(self, epoch: int, data: bytes) -> None:
        self._raise_pending()
        self._ensure_worker()
        self._queue.put(("save", epoch, data))

    def delete(self, epoch: int) -> None:
        self._raise_pending()
        self._ensure_worker()
        self._queue.put(("delete", epoch, None))

    def restore(self, epoch: int) -> bytes:
        self.flush()
        return self.inner.restore(epoch)

    def flush(self) -> None:
        """Wait until every request so far is done; raise if one failed."""
        if self._thread is not None:
            self._queue.join()
        self._raise_pending()

    def close(self) -> None:
        """Finish the queue, stop the worker, raise a pending failure."""
        if self._thread is not None and self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()
        self._thread = None
        self._raise_pending()

    def __repr__(self) -> str:
        return f"AsyncCheckpointer({self.inner!r})"
