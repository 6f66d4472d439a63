"""The autotune log: each decision a tuned kernel took, one JSON object per line.

``[autotune] logger`` in ``ember.toml`` (``logger = { file = "/tmp/autotune.log" }`` or
``{ stderr = true }``), or ``EMBER_AUTOTUNE_LOG=stderr|PATH`` with ``EMBER_AUTOTUNE_LOG_LEVEL``,
turns it on:

* ``basic``: each decision the first time this process needs it, ``{"event": "tune", "op",
  "key", "winner", "from": "measured" | "cache" | "default" | "forced", "times_ms"}`` (``times_ms``: each
  measured candidate's median, or those stored with a cached decision);
* ``full``: also each candidate's samples, ``{"event": "samples", "op", "key", "candidate",
  "samples_ms", "dropped"}``, as they are measured.

A second process on the same machine logs only ``"from": "cache"`` decisions.
"""

from __future__ import annotations

from ember.kernels.event_log import EventLog

__all__ = ["LEVELS", "LOG", "AutotuneLog"]

LEVELS = ("disabled", "basic", "full")


class AutotuneLog(EventLog):
    """The autotune log (see the module docstring)."""

    what = "autotune log"
    setting = "autotune.logger"
    levels = LEVELS

    def decision(self, op: str, key: str, winner: str, source: str, times_ms: dict) -> None:
        """``basic``: ``op`` runs ``winner`` for ``key``, decided by ``source``."""
        self.write(
            {"event": "tune", "op": op, "key": key, "winner": winner, "from": source, "times_ms": times_ms}
        )

    def samples(self, op: str, key: str, candidate: str, samples_ms: list, dropped: bool) -> None:
        """``full``: the times one candidate took for ``key``."""
        self.write(
            {
                "event": "samples",
                "op": op,
                "key": key,
                "candidate": candidate,
                "samples_ms": samples_ms,
                "dropped": dropped,
            }
        )


LOG = AutotuneLog()
"""The autotune log of this process."""
