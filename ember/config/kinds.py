"""The kinds of value a setting holds, and how each is read from a TOML file or from an
environment variable.

A kind parses a value or raises :class:`Rejected`; the caller turns that into a
:class:`~ember.config.errors.ConfigError` naming the file or the variable. TOML values are
typed, so a file must use the right type (``num_threads = "4"`` is an error); environment
variables are text and are parsed. Booleans are refused where a number is expected, although
Python counts them as integers.
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import ConfigError

__all__ = [
    "Choice",
    "ChoiceOrPath",
    "EventLogger",
    "Kind",
    "PathKind",
    "PositiveInt",
    "PositiveSeconds",
    "Rejected",
    "Switch",
]

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


class Rejected(ValueError):
    """A value a kind does not accept (the message is filled in by the caller)."""


class Kind:
    """How one setting's values are read. ``accepts_in_file`` and ``accepts_in_env`` say what
    is accepted, for error messages and the README."""

    accepts_in_file = ""
    accepts_in_env = ""

    def from_toml(self, value: object, base: Path) -> object:
        """The value written in a file whose directory is ``base``."""
        raise NotImplementedError

    def from_env(self, raw: str) -> object:
        """The value of a (non-empty, stripped) environment variable."""
        raise NotImplementedError


class _Positive(Kind):
    """A number above zero (at or above zero when ``zero_allowed``): in a file, a TOML number
    of one of ``types``; in the environment, text that ``convert`` reads."""

    types: tuple[type, ...] = ()
    convert: type = int
    zero_allowed = False

    def from_toml(self, value: object, base: Path) -> object:
        if not isinstance(value, self.types) or isinstance(value, bool):
            raise Rejected
        if not (value >= 0 if self.zero_allowed else value > 0):
            raise Rejected
        return self.convert(value)

    def from_env(self, raw: str) -> object:
        try:
            value = self.convert(raw)
        except ValueError:
            raise Rejected from None
        return self.from_toml(value, Path())


class PositiveInt(_Positive):
    accepts_in_file = accepts_in_env = "a positive integer"
    types = (int,)
    convert = int


class Count(_Positive):
    accepts_in_file = accepts_in_env = "an integer, 0 or more"
    types = (int,)
    convert = int
    zero_allowed = True


class PositiveSeconds(_Positive):
    accepts_in_file = "a positive number of seconds (integer or float)"
    accepts_in_env = "a positive number of seconds"
    types = (int, float)
    convert = float


class Switch(Kind):
    accepts_in_file = "true or false"
    accepts_in_env = "0 or 1 (or true/false, yes/no, on/off)"

    def from_toml(self, value: object, base: Path) -> bool:
        if not isinstance(value, bool):
            raise Rejected
        return value

    def from_env(self, raw: str) -> bool:
        word = raw.lower()
        if word in _TRUE:
            return True
        if word in _FALSE:
            return False
        raise Rejected


class PathKind(Kind):
    """A directory; in a file, relative to the file's directory (``~`` expands to home)."""

    accepts_in_file = "a path (string; relative to the file's directory)"
    accepts_in_env = "a path"

    def from_toml(self, value: object, base: Path) -> Path:
        if not isinstance(value, str) or not value.strip():
            raise Rejected
        return base / Path(value).expanduser()

    def from_env(self, raw: str) -> Path:
        return Path(raw).expanduser()


class Choice(Kind):
    """One of a few words, case-insensitive."""

    def __init__(self, *words: str):
        self.words = words
        listed = ", ".join(repr(w) for w in words[:-1]) + f" or {words[-1]!r}"
        self.accepts_in_file = self.accepts_in_env = listed

    def from_toml(self, value: object, base: Path) -> str:
        if not isinstance(value, str):
            raise Rejected
        return self.from_env(value.strip())

    def from_env(self, raw: str) -> str:
        word = raw.lower()
        if word not in self.words:
            raise Rejected
        return word


class ChoiceOrPath(Kind):
    """One of a few words (case-insensitive), or else a path (in a file, relative to the
    file's directory): a cache that is a named place or a directory of one's own."""

    def __init__(self, *words: str):
        self.words = words
        listed = ", ".join(repr(w) for w in words)
        self.accepts_in_file = f"{listed} or a path (string; relative to the file's directory)"
        self.accepts_in_env = f"{listed} or a path"

    def from_toml(self, value: object, base: Path) -> str | Path:
        if not isinstance(value, str) or not value.strip():
            raise Rejected
        word = value.strip().lower()
        return word if word in self.words else base / Path(value).expanduser()

    def from_env(self, raw: str) -> str | Path:
        word = raw.lower()
        return word if word in self.words else Path(raw).expanduser()


class EventLogger(Kind):
    """Where an event log (the fusion log, the autotune log) goes and how much it says, as
    ``{"file": "/abs/path", "level": ...}`` or ``{"stderr": True, "level": ...}`` (plain data:
    ``python -m ember.config --json`` prints it). In a file, an inline table with exactly one
    of ``file`` (relative to the file's directory) and ``stderr = true``, and ``level``
    (``"basic"`` when left out). In the environment, ``stderr`` or a path, at the level the
    ``level_variable`` says (``env_level`` when unset): one variable names the target, the
    other only its level."""

    def __init__(self, what: str, levels: tuple[str, ...], level_variable: str, env_level: str):
        self.what = what
        self.levels = Choice(*levels)
        self.level_variable = level_variable
        self.env_level = env_level
        self.accepts_in_file = (
            'an inline table with exactly one of file = "PATH" and stderr = true, and optionally '
            f"level = {self.levels.accepts_in_file} (default 'basic'), no other keys: "
            '{ file = "/tmp/ember.log", level = "full" }'
        )
        self.accepts_in_env = f"stderr or a file path (the level: {level_variable}, default {env_level!r})"

    def from_toml(self, value: object, base: Path) -> dict:
        if not isinstance(value, dict) or not set(value) <= {"file", "stderr", "level"}:
            raise Rejected
        file, stderr = value.get("file"), value.get("stderr")
        if (file is None) == (stderr is None) or stderr not in (None, True):
            raise Rejected
        if file is not None and (not isinstance(file, str) or not file.strip()):
            raise Rejected
        level = self.levels.from_toml(value.get("level", "basic"), base)
        if stderr:
            return {"stderr": True, "level": level}
        return {"file": str(base / Path(file).expanduser()), "level": level}

    def from_env(self, raw: str) -> dict:
        word = os.environ.get(self.level_variable, "").strip() or self.env_level
        try:
            level = self.levels.from_env(word)
        except Rejected:
            raise ConfigError(
                f"{self.level_variable}={word!r}: {self.level_variable} must be "
                f"{self.levels.accepts_in_env} (the level of the {self.what})"
            ) from None
        if raw.lower() == "stderr":
            return {"stderr": True, "level": level}
        return {"file": str(Path(raw).expanduser().absolute()), "level": level}
