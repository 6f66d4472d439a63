"""`TuiMetricsRenderer`: a live terminal dashboard of the training, drawn with `rich`.

The dashboard (a `rich.live.Live` area at the bottom of the terminal) shows:

* a header: epoch x/y, the current split, elapsed time and status;
* two progress bars: the current split (items done / total, it/s, ETA) and the whole
  training (epochs, ETA);
* a table of every metric: its batch and epoch (running) value for train and valid;
* a small braille line chart per numeric metric, train and valid batch values over epochs.

It avoids the Burn TUI's known failures:

* logs and errors stay visible (#2062): `print` and writes to stderr are redirected above
  the live area, `log_handler()` gives a `logging.Handler` that prints there too, and
  `on_message` does the same;
* the last frame stays on screen after training (#2233, Burn's ``persistent``), followed by
  the summary given to `on_train_end`;
* the dashboard appears as soon as training starts and keeps ticking while a slow first
  step runs (#2853): a background refresh at most `refresh_per_second` times a second
  (never once per batch, however fast the batches);
* `close()` always restores the terminal (cursor, stdout/stderr) and may be called from a
  ``finally`` after a KeyboardInterrupt; a traceback raised afterwards prints normally.

`default_renderer` only picks this renderer on a real terminal (#2302).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import IO

from rich import box
from rich.console import Console, RenderableType
from rich.live import Live
from rich.panel import Panel
from rich.text import Text

from .base import (
    LaneRenderer,
    MetricState,
    TrainingProgress,
    format_duration,
    format_metric_value,
    format_rate,
    lane_of,
    rate_and_eta,
)
from .plot import Series, braille_chart
from .widgets import bar, boxed, fit, hjoin, text_table

__all__ = ["TuiMetricsRenderer"]

_LANES = ("train", "valid")
_STYLE = {"train": "cyan", "valid": "magenta"}
_LOG_STYLE = ((logging.ERROR, "bold red"), (logging.WARNING, "yellow"))  # highest first
_PLOT_MIN_WIDTH = 52  # a chart narrower than this is unreadable: fewer columns instead


class _ConsoleLogHandler(logging.Handler):
    """A logging handler printing records above the dashboard (see `log_handler`)."""

    def __init__(self, renderer: "TuiMetricsRenderer", level: int, fmt: str) -> None:
        super().__init__(level)
        self.setFormatter(logging.Formatter(fmt))
        self._renderer = renderer

    def emit(self, record: logging.LogRecord) -> None:
        try:
            style = next((s for level, s in _LOG_STYLE if record.levelno >= level), None)
            self._renderer._print_above(self.format(record), style)
        except Exception:  # logging must never break training
            self.handleError(record)


class TuiMetricsRenderer(LaneRenderer):
    """A live `rich` dashboard of the training's progress and metrics.

    Args:
        stream: where the dashboard is drawn when no `console` is given; `sys.stdout`
            when None.
        console: the `rich.console.Console` to draw on (tests pass one writing into a
            StringIO with ``force_terminal=True, width=120, record=True``).
        refresh_per_second: the most redraws per second (batches faster than that are
            not each drawn).
        auto_refresh: redraw from a background thread, so the display keeps moving while
            a long batch runs; when False it is redrawn from the training thread only,
            when a batch is rendered and a refresh is due (deterministic, for tests).
        persistent: leave the last frame on screen when the dashboard closes (Burn's
            ``persistent``); when False the live area is erased.
        plot_height: lines of each metric chart; None adapts it to the terminal height.
        clock: a monotonic clock in seconds (tests inject a fake one).
        force_terminal: passed to the `Console` built from `stream` (True draws the
            live area even when the stream is no terminal).

    Raises:
        ValueError: `refresh_per_second` is not positive or `plot_height` is below 2.
    """

    def __init__(
        self,
        stream: IO[str] | None = None,
        *,
        console: Console | None = None,
        refresh_per_second: float = 8.0,
        auto_refresh: bool = True,
        persistent: bool = True,
        plot_height: int | None = None,
        clock: Callable[[], float] = time.monotonic,
        force_terminal: bool | None = None,
    ) -> None:
        if not refresh_per_second > 0:
            raise ValueError(f"TuiMetricsRenderer: refresh_per_second must be > 0, got {refresh_per_second}")
        if plot_height is not None and plot_height < 2:
            raise ValueError(f"TuiMetricsRenderer: plot_height must be >= 2, got {plot_height}")
        self.console = console if console is not None else Console(file=stream, force_terminal=force_terminal)
        self._refresh_per_second = float(refresh_per_second)
        self._auto_refresh = auto_refresh
        self._persistent = persistent
        self._plot_height = plot_height
        self._clock = clock
        # Guards the state below: the refresh thread reads it while the loop writes it.
        self._lock = threading.RLock()
        self._live: Live | None = None
        self._closed = False
        self._status = "starting"
        self._num_epochs: int | None = None
        self._starting_epoch = 1
        self._epoch: int | None = None
        self._split: str | None = None
        self._train_started: float | None = None
        self._split_started: dict[str, float] = {}
        self._split_took: dict[str, float] = {}  # durations of the splits that ended
        self._split_totals: dict[str, int] = {}  # items per split, remembered across epochs
        self._epoch_items_done = 0  # items of the splits already finished this epoch
        self._progress: dict[str, TrainingProgress] = {}
        self._states: dict[str, dict[str, MetricState]] = {lane: {} for lane in _LANES}
        self._fresh: dict[str, list[MetricState]] = {lane: [] for lane in _LANES}
        self._series: dict[str, dict[str, Series]] = {}
        self._last_refresh: float | None = None
        # The charts are the costly part of a frame: redrawn only when a value was added.
        self._version = 0
        self._plot_cache: tuple[tuple[int, int, int], list[Text]] | None = None

    # -- live area -------------------------------------------------------------------------

    def _ensure_live(self) -> None:
        """Start the live area on first use (never again once closed)."""
        if self._live is not None or self._closed:
            return
        if self._train_started is None:
            self._train_started = self._clock()
        self._live = Live(
            console=self.console,
            get_renderable=self.dashboard,
            auto_refresh=self._auto_refresh,
            refresh_per_second=self._refresh_per_second,
            transient=not self._persistent,
            redirect_stdout=True,
            redirect_stderr=True,
        )
        self._live.start(refresh=True)  # draw at once: no blank screen during a slow step
        self._last_refresh = self._clock()

    def _refresh(self, force: bool = False) -> None:
        """Redraw now when forced, or when a redraw is due and nobody else is redrawing."""
        live = self._live
        if live is None:
            return
        now = self._clock()
        if not force:
            if self._auto_refresh:
                return  # the background thread redraws at the set rate
            due = self._last_refresh is None or now - self._last_refresh >= 1.0 / self._refresh_per_second
            if not due:
                return
        self._last_refresh = now
        live.refresh()

    def _print_above(self, text: str, style: str | None = None) -> None:
        """Print `text` above the live area (or plainly when there is none)."""
        self.console.print(Text(text, style=style or ""), highlight=False, markup=False)

    def log_handler(
        self, level: int = logging.INFO, fmt: str = "%(levelname)s %(name)s: %(message)s"
    ) -> logging.Handler:
        """A `logging.Handler` that prints records above the dashboard.

        Attach it (e.g. to the root logger) for the duration of the training: handlers
        writing to the original terminal streams would draw through the live area.

        Args:
            level: the least level printed.
            fmt: the `logging.Formatter` format of a record.
        """
        return _ConsoleLogHandler(self, level, fmt)

    # -- MetricsRenderer -------------------------------------------------------------------

    def on_train_start(self, num_epochs: int, starting_epoch: int) -> None:
        """Start the dashboard.

        Args:
            num_epochs: the number of epochs of the whole training.
            starting_epoch: the first epoch run (above 1 when resuming).
        """
        with self._lock:
            self._num_epochs = num_epochs
            self._starting_epoch = starting_epoch
            self._epoch = starting_epoch
            self._train_started = self._clock()
            self._status = "running"
        self._ensure_live()

    def on_split_start(self, split: str, epoch: int, num_items: int) -> None:
        """Switch the dashboard to `split` of `epoch`.

        Args:
            split: the split's name.
            epoch: the current epoch (1-based).
            num_items: the number of items in the split.
        """
        with self._lock:
            if epoch != self._epoch:
                self._epoch_items_done = 0
            self._epoch = epoch
            self._split = split
            self._status = "running"
            self._split_totals[split] = num_items
            self._split_started[split] = self._clock()
            self._split_took.pop(split, None)
            self._progress.pop(lane_of(split), None)
        self._ensure_live()
        self._refresh(force=True)

    def on_split_end(self, split: str, epoch: int) -> None:
        """Count the split as done in the epoch's progress and redraw.

        Args:
            split: the split's name.
            epoch: the current epoch (1-based).
        """
        with self._lock:
            self._epoch_items_done += self._split_totals.get(split, 0)
            started = self._split_started.get(split)
            if started is not None:  # freeze the split's speed for the frames to come
                self._split_took[split] = self._clock() - started
        self._refresh(force=True)

    def on_message(self, text: str) -> None:
        """Print a status line above the dashboard.

        Args:
            text: the message.
        """
        self._print_above(text)

    def on_train_end(self, summary: str | None) -> None:
        """Stop the dashboard, leaving its last frame on screen, then print the summary.

        Args:
            summary: the summary text, or None.
        """
        with self._lock:
            self._status = "ended"  # the split stays: the last frame shows where it ended
        self._stop_live()
        if summary:
            self._print_above(summary.rstrip("\n"))

    def close(self) -> None:
        """Stop the live area and restore the terminal; safe to call repeatedly."""
        with self._lock:
            if self._status not in ("ended", "starting"):
                self._status = "stopped"  # closed without on_train_end: interrupted
        self._stop_live()
        self._closed = True

    def __enter__(self) -> "TuiMetricsRenderer":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _stop_live(self) -> None:
        live, self._live = self._live, None
        self._closed = True
        if live is None:
            return
        try:
            live.stop()  # final full redraw, restores stdout/stderr and the cursor
        finally:
            try:
                self.console.show_cursor(True)
            except Exception:  # the terminal may already be gone
                pass

    # -- state -----------------------------------------------------------------------------

    def _update(self, lane: str, state: MetricState) -> None:
        with self._lock:
            self._states[lane][state.name] = state
            self._fresh[lane].append(state)

    def _render(self, lane: str, progress: TrainingProgress) -> None:
        """Note `lane`'s progress and new chart points; redraw if a redraw is due."""
        with self._lock:
            self._progress[lane] = progress
            if self._num_epochs is None:
                self._num_epochs = progress.epoch_total
            self._epoch = progress.epoch
            self._split = progress.split
            self._split_started.setdefault(progress.split, self._clock())
            self._version += 1
            x = progress.epoch - 1 + progress.progress.fraction
            for state in self._fresh[lane]:
                if state.current is not None:
                    by_lane = self._series.setdefault(state.name, {})
                    by_lane.setdefault(lane, Series()).append(x, float(state.current))
            self._fresh[lane] = []
        self._ensure_live()
        self._refresh()

    # -- drawing ---------------------------------------------------------------------------

    def __rich__(self) -> RenderableType:
        return self.dashboard()

    def dashboard(self) -> RenderableType:
        """The current dashboard frame as a rich renderable.

        ``console.print(renderer)`` draws it too; with a ``record=True`` console,
        ``console.export_text()`` then gives a plain-text capture of the frame.
        """
        width = max(40, self.console.width) - 4  # the outer panel's borders and padding
        with self._lock:
            now = self._clock()
            lines = self._bars(now, width)
            lines.append(Text(""))
            lines += self._metrics_table()
            lines.append(Text(""))
            key = (self._version, width, self.console.height - len(lines) - 2)
            if self._plot_cache is None or self._plot_cache[0] != key:
                self._plot_cache = (key, self._plots(width, key[2]))
            lines += self._plot_cache[1]
            title = self._title(now)
        body = Text("\n").join(fit(line, width) for line in lines)
        return Panel(body, title=title, title_align="left", box=box.ROUNDED, border_style="blue")

    def _title(self, now: float) -> Text:
        epoch = f"epoch {self._epoch or '-'}/{self._num_epochs or '-'}"
        split = f"split {self._split}" if self._split else ""
        elapsed = now - self._train_started if self._train_started is not None else None
        parts = ["ember training", epoch, split, f"elapsed {format_duration(elapsed)}", self._status]
        return Text(" │ ".join(p for p in parts if p), style="bold")

    def _bars(self, now: float, width: int) -> list[Text]:
        """The split's and the whole training's progress bars, one line each."""
        bar_width = max(10, min(40, width // 3))
        split = self._split
        current = self._progress.get(lane_of(split)) if split else None
        if current is not None and current.split != split:
            current = None
        done = current.progress.items_processed if current else 0
        total = current.progress.items_total if current else self._split_totals.get(split or "", 0)
        started = self._split_started.get(split or "")
        elapsed = self._split_took.get(split or "")
        if elapsed is None and started is not None:
            elapsed = now - started
        rate, eta = rate_and_eta(current, elapsed)
        split_line = Text(f"{split or '-':<10}", style=_STYLE.get(lane_of(split)) if split else "dim")
        split_line.append_text(bar(done / total if total else 0.0, bar_width, _STYLE[lane_of(split or "")]))
        split_line.append(
            f"  {done}/{total} items {100.0 * done / total if total else 0.0:5.1f}%  "
            f"{format_rate(rate)} it/s  ETA {format_duration(eta)}"
        )

        epochs = self._num_epochs or 0
        completed = (self._epoch - 1 + self._epoch_fraction(done)) if self._epoch else 0.0
        run_total = epochs - self._starting_epoch + 1
        run_done = completed - (self._starting_epoch - 1)
        run_elapsed = now - self._train_started if self._train_started is not None else None
        train_eta = None
        if self._status == "ended":
            completed, train_eta = float(epochs), 0.0
        elif run_elapsed and run_done > 0 and run_total > 0:
            train_eta = run_elapsed * (run_total - run_done) / run_done
        train_line = Text(f"{'training':<10}")
        train_line.append_text(bar(completed / epochs if epochs else 0.0, bar_width, "green"))
        train_line.append(
            f"  epoch {self._epoch or '-'}/{epochs or '-'} "
            f"{100.0 * completed / epochs if epochs else 0.0:5.1f}%  ETA {format_duration(train_eta)}"
        )
        return [split_line, train_line]

    def _epoch_fraction(self, current_done: int) -> float:
        """How much of the epoch is done, by items over every split seen so far."""
        total = sum(self._split_totals.values())
        if total <= 0:
            return 0.0
        return min(1.0, (self._epoch_items_done + current_done) / total)

    def _metrics_table(self) -> list[Text]:
        """Every metric's batch and epoch value, train and valid side by side."""
        header = ["Metric"]
        styles = ["bold"]
        for lane in _LANES:
            active = self._split is not None and lane_of(self._split) == lane
            header += [f"{lane} batch", f"{lane} epoch"]
            styles += [f"bold {_STYLE[lane]}" if active else _STYLE[lane]] * 2
        names = list(self._states["train"]) + [
            n for n in self._states["valid"] if n not in self._states["train"]
        ]
        rows = []
        for name in names:
            cells = [name]
            for lane in _LANES:
                state = self._states[lane].get(name)
                if state is None:
                    cells += ["", ""]
                elif state.numeric:
                    cells += [
                        format_metric_value(state.current, state.unit),
                        format_metric_value(state.running, state.unit),
                    ]
                else:
                    cells += [state.formatted, ""]
            rows.append(cells)
        lines = text_table(header, rows, styles)
        if not rows:
            lines.append(Text("(waiting for the first batch)", style="dim"))
        return lines

    def _plots(self, width: int, lines_left: int) -> list[Text]:
        """One boxed chart per numeric metric, as many per row as fit, within `lines_left`."""
        names = [n for n in self._series if any(len(s) for s in self._series[n].values())]
        if not names:
            return []
        per_row = max(1, min(len(names), width // _PLOT_MIN_WIDTH))
        rows = -(-len(names) // per_row)
        overhead = 3  # box borders and the legend line
        if self._plot_height is not None:
            height = self._plot_height
        else:
            height = min(6, lines_left // rows - overhead)
            while height < 3 and rows > 1:  # too short: drop rows of charts rather than squash
                rows -= 1
                height = min(6, lines_left // rows - overhead)
            if height < 2:
                return [Text(f"({len(names)} charts hidden: enlarge the terminal)", style="dim")]
        shown = names[: rows * per_row]
        box_width = width // per_row
        x_low = float(self._starting_epoch - 1)
        x_high = float(max(self._epoch or 1, self._starting_epoch))
        blocks = []
        for name in shown:
            by_lane = self._series[name]
            series = [(by_lane[lane].points(), _STYLE[lane]) for lane in _LANES if lane in by_lane]
            chart = braille_chart(series, box_width - 4, height, x_range=(x_low, x_high))
            legend = Text()
            unit = next(self._states[k][name].unit for k in _LANES if name in self._states[k])
            for lane in _LANES:
                if lane in by_lane and by_lane[lane].last is not None:
                    legend.append("━ ", style=_STYLE[lane])
                    legend.append(f"{lane} {format_metric_value(by_lane[lane].last, unit)}  ")
            legend.append(f"x: epochs {x_low:g}-{x_high:g}", style="dim")
            blocks.append(boxed(name, [*chart.split("\n"), legend], box_width))
        out: list[Text] = []
        for start in range(0, len(blocks), per_row):
            row = blocks[start : start + per_row]
            out += hjoin(row, [box_width] * len(row))
        hidden = len(names) - len(shown)
        if hidden:
            out.append(Text(f"(+{hidden} charts hidden: enlarge the terminal)", style="dim"))
        return out
