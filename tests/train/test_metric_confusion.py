"""Precision, recall and F-beta: names, decision rules, Macro/Micro, split-level counts."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.train.metric import (
    ClassReduction,
    ConfusionStatsInput,
    DecisionRule,
    FBetaScoreMetric,
    MetricMetadata,
    NumericEntry,
    PrecisionMetric,
    RecallMetric,
)

META = MetricMetadata.fake()
MACRO, MICRO = ClassReduction.Macro, ClassReduction.Micro


def _counts(pred, actual):
    pred, actual = np.asarray(pred, bool), np.asarray(actual, bool)
    return (pred & actual).sum(0), (pred & ~actual).sum(0), (~pred & actual).sum(0)


def _ratio(num, den, empty):
    num, den = np.asarray(num, float), np.asarray(den, float)
    return np.where(den > 0, 100 * num / np.where(den > 0, den, 1), empty)


def _reference(kind, pred, actual, reduction, beta=1.0):
    """Precision / recall / F-beta in % of the whole data, computed directly with NumPy."""
    tp, fp, fn = _counts(pred, actual)
    if reduction is MICRO:
        tp, fp, fn = tp.sum(keepdims=True), fp.sum(keepdims=True), fn.sum(keepdims=True)
    if kind == "precision":
        scores = _ratio(tp, tp + fp, 0.0)
    elif kind == "recall":
        scores = _ratio(tp, tp + fn, 0.0)
    else:
        b2 = beta**2
        scores = _ratio((1 + b2) * tp, (1 + b2) * tp + b2 * fn + fp, np.nan)
    scores = scores[~np.isnan(scores)]
    return float(scores.mean()) if scores.size else 0.0


def _top1_mask(scores):
    mask = np.zeros(scores.shape, bool)
    mask[np.arange(len(scores)), scores.argmax(1)] = True
    return mask


def test_names_follow_burn():
    assert PrecisionMetric.binary(0.5).name == "Precision @ Threshold(0.5) [Macro]"
    assert PrecisionMetric().name == "Precision @ Threshold(0.5) [Macro]"
    assert RecallMetric.multiclass(1, MICRO).name == "Recall @ TopK(1) [Micro]"
    assert PrecisionMetric.multilabel(0.3, MICRO).name == "Precision @ Threshold(0.3) [Micro]"
    assert FBetaScoreMetric.binary(2.0, 1.0).name == "FBetaScore (2) @ Threshold(1.0) [Macro]"
    assert FBetaScoreMetric.multiclass(0.5, 3).name == "FBetaScore (0.5) @ TopK(3) [Macro]"
    assert str(DecisionRule.Threshold(1e-5)) == "Threshold(1e-5)"
    assert str(DecisionRule()) == "Threshold(0.5)"
    with pytest.raises(ValueError, match="positive integer"):
        DecisionRule.TopK(0)


def test_binary_threshold_by_hand():
    scores = np.array([[0.9], [0.6], [0.4], [0.2], [0.7]])
    labels = np.array([[1], [0], [1], [0], [1]], dtype=bool)  # predicted: 1 1 0 0 1
    # tp = 2, fp = 1, fn = 1
    p, r, f = PrecisionMetric.binary(0.5), RecallMetric.binary(0.5), FBetaScoreMetric.binary(1.0, 0.5)
    for m in (p, r, f):
        m.update(ConfusionStatsInput(ember.tensor(scores), ember.tensor(labels)), META)
    assert p.value() == NumericEntry.Aggregated(pytest.approx(200 / 3), 5)
    assert r.value().current() == pytest.approx(200 / 3)
    assert f.value().current() == pytest.approx(100 * 4 / 6)
    assert p.unit == "%" and p.higher_is_better


def test_fbeta_beta_weights_recall():
    scores = np.array([[0.9], [0.8], [0.1], [0.2]])
    labels = np.array([[1], [0], [1], [1]])  # tp 1, fp 1, fn 2
    f2 = FBetaScoreMetric.binary(2.0, 0.5)
    f2.update(ConfusionStatsInput(scores, labels), META)
    assert f2.value().current() == pytest.approx(100 * 5 * 1 / (5 * 1 + 4 * 2 + 1))


@pytest.mark.parametrize(
    "kind, cls", [("precision", PrecisionMetric), ("recall", RecallMetric), ("fbeta", FBetaScoreMetric)]
)
@pytest.mark.parametrize("reduction", [MACRO, MICRO])
def test_split_value_equals_the_concatenated_data(kind, cls, reduction):
    rng = np.random.default_rng(7)
    batches = [(rng.normal(size=(b, 4)), rng.integers(0, 4, b)) for b in (16, 3, 9, 1)]
    metric = cls.multiclass(1.0, 1, reduction) if cls is FBetaScoreMetric else cls.multiclass(1, reduction)
    for scores, targets in batches:
        metric.update(ConfusionStatsInput(scores, np.eye(4, dtype=bool)[targets]), META)
        assert metric.value().current() == pytest.approx(
            _reference(kind, _top1_mask(scores), np.eye(4, dtype=bool)[targets], reduction)
        )
    all_scores = np.concatenate([s for s, _ in batches])
    all_targets = np.concatenate([t for _, t in batches])
    expected = _reference(kind, _top1_mask(all_scores), np.eye(4, dtype=bool)[all_targets], reduction)
    assert metric.running_value() == NumericEntry.Final(pytest.approx(expected))


def test_split_value_is_not_the_mean_of_batch_values():
    # Burn #5514: averaging per-batch values weights a 1-sample batch like a 9-sample one.
    metric = PrecisionMetric.binary(0.5)
    big_scores = np.array([[0.9]] * 9)
    big_labels = np.array([[1]] * 9)  # precision 100 %
    small_scores, small_labels = np.array([[0.9]]), np.array([[0]])  # precision 0 %
    metric.update(ConfusionStatsInput(big_scores, big_labels), META)
    metric.update(ConfusionStatsInput(small_scores, small_labels), META)
    assert metric.running_value().current() == pytest.approx(90.0)  # 9 tp / 10 predicted
    assert metric.running_value().current() != pytest.approx((100.0 + 0.0) / 2)


def test_macro_and_micro_differ_and_match_definitions():
    # class 0: tp 3, fp 1; class 1: tp 0, fp 0 (never predicted); class 2: tp 1, fp 3
    pred = np.array([[1, 0, 0]] * 4 + [[0, 0, 1]] * 4, dtype=float)
    actual = np.array([[1, 0, 0]] * 3 + [[0, 1, 0]] + [[0, 0, 1]] + [[1, 0, 0]] * 3, dtype=bool)
    macro, micro = PrecisionMetric.multiclass(1, MACRO), PrecisionMetric.multiclass(1, MICRO)
    for m in (macro, micro):
        m.update(ConfusionStatsInput(pred, actual), META)
    assert macro.value().current() == pytest.approx(
        (75.0 + 0.0 + 25.0) / 3
    )  # a never-predicted class scores 0
    assert micro.value().current() == pytest.approx(100 * 4 / 8)


def test_fbeta_macro_skips_undefined_classes():
    # class 1 is neither predicted nor present: no F-score, left out of the Macro mean
    pred = np.array([[0.9, 0.0, 0.1], [0.1, 0.0, 0.9]])
    actual = np.array([[1, 0, 0], [1, 0, 0]], dtype=bool)
    f1 = FBetaScoreMetric.multiclass(1.0, 1, MACRO)
    f1.update(ConfusionStatsInput(pred, actual), META)
    # class 0: tp 1, fn 1 -> 2/3; class 2: fp 1 -> 0
    assert f1.value().current() == pytest.approx((100 * 2 / 3 + 0.0) / 2)
    empty = FBetaScoreMetric.binary(1.0, 0.5)
    empty.update(ConfusionStatsInput(np.zeros((3, 1)), np.zeros((3, 1))), META)
    assert empty.value().current() == 0.0


def test_multilabel_threshold_against_sklearn():
    metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(11)
    scores = rng.random((40, 5))
    labels = rng.random((40, 5)) < 0.4
    for reduction, average in ((MACRO, "macro"), (MICRO, "micro")):
        p, r = PrecisionMetric.multilabel(0.6, reduction), RecallMetric.multilabel(0.6, reduction)
        for lo, hi in ((0, 13), (13, 14), (14, 40)):
            p.update(ConfusionStatsInput(scores[lo:hi], labels[lo:hi]), META)
            r.update(ConfusionStatsInput(scores[lo:hi], labels[lo:hi]), META)
        pred = scores > 0.6
        assert p.running_value().current() == pytest.approx(
            100 * metrics.precision_score(labels, pred, average=average, zero_division=0)
        )
        assert r.running_value().current() == pytest.approx(
            100 * metrics.recall_score(labels, pred, average=average, zero_division=0)
        )


def test_top_k_rule_predicts_k_classes():
    scores = np.array([[0.5, 0.3, 0.2], [0.1, 0.2, 0.7]])
    actual = np.array([[0, 1, 0], [1, 0, 0]], dtype=bool)
    r = RecallMetric.multiclass(2, MICRO)
    r.update(ConfusionStatsInput(scores, actual), META)
    assert r.value().current() == pytest.approx(50.0)  # sample 0 hit in its top 2, sample 1 not
    with pytest.raises(ValueError, match="top_k=4 exceeds the 3 classes"):
        RecallMetric.multiclass(4).update(ConfusionStatsInput(scores, actual), META)


def test_shape_errors_are_clear():
    with pytest.raises(ValueError, match=r"PrecisionMetric: expected predictions \[B, C\] and targets"):
        PrecisionMetric().update(ConfusionStatsInput(np.zeros((2, 3)), np.zeros((2, 2))), META)
    metric = PrecisionMetric.multiclass(1)
    metric.update(ConfusionStatsInput(np.eye(3), np.eye(3)), META)
    with pytest.raises(ValueError, match="4 classes, earlier batches of the split had 3"):
        metric.update(ConfusionStatsInput(np.eye(4), np.eye(4)), META)


def test_clear_resets_counts():
    metric = RecallMetric.binary()
    metric.update(ConfusionStatsInput(np.array([[0.9]]), np.array([[1]])), META)
    metric.clear()
    metric.update(ConfusionStatsInput(np.array([[0.1]]), np.array([[1]])), META)
    assert metric.running_value().current() == 0.0
    assert metric.compute().serialized == "0,final"
