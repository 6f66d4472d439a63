"""The error raised for unreadable, malformed, hostile or mismatched record files."""

from __future__ import annotations

__all__ = ["RecordError"]


class RecordError(ValueError):
    """A record could not be written or read.

    The message names the file (or ``<bytes>`` for in-memory data), the tensor or key
    involved, and what was expected instead.
    """
