"""How a progress display is chosen.

`default_renderer` picks the rich dashboard (`TuiMetricsRenderer`) only when the output is
a real terminal: Burn drew its TUI into CI logs and pipes (#2302), ember falls back to the
plain `CliMetricsRenderer` there. `[train] renderer` in ember.toml, or `EMBER_RENDERER`
(`cli|tui|auto`), overrides the choice.
"""

from __future__ import annotations

import sys
from typing import IO

from ember import config

from .base import ENV_VAR, MetricsRenderer, is_tty
from .cli import CliMetricsRenderer

__all__ = ["default_renderer"]


def _rich_available() -> bool:
    try:
        import rich.live  # noqa: F401
    except ImportError:
        return False
    return True


def default_renderer(stream: IO[str] | None = None) -> MetricsRenderer:
    """The rich dashboard on a terminal, plain lines anywhere else.

    Args:
        stream: where the display goes; `sys.stdout` when None. The dashboard is used when
            this is a TTY and `rich` imports, the CLI renderer otherwise. The setting
            ``[train] renderer`` (environment variable ``EMBER_RENDERER``) overrides this:
            ``cli`` always gives the CLI renderer, ``tui`` always the dashboard, ``auto``
            (the default) decides as above.

    Raises:
        ValueError: (a ``ConfigError``) the setting is something other than cli, tui or auto.
        ImportError: ``EMBER_RENDERER=tui`` but `rich` is not installed.
    """
    choice = config.get("train.renderer")
    target = stream if stream is not None else sys.stdout
    forced = choice == "tui"
    if choice == "auto":
        choice = "tui" if is_tty(target) and _rich_available() else "cli"
    if choice == "tui":
        if not _rich_available():
            raise ImportError(
                f"{ENV_VAR}=tui needs the 'rich' package (pip install rich), which is not installed"
            )
        from .tui import TuiMetricsRenderer  # late: it imports rich, an optional dependency

        # Forced onto a non-terminal, the user still wants the live frames drawn.
        return TuiMetricsRenderer(stream=stream, force_terminal=True if forced else None)
    return CliMetricsRenderer(stream=stream)
