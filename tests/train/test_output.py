"""Output types: sync() detaches, adapt() feeds Burn's metric inputs, clear errors otherwise."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.train.metric import (
    AccuracyInput,
    AccuracyMetric,
    AurocInput,
    AurocMetric,
    ConfusionStatsInput,
    HammingScore,
    HammingScoreInput,
    LossInput,
    LossMetric,
    MetricMetadata,
    PerplexityInput,
    PerplexityMetric,
    PrecisionMetric,
    TopKAccuracyInput,
    TopKAccuracyMetric,
)
from ember.train.output import (
    ClassificationOutput,
    MultiLabelClassificationOutput,
    RegressionOutput,
    SequenceOutput,
)

META = MetricMetadata.fake()


def _classification(c=3):
    logits = ember.tensor([[2.0, 0.5, 0.1], [0.1, 0.2, 3.0], [1.0, 2.0, 0.0], [0.3, 0.1, 0.2]])[:, :c]
    logits = logits.require_grad()
    loss = (logits * logits).mean()
    return ClassificationOutput(
        loss, logits * 1.0, ember.tensor([0, 2, 0, 1]) if c > 1 else ember.tensor([1, 0, 1, 0])
    )


def test_sync_detaches_every_tensor():
    out = _classification()
    assert out.loss.is_require_grad() and out.output.is_require_grad()
    synced = out.sync()
    assert type(synced) is ClassificationOutput
    assert not synced.loss.is_require_grad() and not synced.output.is_require_grad()
    np.testing.assert_array_equal(synced.output.numpy(), out.output.numpy())
    w = ember.randn(2, 3).require_grad()
    seq = SequenceOutput(w.sum(), (w * 2.0).reshape((1, 2, 3)), ember.tensor([[0, 1]])).sync()
    assert not seq.loss.is_require_grad() and not seq.logits.is_require_grad() and seq.predictions is None
    reg = RegressionOutput(w.sum(), w * 1.0, w.detach()).sync()
    assert not reg.output.is_require_grad()
    ml = MultiLabelClassificationOutput(w.sum(), w * 1.0, ember.tensor([[0, 1, 1], [1, 0, 0]])).sync()
    assert not ml.output.is_require_grad()


def test_classification_adaptors():
    out = _classification().sync()
    acc = out.adapt(AccuracyInput)
    assert acc.outputs is out.output and acc.targets is out.targets
    assert out.adapt(LossInput).tensor is out.loss
    assert isinstance(out.adapt(TopKAccuracyInput), TopKAccuracyInput)
    assert isinstance(out.adapt(PerplexityInput), PerplexityInput)
    conf = out.adapt(ConfusionStatsInput)
    np.testing.assert_array_equal(conf.targets.numpy(), np.eye(3, dtype=bool)[[0, 2, 0, 1]])
    np.testing.assert_array_equal(out.adapt(AurocInput).targets.numpy(), conf.targets.numpy())
    assert AccuracyMetric().update(out, META).serialized == "50,4"  # rows 0 and 1 right
    assert PrecisionMetric.multiclass(1).update(out, META).serialized.endswith(",4")


def test_binary_classification_uses_labels_as_the_single_column():
    out = ClassificationOutput(
        ember.tensor(0.3), ember.tensor([[0.9], [0.2], [0.7], [0.4]]), ember.tensor([1, 0, 0, 1])
    )
    conf = out.adapt(ConfusionStatsInput)
    np.testing.assert_array_equal(conf.targets.numpy(), [[True], [False], [False], [True]])
    precision = PrecisionMetric.binary(0.5)
    precision.update(out, META)
    assert precision.value().current() == pytest.approx(50.0)  # predicted 1, 0, 1, 0
    auroc = AurocMetric.binary()
    auroc.update(out, META)
    assert auroc.running_value().current() == pytest.approx(75.0)


def test_multilabel_adaptors():
    out = MultiLabelClassificationOutput(
        ember.tensor(0.1), ember.tensor([[0.9, 0.2], [0.3, 0.8]]), ember.tensor([[1, 0], [1, 1]])
    )
    assert isinstance(out.adapt(HammingScoreInput), HammingScoreInput)
    assert out.adapt(ConfusionStatsInput).targets.dtype == ember.bool
    hamming = HammingScore()
    hamming.update(out, META)
    assert hamming.value().current() == pytest.approx(75.0)
    LossMetric().update(out, META)
    AurocMetric.multilabel().update(out, META)


def test_sequence_flattens_for_token_metrics():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(2, 3, 5)).astype(np.float32)
    targets = np.array([[1, 4, 0], [2, 0, 0]])  # 0 = pad
    out = SequenceOutput(ember.tensor(0.7), ember.tensor(logits), ember.tensor(targets))
    flat = out.adapt(AccuracyInput)
    assert flat.outputs.shape == (6, 5) and flat.targets.shape == (6,)
    acc = AccuracyMetric().with_pad_token(0)
    acc.update(out, META)
    pred = logits.reshape(6, 5).argmax(1)
    valid = targets.reshape(6) != 0
    assert acc.value().count == 3
    assert acc.value().current() == pytest.approx(100 * ((pred == targets.reshape(6)) & valid).sum() / 3)
    TopKAccuracyMetric(2).with_pad_token(0).update(out, META)
    PerplexityMetric().with_pad_token(0).update(out, META)
    np.testing.assert_array_equal(out.predicted_tokens().numpy(), logits.argmax(-1))


def test_adapt_errors_name_the_output_and_the_metric():
    w = ember.randn(4, 2)
    reg = RegressionOutput(ember.tensor(0.5), w, w)
    with pytest.raises(TypeError, match="RegressionOutput cannot be adapted to AccuracyInput") as info:
        AccuracyMetric().update(reg, META)
    assert "AccuracyMetric" in str(info.value) and "provides LossInput" in str(info.value)
    with pytest.raises(TypeError, match="HammingScore.*ClassificationOutput"):
        HammingScore().update(_classification(), META)
    with pytest.raises(TypeError, match="LossMetric .*needs LossInput.*has no adapt"):
        LossMetric().update(object(), META)
    with pytest.raises(TypeError, match="SequenceOutput cannot be adapted to ConfusionStatsInput"):
        SequenceOutput(ember.tensor(0.1), ember.zeros(1, 2, 3), ember.tensor([[0, 1]])).adapt(
            ConfusionStatsInput
        )


def test_user_outputs_can_implement_adapt():
    class MyOutput:
        def adapt(self, input_type):
            if input_type is LossInput:
                return LossInput(ember.tensor(2.0))
            raise TypeError(f"MyOutput cannot give {input_type.__name__}")

    assert LossMetric().update(MyOutput(), META).serialized == "2,1"
    with pytest.raises(TypeError, match="AccuracyMetric .*MyOutput cannot give AccuracyInput"):
        AccuracyMetric().update(MyOutput(), META)


def test_shapes_are_checked():
    with pytest.raises(ValueError, match=r"ClassificationOutput: `output` must be \[batch, classes\]"):
        ClassificationOutput(ember.tensor(0.1), ember.zeros(4), ember.tensor([0, 1, 0, 1]))
    with pytest.raises(ValueError, match="output has 4 rows but targets has 3"):
        ClassificationOutput(ember.tensor(0.1), ember.zeros(4, 2), ember.tensor([0, 1, 0]))
    with pytest.raises(ValueError, match=r"SequenceOutput: `logits` must be \[batch, seq, vocab\]"):
        SequenceOutput(ember.tensor(0.1), ember.zeros(4, 2), ember.tensor([[0, 1]]))
    with pytest.raises(ValueError, match="RegressionOutput: output"):
        RegressionOutput(ember.tensor(0.1), ember.zeros(4, 2), ember.zeros(4, 3))
    with pytest.raises(ValueError, match="MultiLabelClassificationOutput: output"):
        MultiLabelClassificationOutput(ember.tensor(0.1), ember.zeros(4, 2), ember.zeros(4, 3))
    with pytest.raises(IndexError):
        ClassificationOutput(ember.tensor(0.1), ember.zeros(2, 2), ember.tensor([0, 5])).adapt(
            ConfusionStatsInput
        )


def test_numpy_outputs_work_too():
    out = ClassificationOutput(np.float32(0.2), np.eye(3)[[0, 1, 1]], np.array([0, 1, 2]))
    assert out.sync().output is out.output
    np.testing.assert_array_equal(out.adapt(ConfusionStatsInput).targets, np.eye(3, dtype=bool))
    assert AccuracyMetric().update(out, META).serialized == "66.66666666666667,3"
