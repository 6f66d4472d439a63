"""format_f64 / format_float / NumericEntry / MetricEntry: Burn's log and display formats."""

from __future__ import annotations

import math

import pytest

from ember.train.metric import (
    LossMetric,
    MetricEntry,
    MetricMetadata,
    NumericEntry,
    WeightedState,
    format_entry,
    format_f32,
    format_f64,
    format_f64_debug,
    format_float,
)


@pytest.mark.parametrize(
    "value, text",
    [
        (100.0, "100"),
        (100, "100"),
        (0.1, "0.1"),
        (0.5, "0.5"),
        (1e-7, "0.0000001"),
        (1e21, "1000000000000000000000"),
        (1e16, "10000000000000000"),
        (1.5e16, "15000000000000000"),
        (float("nan"), "NaN"),
        (float("inf"), "inf"),
        (float("-inf"), "-inf"),
        (-0.0, "-0"),
        (0.0, "0"),
        (84.375, "84.375"),
        (0.30000000000000004, "0.30000000000000004"),
        (-2.5e-10, "-0.00000000025"),
        (123456789.125, "123456789.125"),
        (1e-5, "0.00001"),
        (-3.0, "-3"),
        (5e-324, "0." + "0" * 323 + "5"),
        (1.7976931348623157e308, "17976931348623157" + "0" * 292),
        # exactly halfway between two shortest candidates: Rust takes the larger magnitude
        # (rust-lang/rust#130936), Python's repr the even digit
        (112171935477118.12, "112171935477118.13"),
        (-581170764721946.2, "-581170764721946.3"),
        (32461450983719.062, "32461450983719.063"),
    ],
)
def test_format_f64_matches_rust_display(value, text):
    assert format_f64(value) == text


def test_format_f64_round_trips_shortest_digits():
    for value in (0.1 + 0.2, 1 / 3, 2 / 3 * 1e-12, 6.02214076e23, 0.000123456789, 12345.678):
        text = format_f64(value)
        assert "e" not in text.lower()
        assert float(text) == value


def test_format_f64_accepts_numpy_scalars():
    import numpy as np

    assert format_f64(np.float32(0.5)) == "0.5"
    assert format_f64(np.float32(0.1)) == "0.10000000149011612"  # f32 widened to f64, as Burn
    assert format_f64(np.int64(7)) == "7"


@pytest.mark.parametrize(
    "value, text",
    [
        (0.5, "0.5"),
        (1.0, "1.0"),
        (100.0, "100.0"),
        (1e-4, "0.0001"),
        (1e-5, "1e-5"),
        (1e16, "1e16"),
        (1.5e16, "1.5e16"),
        (-2.5e-7, "-2.5e-7"),
        (0.0, "0.0"),
        (float("nan"), "NaN"),
    ],
)
def test_format_f64_debug_matches_rust_debug(value, text):
    assert format_f64_debug(value) == text


def test_format_f32_uses_f32_shortest_digits():
    assert format_f32(0.3) == "0.3"
    assert format_f32(0.5) == "0.5"
    assert format_f32(1.0) == "1"
    assert format_f32(123456789.0) == "123456790"
    assert format_f32(1e40) == "inf"


@pytest.mark.parametrize(
    "value, precision, text",
    [
        (84.375, 2, "84.38"),
        (0.5012, 2, "0.50"),
        (0.1, 2, "1.00e-1"),
        (0.05, 2, "5.00e-2"),
        (0.0, 2, "0.00e0"),
        (12345.678, 2, "12345.68"),
        (0.001234, 2, "1.23e-3"),
        (0.011, 3, "0.011"),
        (0.01, 3, "1.000e-2"),
        (float("nan"), 2, "NaN"),
        (float("inf"), 2, "inf"),
        (-5.0, 2, "-5.00"),
        (-0.05, 2, "-5.00e-2"),
        (1e-12, 2, "1.00e-12"),
        (0.25, 1, "2.5e-1"),
        (2.5, 0, "2e0"),
        (25.0, 0, "25"),
    ],
)
def test_format_float(value, precision, text):
    assert format_float(value, precision) == text


def test_format_entry_layout():
    assert format_entry(84.12, 84.375, "%") == "epoch 84.12 % - batch 84.38 %"
    assert format_entry(0.5, 0.25, None) == "epoch 0.50 - batch 0.25"
    assert format_entry("N/A", "N/A", "%") == "epoch N/A % - batch N/A %"


@pytest.mark.parametrize(
    "entry, line",
    [
        (NumericEntry.Value(0.5), "0.5"),
        (NumericEntry.Value(12.0), "12"),
        (NumericEntry.Aggregated(84.375, 32), "84.375,32"),
        (NumericEntry.Aggregated(0.0001, 1), "0.0001,1"),
        (NumericEntry.Final(100.0), "100,final"),
        (NumericEntry.Final(1e-7), "0.0000001,final"),
        (NumericEntry.Aggregated(0.0, 0), "0,0"),
    ],
)
def test_numeric_entry_round_trip(entry, line):
    assert entry.serialize() == line
    back = NumericEntry.deserialize(line)
    assert type(back) is type(entry) and back == entry
    assert NumericEntry.deserialize(line + "\n") == entry


def test_numeric_entry_special_values_round_trip():
    for value in (float("inf"), float("-inf"), -0.0, 5e-324, 1e300):
        back = NumericEntry.deserialize(NumericEntry.Final(value).serialize())
        assert back.current() == value and math.copysign(1, back.current()) == math.copysign(1, value)
    back = NumericEntry.deserialize(NumericEntry.Aggregated(float("nan"), 3).serialize())
    assert math.isnan(back.current()) and back.count == 3


def test_numeric_entry_variants_and_current():
    agg = NumericEntry.Aggregated(2.5, 4)
    assert isinstance(agg, NumericEntry) and isinstance(agg, NumericEntry.Aggregated)
    assert agg.current() == 2.5 and agg.aggregated_value == 2.5 and agg.count == 4
    assert NumericEntry.Final(3.0).current() == 3.0
    assert NumericEntry.Value(1.0).better_than(NumericEntry.Value(0.5), higher_is_better=True)
    assert NumericEntry.Value(0.5).better_than(NumericEntry.Value(1.0), higher_is_better=False)


@pytest.mark.parametrize("line", ["", "abc", "1,2,3", "0.5,-1", "0.5,x", "1_0", "0.5, 3", "0.5,fin"])
def test_numeric_entry_deserialize_errors(line):
    with pytest.raises(ValueError, match="NumericEntry.deserialize"):
        NumericEntry.deserialize(line)


def test_metric_metadata_and_entry():
    meta = MetricMetadata.fake(iteration=3, lr=0.01)
    assert meta.iteration == 3 and meta.lr == 0.01 and meta.epoch == 1
    entry = MetricEntry("Loss", "epoch 1.00 - batch 1.00", "1,1")
    assert entry.serialized == "1,1"


def test_weighted_state_ignores_zero_weight_batches():
    state = WeightedState()
    assert math.isnan(state.running)
    state.update(0.0, 0)
    assert state.running == 0.0  # only padding so far: no NaN
    state.update(50.0, 4)
    state.update(0.0, 0)
    state.update(100.0, 2)
    assert state.running == pytest.approx((50 * 4 + 100 * 2) / 6)
    assert state.current == 100.0 and state.current_count == 2


def test_numeric_metric_compute_writes_final_line():
    metric = LossMetric()
    metric.update(_Loss(0.5), MetricMetadata.fake())
    metric.update(_Loss(1.0), MetricMetadata.fake())
    final = metric.compute()
    assert final.serialized == "0.75,final"
    assert final.formatted == "epoch 0.75 - batch 1.00"
    metric.clear()
    assert math.isnan(metric.running_value().current())


class _Loss:
    def __init__(self, value):
        self.value = value

    def adapt(self, input_type):
        return input_type(self.value)
