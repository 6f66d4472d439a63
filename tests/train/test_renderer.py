"""Tests of the training progress displays (`ember.train.renderer`).

Each renderer is driven through a fake two-epoch run (train and valid splits; Loss,
Accuracy and Learning Rate numeric metrics plus a text metric) with an injected clock,
so throttling and ETAs are deterministic and no test sleeps.
"""

from __future__ import annotations

import io
import logging
import re
import sys

import pytest

from ember.data.progress import Progress
from ember.train.renderer import (
    CliMetricsRenderer,
    MetricsRenderer,
    MetricState,
    TrainingProgress,
    default_renderer,
    format_duration,
    format_number,
)
from ember.train.renderer.base import estimate_total_batches

rich = pytest.importorskip("rich")
from rich.console import Console  # noqa: E402

from ember.train.renderer.tui import TuiMetricsRenderer  # noqa: E402

ANSI = re.compile(r"\x1b\[")
PROGRESS_LINE = re.compile(
    r"^\[(?P<split>\w+)\] epoch (?P<epoch>\d+)/(?P<epochs>\d+) "
    r"batch (?P<batch>\d+)/(?P<batches>\d+|\?) items (?P<done>\d+)/(?P<total>\d+) "
    r"(?P<rate>[\d.]+|\?) it/s ETA (?P<eta>\d+:\d\d:\d\d|\?)(?P<metrics>( \| .*)?)$"
)
BRAILLE = re.compile("[\u2801-\u28ff]")


class FakeClock:
    """A monotonic clock the fake run advances by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def fake_run(
    renderer: MetricsRenderer,
    clock: FakeClock,
    *,
    epochs: int = 2,
    sizes: dict[str, int] | None = None,
    batch_size: int = 32,
    step: float = 1.0,
    summary: str | None = "SUMMARY: 2 epochs",
    during=None,
) -> None:
    """Drive `renderer` like the training loop would; `step` seconds per batch."""
    sizes = sizes or {"train": 320, "valid": 100}
    renderer.on_train_start(epochs, 1)
    for epoch in range(1, epochs + 1):
        for split in ("train", "valid"):
            n = sizes[split]
            update = renderer.update_train if split == "train" else renderer.update_valid
            render = renderer.render_train if split == "train" else renderer.render_valid
            renderer.on_split_start(split, epoch, n)
            done = iteration = 0
            losses: list[float] = []
            while done < n:
                clock.now += step
                size = min(batch_size, n - done)
                done += size
                iteration += 1
                loss = 1.0 / (epoch + done / n) + (0.05 if split == "valid" else 0.0)
                acc = 50.0 + 10.0 * epoch + 10.0 * done / n
                losses.append(loss)
                running = sum(losses) / len(losses)
                update(
                    MetricState(
                        "Loss",
                        f"epoch {format_number(running)} - batch {format_number(loss)}",
                        loss,
                        running,
                        None,
                        False,
                    )
                )
                update(
                    MetricState(
                        "Accuracy",
                        f"epoch {format_number(acc)} % - batch {format_number(acc)} %",
                        acc,
                        acc,
                        "%",
                        True,
                    )
                )
                if split == "train":
                    update(
                        MetricState("Learning Rate", "epoch 1.00e-4 - batch 1.00e-4", 1e-4, 1e-4, None, False)
                    )
                update(MetricState("Device", "GPU 1.5/80.0 GB", None, None))
                render(TrainingProgress(Progress(done, n), epoch, epochs, iteration, split))
                if during is not None:
                    during(split, epoch, iteration)
            renderer.on_split_end(split, epoch)
    renderer.on_train_end(summary)


# ----------------------------------------------------------------------------------------
# Formatting helpers
# ----------------------------------------------------------------------------------------


def test_format_helpers():
    assert format_number(0.5234) == "0.52"
    assert format_number(81.25) == "81.25"
    assert format_number(1e-4) == "1.00e-4"
    assert format_number(float("nan")) == "NaN"
    assert format_duration(54) == "0:00:54"
    assert format_duration(3 * 86400 + 61) == "72:01:01"  # no "days," with a space
    assert format_duration(None) == "?"


def test_estimate_total_batches_with_partial_last_batch():
    # 100 items, batches of 32: 4 batches (the last holds 4 items).
    mid = TrainingProgress(Progress(64, 100), 1, 1, 2, "train")
    last = TrainingProgress(Progress(100, 100), 1, 1, 4, "train")
    assert estimate_total_batches(mid) == 4
    assert estimate_total_batches(last) == 4
    assert estimate_total_batches(TrainingProgress(Progress(0, 100), 1, 1, 0, "train")) is None


# ----------------------------------------------------------------------------------------
# CLI renderer
# ----------------------------------------------------------------------------------------


def run_cli(interval: float = 5.0) -> list[str]:
    out = io.StringIO()
    clock = FakeClock()
    renderer = CliMetricsRenderer(out, interval=interval, clock=clock)
    fake_run(renderer, clock)
    renderer.close()
    renderer.close()  # idempotent
    return out.getvalue().splitlines()


def test_cli_prints_burns_lines_verbatim():
    lines = run_cli()
    burn = [l for l in lines if not l.startswith("[") and not l.startswith("SUMMARY")]
    assert burn == [
        "Starting training for 2 epochs.",
        "Starting split 'train' with 320 items.",
        "Split ended.",
        "Starting split 'valid' with 100 items.",
        "Split ended.",
        "Starting split 'train' with 320 items.",
        "Split ended.",
        "Starting split 'valid' with 100 items.",
        "Split ended.",
        "Training ended.",
    ]
    assert lines[-2:] == ["Training ended.", "SUMMARY: 2 epochs"]


def test_cli_progress_lines_parse_and_are_throttled():
    lines = run_cli(interval=5.0)
    progress = [PROGRESS_LINE.match(l) for l in lines if " ended in " not in l and l.startswith("[")]
    assert all(progress), [l for l in lines if l.startswith("[")]
    train1 = [m for m in progress if m["split"] == "train" and m["epoch"] == "1"]
    # 10 batches, one second each, 5 s interval: batch 1, 6 and the last one.
    assert [int(m["batch"]) for m in train1] == [1, 6, 10]
    assert {m["batches"] for m in train1} == {"10"}
    first = train1[0]
    assert (first["done"], first["total"], first["epochs"]) == ("32", "320", "2")
    assert first["rate"] == "1.0" and first["eta"] == "0:00:09"
    assert train1[-1]["eta"] == "0:00:00"
    # Metrics in the order they were updated, with their display strings.
    metrics = train1[-1]["metrics"].split(" | ")[1:]
    assert [m.split(" epoch")[0].split(" GPU")[0] for m in metrics] == [
        "Loss",
        "Accuracy",
        "Learning Rate",
        "Device",
    ]
    assert "Accuracy epoch 70.00 % - batch 70.00 %" in metrics
    valid1 = [m for m in progress if m["split"] == "valid" and m["epoch"] == "1"]
    assert [int(m["batch"]) for m in valid1] == [1, 4]  # 100 items: 3 full + 1 partial


def test_cli_interval_zero_prints_every_batch():
    lines = run_cli(interval=0.0)
    assert sum(1 for l in lines if PROGRESS_LINE.match(l)) == 2 * (10 + 4)


def test_cli_split_end_line_has_running_values():
    lines = run_cli()
    ends = [l for l in lines if " ended in " in l]
    assert len(ends) == 4
    assert ends[0] == (
        "[train] epoch 1/2 ended in 0:00:10 | Loss 0.67 | Accuracy 70.00 % | "
        "Learning Rate 1.00e-4 | Device GPU 1.5/80.0 GB"
    )
    assert ends[1].startswith("[valid] epoch 1/2 ended in 0:00:04 | Loss ")
    assert "Learning Rate" not in ends[1]
    # The metric line comes right before Burn's "Split ended."
    assert lines[lines.index(ends[0]) + 1] == "Split ended."


def test_cli_prints_pending_progress_at_split_end_and_messages():
    out = io.StringIO()
    clock = FakeClock()
    renderer = CliMetricsRenderer(out, interval=60.0, clock=clock)
    renderer.on_split_start("train", 1, 1000)
    for i in range(1, 4):  # the split stops early (interrupted): items never reach total
        clock.now += 1
        renderer.render_train(TrainingProgress(Progress(10 * i, 1000), 1, 3, i, "train"))
    renderer.on_message("Interrupted: stopping after this split.")
    renderer.on_split_end("train", 1)
    lines = out.getvalue().splitlines()
    assert lines[0] == "Starting split 'train' with 1000 items."
    assert PROGRESS_LINE.match(lines[1])["batch"] == "1"
    assert lines[2] == "Interrupted: stopping after this split."
    assert PROGRESS_LINE.match(lines[3])["batch"] == "3"  # owed line printed at split end
    assert lines[4] == "[train] epoch 1/3 ended in 0:00:03"
    assert lines[5] == "Split ended."


def test_cli_output_has_no_ansi_and_flushes_each_line():
    class CountingStream(io.StringIO):
        flushes = 0

        def flush(self) -> None:
            CountingStream.flushes += 1
            super().flush()

    out = CountingStream()
    clock = FakeClock()
    renderer = CliMetricsRenderer(out, clock=clock)
    fake_run(renderer, clock)
    text = out.getvalue()
    assert not ANSI.search(text) and "\x1b" not in text
    assert CountingStream.flushes >= len(text.splitlines())


def test_cli_rejects_negative_interval():
    with pytest.raises(ValueError, match="interval"):
        CliMetricsRenderer(io.StringIO(), interval=-1)


def test_renderers_satisfy_the_protocol():
    assert isinstance(CliMetricsRenderer(io.StringIO()), MetricsRenderer)
    tui = TuiMetricsRenderer(console=make_console())
    assert isinstance(tui, MetricsRenderer)
    tui.close()


# ----------------------------------------------------------------------------------------
# TUI renderer
# ----------------------------------------------------------------------------------------


def make_console(height: int = 60) -> Console:
    return Console(
        file=io.StringIO(),
        force_terminal=True,
        width=120,
        height=height,
        record=True,
        color_system="truecolor",
    )


def run_tui(console: Console, **kwargs) -> TuiMetricsRenderer:
    clock = FakeClock()
    renderer = TuiMetricsRenderer(console=console, auto_refresh=False, clock=clock)
    fake_run(renderer, clock, step=0.05, **kwargs)
    return renderer


def last_frame(text: str) -> str:
    """The last dashboard frame printed in a recorded console's text."""
    start = text.rindex("╭─ ember training")
    end = text.index("\n", text.index("╰──", text.rindex("│ training")))
    return text[start:end]


def test_tui_shows_metrics_progress_and_plots():
    console = make_console()
    renderer = run_tui(console)
    renderer.close()
    text = console.export_text()
    frame = last_frame(text)
    assert "epoch 2/2" in frame and "ended" in frame
    for name in ("Loss", "Accuracy", "Learning Rate", "Device"):
        assert name in frame
    # epoch 2 ends with accuracy 80 %; the learning rate is only a train metric.
    assert "80.00 %" in frame and "1.00e-4" in frame and "GPU 1.5/80.0 GB" in frame
    assert "100/100 items" in frame  # the last split's bar, kept in the final frame
    assert "train batch" in frame and "valid epoch" in frame
    assert BRAILLE.search(frame), "no chart drawn"
    assert "━ train" in frame and "━ valid" in frame
    assert len(frame.splitlines()) <= 60


def test_tui_final_frame_persists_and_summary_follows():
    console = make_console()
    run_tui(console, summary="=== Learner Summary ===\nTotal Epochs: 2").close()
    text = console.export_text()
    assert text.rindex("Total Epochs: 2") > text.rindex("│ training")
    assert text.rindex("=== Learner Summary ===") > text.rindex("╰──")


def test_tui_refreshes_at_most_the_set_rate():
    console = make_console()
    clock = FakeClock()
    renderer = TuiMetricsRenderer(console=console, auto_refresh=False, clock=clock, refresh_per_second=8)
    calls = []
    original = renderer.dashboard

    def counting():
        calls.append(clock.now)
        return original()

    renderer.dashboard = counting  # what Live calls to draw a frame
    # 840 batches at 1 ms each (0.84 s): per-batch redraws would be 840.
    fake_run(renderer, clock, step=0.001, batch_size=1)
    renderer.close()
    # ~8 timed redraws per second + one at start + two per split (start/end) + final.
    assert len(calls) < 8 * 1 + 1 + 2 * 4 + 4, len(calls)


def test_tui_log_handler_and_prints_show_above_the_live_area():
    console = make_console()
    clock = FakeClock()
    renderer = TuiMetricsRenderer(console=console, auto_refresh=False, clock=clock)
    logger = logging.getLogger("ember.test.renderer")
    logger.setLevel(logging.INFO)
    handler = renderer.log_handler()
    logger.addHandler(handler)
    stdout, stderr = sys.stdout, sys.stderr

    def during(split, epoch, iteration):
        if (split, epoch, iteration) == ("train", 1, 3):
            logger.info("checkpoint saved at %s", "ckpt/1")
            logger.error("dataset row %d is broken", 7)
            print("a stray print")
            sys.stderr.write("a stray stderr line\n")

    try:
        fake_run(renderer, clock, step=0.05, during=during)
    finally:
        logger.removeHandler(handler)
        renderer.close()
    assert sys.stdout is stdout and sys.stderr is stderr  # redirection undone
    text = console.export_text()
    assert "INFO ember.test.renderer: checkpoint saved at ckpt/1" in text
    assert "ERROR ember.test.renderer: dataset row 7 is broken" in text
    assert "a stray print" in text and "a stray stderr line" in text
    # The log lines were printed while the dashboard was live, before its last frame.
    assert text.index("checkpoint saved") < text.rindex("╭─ ember training")


def test_tui_message_printed_above_dashboard():
    console = make_console()
    clock = FakeClock()
    renderer = TuiMetricsRenderer(console=console, auto_refresh=False, clock=clock)
    renderer.on_train_start(3, 2)
    renderer.on_message("Resuming from checkpoint at epoch 1.")
    renderer.close()
    text = console.export_text()
    assert "Resuming from checkpoint at epoch 1." in text
    assert "epoch 2/3" in text


def test_tui_close_is_idempotent_and_restores_after_keyboard_interrupt():
    console = make_console()
    clock = FakeClock()
    renderer = TuiMetricsRenderer(console=console, auto_refresh=False, clock=clock)
    stdout = sys.stdout

    def interrupt(split, epoch, iteration):
        if iteration == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        try:
            fake_run(renderer, clock, during=interrupt)
        finally:
            renderer.close()
    renderer.close()
    renderer.close()
    assert sys.stdout is stdout
    raw = console.file.getvalue()
    assert raw.rstrip().endswith("\x1b[?25h") or "\x1b[?25h" in raw[-200:]  # cursor shown
    frame = last_frame(console.export_text())
    assert "stopped" in frame and "64/320 items" in frame
    # Calls after close neither restart the live area nor raise.
    renderer.render_train(TrainingProgress(Progress(96, 320), 1, 2, 3, "train"))
    renderer.on_message("after close")
    assert "after close" in console.export_text()


def test_tui_close_without_start_and_auto_refresh_thread():
    TuiMetricsRenderer(console=make_console()).close()
    console = make_console()
    renderer = TuiMetricsRenderer(console=console, refresh_per_second=50)  # real thread
    fake_run(renderer, FakeClock(), step=0.01)
    renderer.close()
    assert "Learning Rate" in console.export_text()


def test_tui_frame_exports_to_text_and_fits_small_terminals():
    console = make_console()
    renderer = run_tui(console)
    renderer.close()
    capture = Console(file=io.StringIO(), width=120, height=40, record=True)
    renderer.console = capture  # size the frame for this console
    capture.print(renderer)
    frame = capture.export_text()
    assert frame.startswith("╭─ ember training │ epoch 2/2")
    assert len(frame.splitlines()) <= 40 and BRAILLE.search(frame)
    small = Console(file=io.StringIO(), width=80, height=16, record=True)
    renderer.console = small
    small.print(renderer)
    text = small.export_text()
    assert "Accuracy" in text and "charts hidden" in text


def test_tui_rejects_bad_options():
    with pytest.raises(ValueError, match="refresh_per_second"):
        TuiMetricsRenderer(console=make_console(), refresh_per_second=0)
    with pytest.raises(ValueError, match="plot_height"):
        TuiMetricsRenderer(console=make_console(), plot_height=1)


# ----------------------------------------------------------------------------------------
# default_renderer
# ----------------------------------------------------------------------------------------


class FakeTty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def clean_env(monkeypatch):
    monkeypatch.delenv("EMBER_RENDERER", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    return monkeypatch


def test_default_renderer_picks_by_tty(clean_env):
    assert isinstance(default_renderer(io.StringIO()), CliMetricsRenderer)
    tui = default_renderer(FakeTty())
    assert isinstance(tui, TuiMetricsRenderer)
    tui.close()


def test_default_renderer_dumb_terminal_is_cli(clean_env):
    clean_env.setenv("TERM", "dumb")
    assert isinstance(default_renderer(FakeTty()), CliMetricsRenderer)


def test_default_renderer_env_override(clean_env):
    clean_env.setenv("EMBER_RENDERER", "cli")
    assert isinstance(default_renderer(FakeTty()), CliMetricsRenderer)
    clean_env.setenv("EMBER_RENDERER", "TUI")
    forced = default_renderer(io.StringIO())
    assert isinstance(forced, TuiMetricsRenderer) and forced.console.is_terminal
    forced.close()
    clean_env.setenv("EMBER_RENDERER", "fancy")
    with pytest.raises(ValueError, match="EMBER_RENDERER='fancy'.*'cli', 'tui' or 'auto'"):
        default_renderer(io.StringIO())


def test_series_stays_bounded_and_keeps_the_last_value():
    from ember.train.renderer.plot import Series, braille_chart

    series = Series(max_points=64)
    for i in range(10_000):
        series.append(i / 10_000, float(i % 7))
    series.append(1.0, float("nan"))  # dropped
    assert len(series) <= 65 and series.last == 9_999 % 7
    xs = [x for x, _ in series.points()]
    assert xs == sorted(xs) and xs[0] < 0.02 and xs[-1] > 0.98  # whole history kept
    chart = braille_chart([(series.points(), "cyan")], 40, 4).plain.splitlines()
    assert len(chart) == 4 and all(len(line) == 40 for line in chart)
    assert BRAILLE.search("".join(chart))
