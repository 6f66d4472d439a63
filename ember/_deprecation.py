"""Old names kept for one release after a rename: each use warns with a ``DeprecationWarning``
naming the replacement. Imports nothing from ember (a leaf, usable from every layer).

    # in a module: the old module-level names, resolved on access
    __getattr__ = renamed_globals(__name__, {"MSELoss": "MseLoss"})

    # in a package re-exporting that module: its old names too, stated once in the module
    __getattr__ = renamed_globals(__name__, renames_of(loss))

    # in a class: an old method name calling the new one
    with_gradient_clipping = renamed_method("with_gradient_clipping", "with_grad_clipping")
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["renamed_globals", "renamed_method", "renamed_property", "renames_of", "warn_renamed"]


def warn_renamed(old: str, new: str, *, stacklevel: int = 3) -> None:
    """Warn that ``old`` is deprecated in favour of ``new``.

    Args:
        old: the old name as the user wrote it (``ember.nn.MSELoss``).
        new: its replacement (``ember.nn.MseLoss``).
        stacklevel: 3 blames the caller of the function that calls this one.
    """
    warnings.warn(
        f"{old} is deprecated and will be removed in the next release: use {new}",
        DeprecationWarning,
        stacklevel=stacklevel,
    )


def renamed_globals(module: str, renames: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` (PEP 562) that resolves each old name to the object the new
    name holds, warning on every access (``from m import Old`` and ``m.Old`` alike).

    Args:
        module: the module's ``__name__``.
        renames: old name -> new name, both attributes of that module.
    """
    renames = dict(renames)

    def __getattr__(name: str) -> Any:
        new = renames.get(name)
        if new is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        warn_renamed(f"{module}.{name}", f"{module}.{new}")
        return getattr(sys.modules[module], new)

    __getattr__.renames = renames  # read by renames_of in the packages that re-export the module
    return __getattr__


def renames_of(*modules: Any) -> dict[str, str]:
    """The old names (old -> new) of ``modules``, each with a :func:`renamed_globals`
    ``__getattr__``, for a module that re-exports their new names."""
    merged: dict[str, str] = {}
    for module in modules:
        merged.update(module.__getattr__.renames)
    return merged


def renamed_method(old: str, new: str) -> Callable[..., Any]:
    """A method ``old`` that warns and calls ``self.new`` with the same arguments."""

    def method(self, *args, **kwargs):
        owner = type(self).__name__
        warn_renamed(f"{owner}.{old}", f"{owner}.{new}")
        return getattr(self, new)(*args, **kwargs)

    method.__name__ = old
    method.__doc__ = f"Deprecated: use :meth:`{new}`."
    return method


def renamed_property(old: str, new: str, *, call: bool = False) -> property:
    """A read-only property ``old`` that warns and returns ``self.new`` (``self.new()`` with
    ``call=True``, for a property replaced by a method)."""

    def getter(self):
        owner = type(self).__name__
        warn_renamed(f"{owner}.{old}", f"{owner}.{new}()" if call else f"{owner}.{new}")
        value = getattr(self, new)
        return value() if call else value

    getter.__name__ = old
    return property(getter, doc=f"Deprecated: use ``{new}``.")
