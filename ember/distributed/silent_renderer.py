"""``SilentRenderer``: the display of the ranks other than 0 in data-parallel training — none.

Rank 0 shows the run (its metrics are those of all ranks); the others would print the same
progress again, interleaved.
"""

from __future__ import annotations

__all__ = ["SilentRenderer"]


class SilentRenderer:
    """A metrics renderer that shows nothing."""

    def on_train_start(self, num_epochs: int, starting_epoch: int) -> None:
        pass

    def on_split_start(self, split: str, epoch: int, num_items: int) -> None:
        pass

    def update_train(self, state) -> None:
        pass

    def update_valid(self, state) -> None:
        pass

    def render_train(self, progress) -> None:
        pass

    def render_valid(self, progress) -> None:
        pass

    def on_split_end(self, split: str, epoch: int) -> None:
        pass

    def on_message(self, text: str) -> None:
        pass

    def on_train_end(self, summary: str | None) -> None:
        pass

    def close(self) -> None:
        pass
