"""The one error of the configuration: a file or a variable holds something ember does not
accept."""

from __future__ import annotations

__all__ = ["ConfigError"]


class ConfigError(ValueError):
    """An invalid ``ember.toml`` (syntax, unknown section or key, wrong type or value) or an
    invalid ``EMBER_*`` variable. The message names the file or the variable, the key, the
    value, and what is accepted."""
