"""`Progress`: how far a pass over a data loader has got."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Progress"]


@dataclass(frozen=True)
class Progress:
    """Items handed out so far in the current pass, and in the whole pass (Burn's
    `Progress { items_processed, items_total }`).

    Args:
        items_processed: items in the batches yielded so far.
        items_total: items in the pass (the dataset length).
    """

    items_processed: int
    items_total: int

    @property
    def fraction(self) -> float:
        """`items_processed / items_total` (1.0 for an empty pass)."""
        return self.items_processed / self.items_total if self.items_total else 1.0

    def __str__(self) -> str:
        return f"{self.items_processed}/{self.items_total}"
