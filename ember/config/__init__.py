"""ember's runtime configuration: ``ember.toml`` (the counterpart of Burn's ``burn.toml``), with
``EMBER_*`` environment variables as overrides.

A setting's value comes from its environment variable when that is set (and not empty), else
from the configuration file, else from its default. :mod:`ember.config.files` says where the
file is looked for; :mod:`ember.config.settings` declares every setting as data, so a
subsystem that gains settings (the fusion engine's ``[fusion]``, autotune's ``[autotune]``)
adds a few rows there and reads them with :func:`get`; an unknown section or key in a file is
an error until then.

The file is found and checked on the first read, not at ``import ember``, and kept; the
environment is read on every call, so a variable set later still applies. :func:`reload`
reads the file again (tests, or after changing directory). Only the standard library (and
``tomli`` on Python 3.10) is needed: the thread settings are read before Numba loads.

``python -m ember.config`` prints every setting, its value and where it came from.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from .errors import ConfigError
from .files import CONFIG_VARIABLE, FILE_NAME, ConfigFile, load
from .kinds import Rejected
from .settings import SETTINGS, Setting, by_name

__all__ = [
    "CONFIG_VARIABLE",
    "DEFAULT",
    "FILE_NAME",
    "SETTINGS",
    "SETTINGS_BY_NAME",
    "ConfigError",
    "ConfigFile",
    "Resolved",
    "Setting",
    "config_file",
    "effective",
    "get",
    "reload",
    "resolve",
]

#: the source of a value neither the file nor the environment sets
DEFAULT = "default"

#: ``"section.key"`` -> its declaration
SETTINGS_BY_NAME = by_name()
_loaded: ConfigFile | None = None


@dataclass(frozen=True)
class Resolved:
    """A setting's effective value and where it came from: ``"default"``, the file's path, or
    the environment variable's name."""

    setting: Setting
    value: object
    source: str


def config_file() -> ConfigFile:
    """The configuration file in effect, found and checked on the first call."""
    global _loaded
    if _loaded is None:
        _loaded = load()
    return _loaded


def reload() -> ConfigFile:
    """Forget the file read so far and look it up again (from the working directory)."""
    global _loaded
    _loaded = None
    return config_file()


def resolve(name: str) -> Resolved:
    """The value of setting ``name`` (``"section.key"``) and its source.

    Raises:
        ConfigError: the file is invalid (whatever setting is asked for), or the setting's
            environment variable holds a value it does not accept.
        KeyError: no setting has that name.
    """
    setting = SETTINGS_BY_NAME[name]
    loaded = config_file()  # first, so that an invalid file is reported even when overridden
    raw = os.environ.get(setting.env, "").strip()
    if raw:
        try:
            return Resolved(setting, setting.kind.from_env(raw), setting.env)
        except Rejected:
            raise ConfigError(
                f"{setting.env}={raw!r}: {setting.env} must be {setting.kind.accepts_in_env} "
                f"(the environment variable overriding {setting.name})"
            ) from None
    if name in loaded.values:
        return Resolved(setting, loaded.values[name], str(loaded.path))
    return Resolved(setting, setting.default_value(), DEFAULT)


def get(name: str) -> object:
    """The effective value of setting ``name`` (``"section.key"``); see :func:`resolve`."""
    return resolve(name).value


def effective() -> list[Resolved]:
    """Every setting, resolved, in declaration order."""
    return [resolve(setting.name) for setting in SETTINGS]
