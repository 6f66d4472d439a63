"""Finding and reading the configuration file.

The file is, in this order: the one ``$EMBER_CONFIG`` names; ``ember.toml`` in the working
directory or the nearest parent that has one; the ``[tool.ember]`` table of the nearest
``pyproject.toml`` (a project's own ``pyproject.toml`` without that table means defaults: an
enclosing project's settings are not inherited). Without any, every setting has its default.

The whole file is checked when read: TOML syntax, sections, keys and the type and value of
each entry, against the table of :mod:`ember.config.settings`. Nothing is ignored.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from .errors import ConfigError
from .kinds import Rejected
from .settings import sections

__all__ = ["CONFIG_VARIABLE", "FILE_NAME", "PYPROJECT_TABLE", "ConfigFile", "load", "locate"]

CONFIG_VARIABLE = "EMBER_CONFIG"
FILE_NAME = "ember.toml"
PYPROJECT_TABLE = "tool.ember"


@dataclass(frozen=True)
class ConfigFile:
    """The file in effect (None: none, defaults) and the values it sets, by ``section.key``."""

    path: Path | None
    values: dict[str, object] = field(default_factory=dict)


def locate(start: Path | None) -> tuple[Path, bool] | None:
    """The file to read and whether it is a ``pyproject.toml``, or None; the directories from
    ``start`` up are searched (none when ``start`` is None).

    Raises:
        ConfigError: ``$EMBER_CONFIG`` names no file.
    """
    explicit = os.environ.get(CONFIG_VARIABLE, "").strip()
    if explicit:
        path = Path(explicit).expanduser().absolute()
        if not path.is_file():
            raise ConfigError(f"{CONFIG_VARIABLE}={explicit!r}: no such file ({path})")
        return path, False
    directories = [] if start is None else [start, *start.parents]
    for directory in directories:
        if (directory / FILE_NAME).is_file():
            return directory / FILE_NAME, False
    for directory in directories:
        if (directory / "pyproject.toml").is_file():
            return directory / "pyproject.toml", True
    return None


def load(start: Path | None = None) -> ConfigFile:
    """Find, read and check the configuration file, looking up from ``start`` (default: the
    working directory).

    Raises:
        ConfigError: the file cannot be read, is not valid TOML, or holds an unknown section or
            key or a value of the wrong type.
    """
    if start is None:
        try:
            start = Path.cwd()
        except OSError:  # the working directory was removed: only $EMBER_CONFIG can name a file
            pass
    located = locate(None if start is None else start.absolute())
    if located is None:
        return ConfigFile(None)
    path, in_pyproject = located
    document = read_toml(path)
    prefix = ""
    if in_pyproject:
        tool = document.get("tool")
        table = tool.get("ember") if isinstance(tool, dict) else None
        if table is None:
            return ConfigFile(None)
        if not isinstance(table, dict):
            raise ConfigError(f"{path}: {PYPROJECT_TABLE} must be a table ([{PYPROJECT_TABLE}])")
        document, prefix = table, PYPROJECT_TABLE + "."
    return ConfigFile(path, _check(document, path, prefix))


def read_toml(path: Path) -> dict:
    """The TOML document at ``path``; an unreadable or invalid file is a ConfigError naming it."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10: the same parser, as a package
        import tomli as tomllib
    try:
        with open(path, "rb") as stream:
            return tomllib.load(stream)
    except tomllib.TOMLDecodeError as error:  # its message gives the line and column
        raise ConfigError(f"{path}: invalid TOML: {error}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path}: cannot be read: {error}") from None


def _check(document: dict, path: Path, prefix: str) -> dict[str, object]:
    """The values of a parsed file, by ``section.key``, each checked against its setting."""
    known = sections()
    values: dict[str, object] = {}
    for section, table in document.items():
        if section not in known:
            accepted = ", ".join(f"[{prefix}{s}]" for s in known)
            raise ConfigError(
                f"{path}: unknown section [{prefix}{section}]{_did_you_mean(section, known, '[' + prefix, ']')}; "
                f"accepted sections: {accepted}"
            )
        if not isinstance(table, dict):
            raise ConfigError(
                f"{path}: {prefix}{section} = {_toml(table)}: {prefix}{section} must be a table "
                f"([{prefix}{section}] followed by its keys)"
            )
        for key, value in table.items():
            setting = known[section].get(key)
            name = f"{prefix}{section}.{key}"
            if setting is None:
                suggestion = _did_you_mean(key, known[section], f"{prefix}{section}.", "")
                raise ConfigError(
                    f"{path}: unknown key {name}{suggestion}; accepted keys of "
                    f"[{prefix}{section}]: {', '.join(known[section])}"
                )
            try:
                values[setting.name] = setting.kind.from_toml(value, path.parent)
            except Rejected:
                raise ConfigError(
                    f"{path}: {name} = {_toml(value)}: {name} must be {setting.kind.accepts_in_file}"
                ) from None
    return values


def _did_you_mean(word: str, candidates: Iterable[str], before: str, after: str) -> str:
    import difflib  # only when a message needs it: not part of `import ember`

    close = difflib.get_close_matches(word, list(candidates), n=1)
    return f" (did you mean {before}{close[0]}{after}?)" if close else ""


def _toml(value: object) -> str:
    """A value as TOML spells it, for messages."""
    import json  # only when a message needs it: not part of `import ember`

    try:
        return json.dumps(value)  # strings, numbers, booleans, arrays: TOML's spelling
    except TypeError:  # a date, a time: its own text is TOML's
        return str(value)
