"""Progress displays of the training loop (Burn's `renderer` module).

- `MetricsRenderer`: the protocol the loop drives, with `TrainingProgress` and `MetricState`;
- `CliMetricsRenderer`: plain, throttled, greppable lines (logs, pipes, CI);
- `TuiMetricsRenderer`: a live `rich` dashboard (imported lazily: `rich` is optional);
- `default_renderer(stream)`: the dashboard on a terminal, the CLI lines elsewhere
  (``EMBER_RENDERER=cli|tui|auto`` overrides).
"""

from __future__ import annotations

from typing import Any

from .base import (
    ENV_VAR,
    MetricsRenderer,
    MetricState,
    TrainingProgress,
    format_duration,
    format_metric_value,
    format_number,
    format_rate,
    is_tty,
)
from .cli import CliMetricsRenderer
from .default import default_renderer

__all__ = [
    "ENV_VAR",
    "CliMetricsRenderer",
    "MetricState",
    "MetricsRenderer",
    "TrainingProgress",
    "TuiMetricsRenderer",
    "default_renderer",
    "format_duration",
    "format_metric_value",
    "format_number",
    "format_rate",
    "is_tty",
]


def __getattr__(name: str) -> Any:
    # `rich` is an optional dependency: only touching the dashboard imports it.
    if name == "TuiMetricsRenderer":
        from .tui import TuiMetricsRenderer  # late: it imports rich, an optional dependency

        return TuiMetricsRenderer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
