"""The example's models exported to ONNX: the Transformer classifier gives in ONNX Runtime the
accuracy ember gives on the shipped DbPedia held-out rows, and the fastText model's logits match
ember's for other batch and feature counts."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import ember
from ember import nn
from ember.optim import AdamConfig, GradientsParams

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import ember.onnx  # noqa: E402

_EXAMPLES = str(Path(__file__).resolve().parents[2] / "examples")
if _EXAMPLES not in sys.path:
    sys.path.insert(0, _EXAMPLES)


def _session(path):
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


def _trained_dbpedia_model(tokenizer, seq):
    """A small Transformer trained two epochs on the shipped DbPedia sample (a few seconds):
    its predictions have margins, so equal accuracy is a real check."""
    from text_classification.batcher import TextClassificationBatcher
    from text_classification.dataset import DbPediaDataset
    from text_classification.model import TextClassificationModelConfig

    ember.seed(0)
    config = TextClassificationModelConfig(
        nn.TransformerEncoderConfig(32, 64, 2, 1, dropout=0.0),
        n_classes=14,
        vocab_size=tokenizer.vocab_size(),
        max_seq_length=seq,
    )
    model = config.init()
    optim = AdamConfig().init()
    train = DbPediaDataset.sample("train")
    items = train.get_many(list(range(len(train))))
    batcher = TextClassificationBatcher(tokenizer, seq)
    for _ in range(2):
        for i in range(0, len(items), 64):
            loss = model.forward(batcher.batch(items[i : i + 64])).loss
            model = optim.step(1e-2, model, GradientsParams.from_grads(loss.backward(), model))
    return model


@pytest.mark.slow
def test_transformer_dbpedia_held_out_accuracy_is_ember_s(tmp_path):
    from text_classification.batcher import TextClassificationInferenceBatcher
    from text_classification.dataset import DbPediaDataset
    from text_classification.tokenizer import BertCasedTokenizer

    tokenizer = BertCasedTokenizer.shipped()
    seq = 32
    model = _trained_dbpedia_model(tokenizer, seq)
    test = DbPediaDataset.sample("test")
    items = test.get_many(list(range(len(test))))
    labels = np.array([item.label for item in items])
    batcher = TextClassificationInferenceBatcher(tokenizer, seq)
    example = batcher.batch(items[:8])
    ember.onnx.export(
        model.logits,
        (example.tokens, example.mask_pad),
        tmp_path / "dbpedia.onnx",
        dynamic_axes={"tokens": {0: "batch"}, "mask_pad": {0: "batch"}},
        input_names=["tokens", "mask_pad"],
    )
    session = _session(tmp_path / "dbpedia.onnx")
    infer = model.valid()
    ours, theirs = [], []
    for i in range(0, len(items), 250):
        batch = batcher.batch(items[i : i + 250])
        ours.append(infer.logits(batch.tokens, batch.mask_pad).numpy())
        feeds = {"tokens": batch.tokens.numpy(), "mask_pad": batch.mask_pad.numpy()}
        theirs.append(session.run(None, feeds)[0])
    ours, theirs = np.concatenate(ours), np.concatenate(theirs)
    np.testing.assert_allclose(theirs, ours, atol=1e-5, rtol=0)
    accuracy = (ours.argmax(1) == labels).mean()
    assert accuracy > 0.3  # trained: well above chance (1/14)
    assert (theirs.argmax(1) == labels).mean() == accuracy
    np.testing.assert_array_equal(theirs.argmax(1), ours.argmax(1))


def test_fasttext_model_dynamic_bags_and_features(tmp_path):
    from text_classification.fasttext import FastTextConfig

    ember.seed(1)
    model = FastTextConfig(vocab_size=40, n_classes=4, d_model=8, buckets=16).init()
    rng = np.random.default_rng(0)
    # the head starts at zero (fastText's output matrix): give it weights to compare
    model.output.weight.set_value(ember.tensor(rng.standard_normal((8, 4)).astype(np.float32)))

    def bags(n, b):
        offsets = np.sort(rng.choice(np.arange(1, n), b - 1, replace=False))
        return ember.tensor(rng.integers(0, 56, n)), ember.tensor(np.concatenate([[0], offsets]))

    indices, offsets = bags(40, 6)
    proto = ember.onnx.export(
        model.logits,
        (indices, offsets),
        tmp_path / "fasttext.onnx",
        dynamic_axes={"indices": {0: "features"}, "offsets": {0: "batch"}},
        input_names=["indices", "offsets"],
    )
    assert proto.graph.output[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    session = _session(tmp_path / "fasttext.onnx")
    infer = model.valid()
    for n, b in ((40, 6), (13, 2), (90, 17)):
        indices, offsets = bags(n, b)
        got = session.run(None, {"indices": indices.numpy(), "offsets": offsets.numpy()})[0]
        np.testing.assert_allclose(got, infer.logits(indices, offsets).numpy(), atol=1e-5, rtol=0)
