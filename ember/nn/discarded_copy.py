"""A warning for ``model.valid()`` / ``model.train()`` written as a statement.

Both return a copy and leave the module as it was (Burn's value semantics, README "Modules"):
a PyTorch habit, ``model.train()`` alone on a line, throws the copy away and changes nothing.
The caller's bytecode says whether the call's value is popped unused right after the call, so
the check costs nothing to code that keeps the copy and never fires on it.
"""

from __future__ import annotations

import dis
import functools
import sys
import warnings
from types import CodeType

__all__ = ["DiscardedCopyWarning", "warn_if_discarded"]


class DiscardedCopyWarning(UserWarning):
    """A method that returns a modified copy was called as a statement, its result dropped."""


@functools.lru_cache(maxsize=512)
def _popped_after(code: CodeType, offset: int) -> bool:
    """Whether the instruction after the call at ``offset`` pops its value unused."""
    # ``offset`` (f_lasti) is the call's own offset, or that of its last inline cache entry
    # (Python 3.11): either way the next instruction is the first one past it.
    following = next((i for i in dis.get_instructions(code) if i.offset > offset), None)
    return following is not None and following.opname == "POP_TOP"


def warn_if_discarded(what: str, assign: str) -> None:
    """Warn when the caller of the method that calls this drops the returned copy.

    Args:
        what: the call as the user wrote it, e.g. ``Module.train()``.
        assign: the statement to write instead, e.g. ``model = model.train()``.
    """
    caller = sys._getframe(2)  # 0: here, 1: the method (train/valid), 2: its caller
    if _popped_after(caller.f_code, caller.f_lasti):
        warnings.warn(
            f"{what} returns a copy and leaves the module unchanged (Burn's value semantics); "
            f"the copy was discarded, so nothing changed: write `{assign}`",
            DiscardedCopyWarning,
            stacklevel=3,
        )
