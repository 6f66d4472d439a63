"""``Config``: dataclass-based configuration objects saved as pretty JSON (Burn's ``Config``).

Subclassing :class:`Config` makes the class a dataclass (do not add ``@dataclass`` on top)
and gives it, per field, a ``with_<field>(value)`` method returning a modified copy::

    class EncoderConfig(Config):
        d_model: int
        n_heads: int
        dropout: float = 0.1
        norm: NormKind = NormKind.LAYER          # an Enum: stored by member name

    class ModelConfig(Config):
        encoder: EncoderConfig                   # nested config
        heads: list[HeadConfig] = field(default_factory=list)
        max_seq: int | None = None

    config = ModelConfig(EncoderConfig(128, 4)).with_max_seq(256)   # Burn: new(...).with_...
    config.save("config.json")                   # atomic, pretty JSON; str(config) is the same
    assert ModelConfig.load("config.json") == config

Dataclass options go in the class statement: ``class C(Config, frozen=True, kw_only=True)``.
As with any dataclass, a default that is a (non-frozen) config or a list needs
``field(default_factory=...)``.

Values are converted by each field's type annotation: nested configs, ``Enum`` (by member
name, as serde writes unit variants), ``tuple`` (a JSON list), ``list``, ``dict`` (str or
int keys), ``Optional``/unions, ``Literal``, ``pathlib.Path``, and JSON scalars. When a field
holds a subclass of its annotated config type, or its annotation is a union of several
config types, the value is written externally tagged, ``{"SubclassName": {...}}`` (serde's
enum form), so the right class comes back on load.

Loading is strict: an unknown key, a missing key, or a value of the wrong type raises
:class:`ConfigError` naming the key, the config class and where it sits in the document.
``fill_defaults=True`` lets missing keys take their declared defaults instead.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import json
import os
import types
import typing
from pathlib import Path, PurePath
from typing import Any, Literal, Union

import numpy as np

from .atomic import atomic_write_bytes

__all__ = ["Config", "ConfigError"]

_RESERVED = {"save", "load", "load_binary", "to_json", "from_json", "to_dict", "from_dict"}
_HINTS: dict[type, dict[str, Any]] = {}


class ConfigError(ValueError):
    """A config document does not match its class (unknown/missing key, wrong type)."""


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        try:
            _HINTS[cls] = typing.get_type_hints(cls)
        except NameError as exc:
            raise ConfigError(
                f"{cls.__name__}: cannot resolve a field annotation ({exc}); "
                "define the referenced types at module level"
            ) from None
    return _HINTS[cls]


def _fields(cls: type) -> list[dataclasses.Field]:
    return [f for f in dataclasses.fields(cls) if f.init]


def _config_types(hint: Any) -> list[type]:
    """Config classes among a union's members (or the hint itself)."""
    members = typing.get_args(hint) if _is_union(hint) else (hint,)
    return [m for m in members if isinstance(m, type) and issubclass(m, Config)]


def _is_union(hint: Any) -> bool:
    return typing.get_origin(hint) in (Union, types.UnionType)


def _subclasses(cls: type) -> dict[str, type]:
    """Tag name -> config class, for ``cls`` and its subclasses; a renamed class is found by its
    former names too (``_former_names``), so files that carry the old tag still load."""
    found, stack = {}, [cls]

    def add(config: type) -> None:
        for name in (config.__name__, *config.__dict__.get("_former_names", ())):
            found.setdefault(name, config)

    add(cls)
    while stack:
        for sub in stack.pop().__subclasses__():
            add(sub)
            stack.append(sub)
    return found


# --------------------------------------------------------------------------- encoding


def _encode(value: Any, hint: Any, where: str) -> Any:
    if isinstance(value, Config):
        body = {
            f.name: _encode(getattr(value, f.name), _hints(type(value)).get(f.name, Any), f"{where}.{f.name}")
            for f in _fields(type(value))
        }
        declared = _config_types(hint)
        tagged = len(declared) > 1 or (len(declared) == 1 and type(value) is not declared[0])
        return {type(value).__name__: body} if tagged else body
    if isinstance(value, enum.Enum):
        return value.name
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, PurePath):
        return str(value)
    args = typing.get_args(hint)
    if isinstance(value, (set, frozenset)):
        value = sorted(value, key=repr)
    if isinstance(value, (list, tuple)):
        if typing.get_origin(hint) is tuple and args and args[-1] is not Ellipsis:
            item_hints = list(args) + [Any] * max(0, len(value) - len(args))
        else:
            item_hints = [args[0] if args else Any] * len(value)
        return [_encode(v, h, f"{where}[{i}]") for i, (v, h) in enumerate(zip(value, item_hints))]
    if isinstance(value, dict):
        value_hint = args[1] if len(args) == 2 else Any
        out = {}
        for key, item in value.items():
            if not isinstance(key, (str, int)) or isinstance(key, bool):
                raise ConfigError(f"{where}: dict keys must be str or int, got {key!r}")
            out[str(key)] = _encode(item, value_hint, f"{where}[{key!r}]")
        return out
    raise ConfigError(
        f"{where}: cannot store {type(value).__name__} value {value!r} in a "
        "config; use a Config, Enum, list, tuple, dict, Path or JSON scalar"
    )


# --------------------------------------------------------------------------- decoding


def _kind(data: Any) -> str:
    return {
        dict: "an object",
        list: "a list",
        str: "a string",
        bool: "a bool",
        int: "an int",
        float: "a float",
        type(None): "null",
    }.get(type(data), type(data).__name__)


def _decode(data: Any, hint: Any, where: str, fill: bool) -> Any:
    if hint is Any or hint is object:
        return data
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if _is_union(hint):
        return _decode_union(data, args, where, fill)
    if origin is Literal:
        if data in args:
            return data
        raise ConfigError(f"{where}: expected one of {list(args)}, got {data!r}")
    if isinstance(hint, type) and issubclass(hint, Config):
        return _decode_config(data, hint, where, fill)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        if isinstance(data, str) and data in hint.__members__:
            return hint[data]
        raise ConfigError(
            f"{where}: expected a {hint.__name__} member name {list(hint.__members__)}, got {data!r}"
        )
    if hint is bool:
        if isinstance(data, bool):
            return data
    elif hint is int:
        if isinstance(data, int) and not isinstance(data, bool):
            return data
    elif hint is float:
        if isinstance(data, (int, float)) and not isinstance(data, bool):
            return float(data)
    elif hint is str:
        if isinstance(data, str):
            return data
    elif hint is type(None):
        if data is None:
            return None
    elif isinstance(hint, type) and issubclass(hint, PurePath):
        if isinstance(data, str):
            return hint(data)
    elif origin in (list, tuple, set, frozenset) or hint in (list, tuple):
        if isinstance(data, list):
            return _decode_sequence(data, origin or hint, args, where, fill)
    elif origin is dict or hint is dict:
        if isinstance(data, dict):
            key_hint, value_hint = args if len(args) == 2 else (str, Any)
            return {
                _decode_key(k, key_hint, where): _decode(v, value_hint, f"{where}[{k!r}]", fill)
                for k, v in data.items()
            }
    elif isinstance(hint, type):
        if isinstance(data, hint):
            return data
    else:
        return data  # an annotation ember does not interpret (TypeVar, Callable...)
    raise ConfigError(f"{where}: expected {_type_name(hint)}, got {_kind(data)} ({data!r})")


def _type_name(hint: Any) -> str:
    return hint.__name__ if isinstance(hint, type) and not typing.get_args(hint) else str(hint)


def _decode_key(key: str, hint: Any, where: str) -> Any:
    if hint is int:
        try:
            return int(key)
        except ValueError:
            raise ConfigError(f"{where}: dict key {key!r} is not an int") from None
    return key


def _decode_sequence(data: list, origin: Any, args: tuple, where: str, fill: bool) -> Any:
    if origin is tuple and args and args[-1] is not Ellipsis:
        if len(args) == 1 and args[0] == ():
            args = ()
        if len(data) != len(args):
            raise ConfigError(
                f"{where}: expected a list of {len(args)} items for tuple{list(args)}, got {len(data)}"
            )
        return tuple(_decode(v, h, f"{where}[{i}]", fill) for i, (v, h) in enumerate(zip(data, args)))
    item_hint = args[0] if args else Any
    items = [_decode(v, item_hint, f"{where}[{i}]", fill) for i, v in enumerate(data)]
    return items if origin is list else origin(items)


def _decode_union(data: Any, members: tuple, where: str, fill: bool) -> Any:
    if data is None and type(None) in members:
        return None
    members = tuple(m for m in members if m is not type(None))
    if len(members) == 1:
        return _decode(data, members[0], where, fill)
    configs = [m for m in members if isinstance(m, type) and issubclass(m, Config)]
    if configs and isinstance(data, dict) and len(data) == 1:
        (tag,) = data
        for cls in configs:
            if tag in _subclasses(cls):
                return _decode_config(data, cls, where, fill)
    errors = []
    for member in members:
        try:
            return _decode(data, member, where, fill)
        except ConfigError as exc:
            errors.append(str(exc))
    raise ConfigError(
        f"{where}: {data!r} matches none of {[_type_name(m) for m in members]} ({'; '.join(errors)})"
    )


def _decode_config(data: Any, cls: type, where: str, fill: bool) -> Any:
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected an object for {cls.__name__}, got {_kind(data)}")
    names = {f.name for f in _fields(cls)}
    if len(data) == 1:
        (tag,) = data
        candidates = _subclasses(cls)
        if tag not in names and tag in candidates and isinstance(data[tag], dict):
            cls, data = candidates[tag], data[tag]
            names = {f.name for f in _fields(cls)}
    unknown = [k for k in data if k not in names]
    if unknown:
        raise ConfigError(
            f"{where}: unknown key '{unknown[0]}' for {cls.__name__}; its fields are {sorted(names)}"
        )
    hints = _hints(cls)
    kwargs = {}
    for f in _fields(cls):
        if f.name in data:
            kwargs[f.name] = _decode(data[f.name], hints.get(f.name, Any), f"{where}.{f.name}", fill)
        elif not (
            fill and (f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING)
        ):
            raise ConfigError(f"{where}: missing key '{f.name}' for {cls.__name__}")
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where}: {cls.__name__} rejected the values: {exc}") from None


# --------------------------------------------------------------------------- Config


def _make_with(name: str):
    def with_field(self, value):
        return dataclasses.replace(self, **{name: value})

    with_field.__name__ = f"with_{name}"
    with_field.__doc__ = f"Return a copy of this config with ``{name}`` set to ``value``."
    return with_field


def _construction_text(config: "Config") -> str:
    """``LinearConfig(3, 2)``: the config's class called with its required fields' values
    (``LinearConfig(...)`` when they are not short plain values)."""
    name = type(config).__name__
    parts = []
    for f in _fields(type(config)):
        if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING:
            continue
        value = getattr(config, f.name, None)
        plain = (bool, int, float, str, type(None))
        if not isinstance(value, plain) and not (
            isinstance(value, (tuple, list)) and all(isinstance(v, plain) for v in value)
        ):
            return f"{name}(...)"
        parts.append(f"{f.name}={value!r}" if f.kw_only else repr(value))
    text = f"{name}({', '.join(parts)})"
    return text if len(text) <= 80 else f"{name}(...)"


def _call_hint(config: "Config", args: tuple, kwargs: dict) -> str:
    """Why a config cannot be called, and what to call instead."""
    name = type(config).__name__
    init = getattr(type(config), "init", None)
    if not callable(init):
        return f"{name} is a config (settings saved as JSON), not a module or a function: it cannot be called"
    try:
        takes_device = "device" in inspect.signature(init).parameters
    except (TypeError, ValueError):
        takes_device = False
    built = _construction_text(config)
    if takes_device:
        given = "x" if len(args) == 1 and not kwargs else "..."
        return (
            f"{name} is a config, not a module: build the module with `.init(device)` first, "
            f"e.g. `{built}.init()({given})` (init() without a device uses the default one)"
        )
    return f"{name} is a config, not the object it configures: build that with `.init()` first, e.g. `{built}.init()`"


# typing.dataclass_transform (3.11+) tells type checkers that subclasses are dataclasses.
_dataclass_transform = getattr(typing, "dataclass_transform", lambda **_: lambda cls: cls)


@_dataclass_transform()
class Config:
    """Base class of configuration dataclasses; see the module docstring for usage.

    Subclasses are turned into dataclasses automatically (keyword arguments of the class
    statement go to :func:`dataclasses.dataclass`) and get ``with_<field>`` methods.
    """

    def __init_subclass__(cls, **dataclass_options: Any):
        super().__init_subclass__()
        parent = getattr(cls, "__dataclass_params__", None)
        if parent is not None and parent.frozen:
            dataclass_options.setdefault("frozen", True)  # a frozen base needs frozen subclasses
        dataclasses.dataclass(cls, **dataclass_options)
        for f in _fields(cls):
            if f.name in _RESERVED:
                raise TypeError(
                    f"{cls.__name__}: field name '{f.name}' would hide the "
                    f"Config method of that name; rename the field"
                )
            if f"with_{f.name}" not in cls.__dict__:
                setattr(cls, f"with_{f.name}", _make_with(f.name))
        _HINTS.pop(cls, None)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """A config is not callable; this raises a ``TypeError`` saying to ``init()`` it first
        (``LinearConfig(3, 2)(x)`` instead of ``LinearConfig(3, 2).init()(x)``)."""
        raise TypeError(_call_hint(self, args, kwargs))

    def to_dict(self) -> dict[str, Any]:
        """The config as JSON-ready data (nested dicts, lists and scalars)."""
        return _encode(self, type(self), type(self).__name__)

    def to_json(self) -> str:
        """Pretty JSON (2-space indent, like ``serde_json::to_string_pretty``)."""
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False)

    def __str__(self) -> str:
        return self.to_json()

    def save(self, path: str | os.PathLike) -> Path:
        """Atomically write the config as pretty JSON.

        Args:
            path: destination file (written as given).

        Returns:
            The path written.
        """
        path = Path(path)
        atomic_write_bytes(path, self.to_json().encode("utf-8"))
        return path

    @classmethod
    def from_dict(cls, data: Any, *, fill_defaults: bool = False):
        """Build a config from JSON-ready data.

        Args:
            data: a dict as produced by :meth:`to_dict`.
            fill_defaults: let missing keys take their declared defaults instead of
                raising.

        Raises:
            ConfigError: unknown or missing keys, or values of the wrong type.
        """
        return _decode_config(data, cls, cls.__name__, fill_defaults)

    @classmethod
    def from_json(cls, text: str, *, fill_defaults: bool = False):
        """Parse a JSON document (see :meth:`from_dict`).

        Args:
            text: the JSON text.
            fill_defaults: let missing keys take their declared defaults.
        """
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{cls.__name__}: invalid JSON: {exc}") from None
        return cls.from_dict(data, fill_defaults=fill_defaults)

    @classmethod
    def load(cls, path: str | os.PathLike, *, fill_defaults: bool = False):
        """Read a config saved with :meth:`save`.

        Args:
            path: the JSON file.
            fill_defaults: let missing keys take their declared defaults.

        Raises:
            FileNotFoundError: no such file.
            ConfigError: the document does not match the class; the message names the file.
        """
        path = Path(path)
        try:
            return cls.load_binary(path.read_bytes(), fill_defaults=fill_defaults)
        except ConfigError as exc:
            raise ConfigError(f"config file '{path}': {exc}") from None

    @classmethod
    def load_binary(cls, data: bytes, *, fill_defaults: bool = False):
        """Parse a config from UTF-8 JSON bytes (Burn's ``load_binary``).

        Args:
            data: the encoded JSON document.
            fill_defaults: let missing keys take their declared defaults.
        """
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ConfigError(f"{cls.__name__}: config data is not UTF-8: {exc}") from None
        return cls.from_json(text, fill_defaults=fill_defaults)
