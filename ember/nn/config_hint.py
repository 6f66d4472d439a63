"""Layers are built from their config: a constructor called the way other frameworks do
(``nn.Linear(3, 2)``, ``nn.MaxPool2d(2)``, ``nn.Dropout(p=0.5)``) raises a ``TypeError`` that
names the config to use, e.g. ``use nn.LinearConfig(3, 2).init()``.

One mechanism serves every layer: :class:`~ember.nn.Module` wraps the ``__init__`` of each
subclass that has a ``<Name>Config`` class (with an ``init`` method) in its module; a layer
that inherits its constructor from a base without a config is checked against its own config.
Before the constructor runs, the call is checked against the constructor's signature and
annotations:

* arguments that do not bind (sizes given to a constructor that takes parameters, keyword
  arguments it does not have, missing ones), or
* a plain value (a number, string, flag, or a list/tuple of them) where the annotation says
  something else — a size where a ``Param`` or ``Module`` goes, an int where a pair goes.

Either raises the hint instead of a confusing error from deep inside (``'int' object has no
attribute 'ndim'``, ``'int' object is not iterable``). When the user's values also fit the
config, the hint shows the exact call, a single number widened for a per-axis pair as PyTorch
reads it (``nn.MaxPool2d(2)`` -> ``nn.MaxPool2dConfig((2, 2)).init()``); otherwise it lists the
config's fields. Calls that match the constructor are
untouched, so ``nn.Dropout(0.25)`` and ``nn.LeakyRelu(0.2)`` still build layers directly.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import re
import sys
import types
import typing

__all__ = ["config_of", "with_config_hint"]


def config_of(cls: type) -> type | None:
    """The ``<Name>Config`` class defined beside ``cls`` (with an ``init`` method), or None."""
    config = getattr(sys.modules.get(cls.__module__), f"{cls.__name__}Config", None)
    return config if isinstance(config, type) and callable(getattr(config, "init", None)) else None


def with_config_hint(cls: type, init):
    """``init``, checked first when ``cls`` has a config (see the module docstring), or, for a
    layer that inherits ``init`` from a base without one (the transformer stacks), the layer's."""
    signature = hints = None  # worked out on the first call: the config may be defined later

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        nonlocal signature, hints
        config = config_of(cls)
        if config is None and type(self).__init__ is __init__:
            config = config_of(type(self))
        if config is not None:
            if signature is None:
                signature, hints = inspect.signature(init), _type_hints(init)
            try:
                bound = signature.bind(self, *args, **kwargs).arguments
            except TypeError:
                raise TypeError(_hint(cls, type(self), config, args, kwargs, init)) from None
            for name, value in bound.items():
                if name in hints and _is_plain(value) and not _accepts(hints[name], value):
                    problem = f"{name}={value!r} where the constructor takes {_hint_text(hints[name])}"
                    raise TypeError(_hint(cls, type(self), config, args, kwargs, init, problem))
        init(self, *args, **kwargs)

    return __init__


# ---- what an annotation accepts ---------------------------------------------------------------
def _type_hints(fn) -> dict:
    try:
        return typing.get_type_hints(fn)
    except Exception:  # - an unresolvable annotation only disables the check
        return {}


def _is_plain(value) -> bool:
    """A size, a flag, a name: what a config holds, never a layer's parameter or sub-module."""
    if isinstance(value, (list, tuple)):
        return bool(value) and all(_is_plain(v) for v in value)
    return isinstance(value, (bool, int, float, str))


def _accepts(hint, value) -> bool:
    """Whether ``value`` is of the annotated type; what this cannot judge is accepted."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_accepts(member, value) for member in args)
    if origin is typing.Literal:
        return value in args
    if origin in (tuple, list):
        if not isinstance(value, (tuple, list)):
            return False  # lists stand for tuples: the constructors normalise them
        if not args or (len(args) == 2 and args[1] is Ellipsis):
            return all(_accepts(args[0], v) for v in value) if args else True
        if origin is list:
            return all(_accepts(args[0], v) for v in value)
        return len(value) == len(args) and all(_accepts(a, v) for a, v in zip(args, value))
    cls = origin or hint
    if not isinstance(cls, type):
        return True  # Any, a TypeVar, a callable signature...
    if cls is type(None):
        return value is None
    if cls in (int, float) and isinstance(value, bool):
        return False  # a flag is not a size
    if cls is float:
        return isinstance(value, (int, float))
    return isinstance(value, cls)


def _hint_text(hint) -> str:
    """``tuple[int, int]``, ``Param | None``, ``float``: an annotation as written."""
    if isinstance(hint, type) and not typing.get_args(hint):
        return "None" if hint is type(None) else hint.__name__
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return " | ".join(_hint_text(member) for member in typing.get_args(hint))
    return str(hint).replace("typing.", "")


# Settings given once per spatial axis, which PyTorch lets one number stand for (a square
# kernel). ``channels`` is a pair too, but of two different things (in, out): never widened.
_PER_AXIS = re.compile(r"(^|_)(size|strides?|dilation)$")


def _pair_of(name: str, value, hint):
    """``(2, 2)`` for ``2`` where ``name`` is a per-axis setting annotated as a tuple of one
    repeated type that accepts ``2``, else None."""
    if not _PER_AXIS.search(name):
        return None
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        for member in args:
            pair = _pair_of(name, value, member)
            if pair is not None:
                return pair
        return None
    if origin is tuple and args and Ellipsis not in args and len(set(args)) == 1 and _accepts(args[0], value):
        return (value,) * len(args)
    return None


def _config_call(config: type, args, kwargs):
    """(args, kwargs) that ``config`` accepts, each value of its field's type — the user's own,
    with a single number widened where the field is a per-axis pair — or None."""
    try:
        bound = inspect.signature(config).bind(*args, **kwargs)
    except TypeError:
        return None
    hints = _type_hints(config)
    for name, value in list(bound.arguments.items()):
        if name in hints and not _accepts(hints[name], value):
            pair = _pair_of(name, value, hints[name])
            if pair is None:
                return None
            bound.arguments[name] = pair
    return bound.args, bound.kwargs


# ---- the message --------------------------------------------------------------------------------
def _arg_text(name: str, default) -> str:
    if default is inspect.Parameter.empty or default is dataclasses.MISSING:
        return name
    return f"{name}={default!r}" if default is None or _is_plain(default) else f"{name}=..."


def _config_fields(config: type) -> str:
    """``d_input, d_output, bias=True, initializer=...``: a config's fields as it is called."""
    if not dataclasses.is_dataclass(config):
        return "..."
    return ", ".join(
        _arg_text(f.name, f.default if f.default_factory is dataclasses.MISSING else ...)
        for f in dataclasses.fields(config)
        if f.init
    )


def _value_text(value) -> str:
    # a tensor's or module's repr can run to many lines: the type says enough here
    plain = value is None or _is_plain(value) or (isinstance(value, (list, tuple)) and not value)
    return repr(value) if plain else f"<{type(value).__name__}>"


def _call_text(args, kwargs) -> str:
    return ", ".join([_value_text(a) for a in args] + [f"{k}={_value_text(v)}" for k, v in kwargs.items()])


def _hint(cls: type, shown: type, config: type, args, kwargs, init, problem: str | None = None) -> str:
    prefix = "nn." if cls.__module__.startswith("ember.nn") else ""
    fields = _config_fields(config)
    fitted = _config_call(config, args, kwargs)
    if fitted is not None:  # the same values, given to the config
        use = f"{prefix}{config.__name__}({_call_text(*fitted)}).init(), where {config.__name__} takes ({fields})"
    else:
        use = f"{prefix}{config.__name__}({fields}).init()"
    parts = ", ".join(
        _arg_text(p.name, p.default) for p in list(inspect.signature(init).parameters.values())[1:]
    )
    why = f" Got {problem}." if problem else ""
    return (
        f"{prefix}{shown.__name__}({_call_text(args, kwargs)}): ember layers are built from their config; "
        f"use {use} (.init(device, dtype) picks the device and float dtype). The constructor "
        f"{shown.__name__}({parts}) takes the built layer's parts: parameters, sub-modules and "
        f"resolved settings.{why}"
    )
