"""``AsyncCheckpointer``: a checkpointer whose saves and deletes run in a background thread,
in the order they were asked (Burn's ``AsyncCheckpointer``).

One queue carries saves and deletes, so a delete can never overtake the save it follows
and no request is ever sent to a stopped worker (Burn #3990, "sending on a closed
channel"). A failure in the worker is re-raised in the training thread at the next call,
at ``flush`` or at ``close``.

Several checkpointers (one thread each) are ordered with tickets: ``ticket()`` is done once
every request queued before it is, and a request given ``after=[ticket, ...]`` waits for
those tickets and is dropped if one of them saw a failure. ``LearningCheckpointer`` uses
them to write an epoch's completion marker only once its other files are on disk.
"""

from __future__ import annotations

import queue
import threading

__all__ = ["AsyncCheckpointer", "CheckpointerError", "Ticket"]


class CheckpointerError(RuntimeError):
    """A background checkpoint write failed."""


class Ticket:
    """Done once the requests queued before it on one checkpointer are done; ``ok`` is False
    when one of them failed."""

    def __init__(self, owner: str):
        self.owner = owner
        self.ok = True
        self._done = threading.Event()

    def finish(self, ok: bool) -> None:
        self.ok = ok
        self._done.set()

    def wait(self) -> bool:
        """Block until done; whether every request before it succeeded."""
        self._done.wait()
        return self.ok

    def __repr__(self) -> str:
        state = ("ok" if self.ok else "failed") if self._done.is_set() else "pending"
        return f"Ticket({self.owner}, {state})"


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
                kind, epoch, data, after = task
                if kind == "ticket":
                    data.finish(self._error is None)
                elif self._error is None:  # after a failure, later requests are not attempted
                    failed = [t.owner for t in after if not t.wait()]
                    if failed:  # what this request had to follow did not happen: neither does it
                        raise CheckpointerError(
                            f"{kind} of epoch {epoch} not done: the write it must follow failed "
                            f"({', '.join(failed)})"
                        )
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

    def save(self, epoch: int, data: bytes, after: tuple[Ticket, ...] = ()) -> None:
        """Queue a write of ``data`` for ``epoch``.

        Args:
            after: tickets (of other checkpointers) the write waits for; it is dropped, with
                an error, if one of them reports a failure.
        """
        self._raise_pending()
        self._ensure_worker()
        self._queue.put(("save", epoch, data, tuple(after)))

    def delete(self, epoch: int, after: tuple[Ticket, ...] = ()) -> None:
        """Queue the removal of ``epoch``'s file (after ``after``, as :meth:`save`)."""
        self._raise_pending()
        self._ensure_worker()
        self._queue.put(("delete", epoch, None, tuple(after)))

    def ticket(self) -> Ticket:
        """A ticket done once every request queued so far is done."""
        self._ensure_worker()
        ticket = Ticket(repr(self.inner))
        self._queue.put(("ticket", None, ticket, ()))
        return ticket

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
