"""Loss, Accuracy, Top-K accuracy, Perplexity and Hamming score against NumPy, padding included."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember
from ember.train.metric import (
    AccuracyInput,
    AccuracyMetric,
    HammingScore,
    HammingScoreInput,
    LossInput,
    LossMetric,
    MetricMetadata,
    NumericEntry,
    PerplexityInput,
    PerplexityMetric,
    TopKAccuracyInput,
    TopKAccuracyMetric,
)

META = MetricMetadata.fake()


def _log_softmax(x):
    x = np.asarray(x, dtype=np.float64)
    s = x - x.max(axis=1, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=1, keepdims=True))


def test_loss_metric_scalar_and_per_sample():
    metric = LossMetric()
    entry = metric.update(LossInput(ember.tensor(0.5)), META)
    assert entry.name == "Loss" and entry.serialized == "0.5,1"
    entry = metric.update(LossInput(ember.tensor([1.0, 2.0, 3.0, 6.0])), META)
    assert entry.serialized == "3,4"  # mean of the batch, weight = first dimension
    assert metric.running_value() == NumericEntry.Final((0.5 + 3 * 4) / 5)
    assert metric.higher_is_better is False and metric.unit is None
    assert entry.formatted == "epoch 2.50 - batch 3.00"


def test_loss_of_float32_is_logged_as_its_f64_value():
    metric = LossMetric()
    entry = metric.update(LossInput(ember.tensor(0.1)), META)
    assert entry.serialized == "0.10000000149011612,1"


def test_accuracy_against_numpy():
    rng = np.random.default_rng(0)
    metric = AccuracyMetric()
    correct = total = 0
    for b in (8, 5, 13):
        logits = rng.normal(size=(b, 4)).astype(np.float32)
        targets = rng.integers(0, 4, size=b)
        entry = metric.update(AccuracyInput(ember.tensor(logits), ember.tensor(targets)), META)
        hits = int((logits.argmax(1) == targets).sum())
        correct, total = correct + hits, total + b
        assert metric.value() == NumericEntry.Aggregated(100.0 * hits / b, b)
        assert entry.serialized == NumericEntry.Aggregated(100.0 * hits / b, b).serialize()
    assert metric.running_value().current() == pytest.approx(100.0 * correct / total, abs=1e-12)
    assert metric.unit == "%" and metric.higher_is_better


def test_accuracy_with_pad_token_weights_by_unpadded_samples():
    metric = AccuracyMetric().with_pad_token(0)
    logits = np.eye(3)[[1, 2, 2, 0, 0]]  # predicts 1, 2, 2, 0, 0
    targets = np.array([1, 2, 1, 0, 0])  # two pads: 2 right out of 3
    entry = metric.update(AccuracyInput(logits, targets), META)
    assert entry.serialized == f"{NumericEntry.Aggregated(200 / 3, 3).serialize()}"
    assert entry.serialized.endswith(",3")
    # an all-pad batch: weight 0, no NaN anywhere
    entry = metric.update(AccuracyInput(np.eye(3)[[0, 1]], np.array([0, 0])), META)
    assert entry.serialized == "0,0"
    metric.update(AccuracyInput(np.eye(3)[[1]], np.array([1])), META)
    assert metric.running_value().current() == pytest.approx(100 * 3 / 4)
    assert not math.isnan(metric.running_value().current())


def test_accuracy_only_padding_is_zero_not_nan():
    metric = AccuracyMetric().with_pad_token(5)
    metric.update(AccuracyInput(np.zeros((2, 6)), np.array([5, 5])), META)
    assert metric.running_value().current() == 0.0
    assert metric.compute().serialized == "0,final"


def test_accuracy_shape_errors_are_clear():
    with pytest.raises(ValueError, match=r"AccuracyMetric: expected outputs \[B, C\] and targets \[B\]"):
        AccuracyMetric().update(AccuracyInput(np.zeros((3, 2)), np.zeros(4, dtype=int)), META)


def test_top_k_accuracy_against_numpy_with_padding():
    rng = np.random.default_rng(1)
    logits = rng.normal(size=(12, 6))
    targets = rng.integers(0, 6, size=12)
    targets[[2, 7]] = 5  # pad token
    metric = TopKAccuracyMetric(3).with_pad_token(5)
    metric.update(TopKAccuracyInput(ember.tensor(logits.astype(np.float32)), ember.tensor(targets)), META)
    top3 = np.argsort(-logits, axis=1)[:, :3]
    valid = targets != 5
    hits = ((top3 == targets[:, None]).any(1) & valid).sum()
    assert metric.value() == NumericEntry.Aggregated(100.0 * hits / valid.sum(), int(valid.sum()))
    assert metric.name == "Top-K Accuracy @ TopK(3)"


def test_top_k_accuracy_k_checks():
    with pytest.raises(ValueError, match="k must be >= 1"):
        TopKAccuracyMetric(0)
    with pytest.raises(ValueError, match="k=4 exceeds the 3 classes"):
        TopKAccuracyMetric(4).update(TopKAccuracyInput(np.zeros((2, 3)), np.array([0, 1])), META)


def test_top_1_equals_accuracy():
    rng = np.random.default_rng(2)
    logits, targets = rng.normal(size=(20, 5)), rng.integers(0, 5, 20)
    a, t = AccuracyMetric(), TopKAccuracyMetric(1)
    a.update(AccuracyInput(logits, targets), META)
    t.update(TopKAccuracyInput(logits, targets), META)
    assert a.value() == t.value()


def test_perplexity_against_numpy_over_batches():
    rng = np.random.default_rng(3)
    metric = PerplexityMetric()
    nll = tokens = 0.0
    for n in (7, 11):
        logits = rng.normal(size=(n, 9))
        targets = rng.integers(0, 9, n)
        metric.update(PerplexityInput(ember.tensor(logits, dtype=ember.float64), ember.tensor(targets)), META)
        batch_nll = -_log_softmax(logits)[np.arange(n), targets].sum()
        nll, tokens = nll + batch_nll, tokens + n
        assert metric.value().current() == pytest.approx(math.exp(batch_nll / n), rel=1e-9)
        assert metric.value().count == n
    # the split value is the perplexity of all tokens, not a mean of batch perplexities
    assert metric.running_value().current() == pytest.approx(math.exp(nll / tokens), rel=1e-9)
    assert metric.higher_is_better is False


def test_perplexity_pad_token_outside_vocabulary_and_all_pad_batch():
    logits = np.array([[2.0, 0.0, -1.0], [0.0, 1.0, 0.0], [5.0, 5.0, 5.0]])
    targets = np.array([0, -100, 2])
    metric = PerplexityMetric().with_pad_token(-100)
    metric.update(PerplexityInput(logits, targets), META)
    logp = _log_softmax(logits)
    expected = math.exp(-(logp[0, 0] + logp[2, 2]) / 2)
    assert metric.value() == NumericEntry.Aggregated(pytest.approx(expected), 2)
    entry = metric.update(PerplexityInput(logits[:1], np.array([-100])), META)
    assert entry.serialized == "0,0"
    assert metric.running_value().current() == pytest.approx(expected)


def test_hamming_score_threshold_and_sigmoid():
    outputs = np.array([[0.9, 0.2, 0.6], [0.4, 0.8, 0.1]], dtype=np.float32)
    targets = np.array([[1, 0, 0], [0, 1, 1]])
    metric = HammingScore()
    entry = metric.update(HammingScoreInput(ember.tensor(outputs), ember.tensor(targets)), META)
    assert metric.name == "Hamming Score @ Threshold(0.5)"
    assert metric.value() == NumericEntry.Aggregated(pytest.approx(100 * 4 / 6), 2)
    assert entry.serialized.endswith(",2")
    strict = HammingScore().with_threshold(0.7)
    strict.update(HammingScoreInput(outputs, targets), META)
    assert strict.name == "Hamming Score @ Threshold(0.7)"
    assert strict.value().current() == pytest.approx(100 * 5 / 6)
    logits = np.log(outputs / (1 - outputs))
    sig = HammingScore().with_sigmoid(True)
    sig.update(HammingScoreInput(logits, targets), META)
    assert sig.value().current() == pytest.approx(100 * 4 / 6)


def test_hamming_score_weights_batches_by_size():
    metric = HammingScore()
    metric.update(HammingScoreInput(np.array([[1.0, 1.0]]), np.array([[1, 1]])), META)  # 100 %, B=1
    metric.update(HammingScoreInput(np.zeros((3, 2)), np.ones((3, 2), dtype=int)), META)  # 0 %, B=3
    assert metric.running_value().current() == pytest.approx(25.0)


def test_clear_forgets_the_split():
    metric = AccuracyMetric()
    metric.update(AccuracyInput(np.eye(2), np.array([0, 1])), META)
    metric.clear()
    metric.update(AccuracyInput(np.eye(2), np.array([1, 0])), META)
    assert metric.running_value().current() == 0.0
