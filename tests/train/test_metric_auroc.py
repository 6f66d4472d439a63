"""AUROC: exact area with ties, split-level accumulation, Macro/Micro, Burn's N/A per batch."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember
from ember.train.metric import AurocInput, AurocMetric, ClassReduction, MetricMetadata, NumericEntry, roc_auc

META = MetricMetadata.fake()


def _pairwise_auc(scores, labels):
    """Direct count over every (positive, negative) pair: wins + half the ties."""
    scores, labels = np.asarray(scores, float), np.asarray(labels, bool)
    pos, neg = scores[labels], scores[~labels]
    if not pos.size or not neg.size:
        return math.nan
    diff = pos[:, None] - neg[None, :]
    return ((diff > 0).sum() + 0.5 * (diff == 0).sum()) / (pos.size * neg.size)


def _feed(metric, scores, labels, sizes):
    start = 0
    for size in sizes:
        entry = metric.update(AurocInput(scores[start : start + size], labels[start : start + size]), META)
        assert entry.serialized is None  # per-batch value is N/A: no log line
        assert "batch N/A %" in entry.formatted
        start += size
    assert start == len(scores)


def test_roc_auc_by_hand_with_ties():
    # positives 0.8, 0.4; negatives 0.4, 0.1: pairs (0.8>0.4) (0.8>0.1) (0.4=0.4 -> 1/2) (0.4>0.1)
    assert roc_auc([0.8, 0.4, 0.4, 0.1], [1, 1, 0, 0]) == pytest.approx(3.5 / 4)
    assert math.isnan(roc_auc([0.1, 0.2], [1, 1]))
    assert roc_auc([0.5] * 4, [1, 0, 1, 0]) == 0.5


def test_binary_over_batches_matches_pairwise_count():
    rng = np.random.default_rng(0)
    scores = np.round(rng.random((57, 1)), 1)  # rounded: many ties, within and across batches
    labels = rng.random((57, 1)) < 0.4
    metric = AurocMetric.binary()
    _feed(metric, scores, labels, (10, 1, 30, 16))
    expected = 100 * _pairwise_auc(scores[:, 0], labels[:, 0])
    assert metric.running_value() == NumericEntry.Final(pytest.approx(expected, abs=1e-12))
    assert metric.value() is None
    final = metric.compute()
    assert final.serialized == NumericEntry.Final(metric.running_value().current()).serialize()
    assert final.formatted.endswith("batch N/A %")
    assert metric.name == "AUROC [Macro]" and metric.unit == "%" and metric.higher_is_better


@pytest.mark.parametrize("reduction", [ClassReduction.Macro, ClassReduction.Micro])
def test_multiclass_one_vs_rest(reduction):
    rng = np.random.default_rng(1)
    scores = rng.normal(size=(40, 3))
    labels = np.eye(3, dtype=bool)[rng.integers(0, 3, 40)]
    metric = AurocMetric.multiclass(reduction)
    _feed(metric, ember.tensor(scores.astype(np.float32)), ember.tensor(labels), (8, 8, 24))
    s32 = scores.astype(np.float32).astype(np.float64)
    if reduction is ClassReduction.Macro:
        expected = np.mean([_pairwise_auc(s32[:, j], labels[:, j]) for j in range(3)])
    else:
        expected = _pairwise_auc(s32.reshape(-1), labels.reshape(-1))
    assert metric.running_value().current() == pytest.approx(100 * expected, abs=1e-12)
    assert metric.name == f"AUROC [{reduction.value}]"


def test_macro_skips_undefined_columns_and_undefined_split_is_chance():
    scores = np.array([[0.9, 0.1], [0.2, 0.3], [0.6, 0.8]])
    labels = np.array([[1, 0], [0, 0], [1, 0]], dtype=bool)  # column 1 has no positive
    metric = AurocMetric.multilabel()
    metric.update(AurocInput(scores, labels), META)
    assert metric.running_value().current() == pytest.approx(100.0)
    undefined = AurocMetric.binary()
    undefined.update(AurocInput(np.array([[0.3], [0.7]]), np.array([[1], [1]])), META)
    assert undefined.running_value().current() == 50.0


def test_against_sklearn():
    sk = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(2)
    scores = np.round(rng.random((120, 4)), 2)
    labels = rng.random((120, 4)) < 0.3
    for reduction, average in ((ClassReduction.Macro, "macro"), (ClassReduction.Micro, "micro")):
        metric = AurocMetric.multilabel(reduction)
        _feed(metric, scores, labels, (32, 32, 32, 24))
        expected = 100 * sk.roc_auc_score(labels, scores, average=average)
        assert metric.running_value().current() == pytest.approx(expected, abs=1e-10)
    binary = AurocMetric.binary()
    _feed(binary, scores[:, :1], labels[:, :1], (50, 70))
    assert binary.running_value().current() == pytest.approx(
        100 * sk.roc_auc_score(labels[:, 0], scores[:, 0]), abs=1e-10
    )


def test_clear_and_errors():
    metric = AurocMetric.binary()
    metric.update(AurocInput(np.array([[0.9], [0.1]]), np.array([[1], [0]])), META)
    assert metric.running_value().current() == 100.0
    metric.clear()
    assert math.isnan(metric.running_value().current())
    assert metric.compute().serialized is None  # no batch: nothing to write
    metric.update(AurocInput(np.array([[0.9], [0.1]]), np.array([[0], [1]])), META)
    assert metric.running_value().current() == 0.0
    with pytest.raises(ValueError, match="2 columns, earlier batches of the split had 1"):
        metric.update(AurocInput(np.zeros((2, 2)), np.zeros((2, 2))), META)
    with pytest.raises(ValueError, match="AurocMetric: expected predictions"):
        metric.update(AurocInput(np.zeros((2, 1)), np.zeros((3, 1))), META)
