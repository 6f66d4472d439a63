"""``BurnLen``: Burn's ``len()`` and ``is_empty()`` methods, beside Python's ``len(x)``, for the
optimizer containers that Burn sizes that way (:class:`~ember.optim.GradientsParams` and the
optimizer state records)."""

from __future__ import annotations

__all__ = ["BurnLen"]


class BurnLen:
    """``len()`` and ``is_empty()`` (Burn's names) for a class that defines ``__len__``."""

    __slots__ = ()  # a class with __slots__ (GradientsParams) keeps its instances without a __dict__

    def len(self) -> int:
        """Number of entries (Burn's ``len``), as ``len(x)``."""
        return len(self)

    def is_empty(self) -> bool:
        """Whether there are no entries (Burn's ``is_empty``)."""
        return len(self) == 0
