"""An ember model exported with ember.onnx.export and loaded back with ember.onnx.load computes
what the model computes, at other batch and sequence sizes, with the parameters under their
dotted paths."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import nn

pytest.importorskip("onnx")

import ember.onnx


def test_transformer_encoder_round_trip(tmp_path):
    encoder = nn.TransformerEncoderConfig(16, 32, 2, 2, norm_first=True).init()
    head = nn.LinearConfig(16, 3).init()

    class _Classifier(nn.Module):
        def __init__(self):
            self.encoder = encoder
            self.head = head

        def forward(self, x, mask):
            return self.head(self.encoder(nn.TransformerEncoderInput(x).mask_pad(mask))[:, 0])

    model = _Classifier()
    rng = np.random.default_rng(0)

    def inputs(b, s):
        mask = np.zeros((b, s), bool)
        mask[0, s // 2 :] = True
        return ember.tensor(rng.standard_normal((b, s, 16)).astype(np.float32)), ember.tensor(mask)

    axes = {0: {0: "batch", 1: "seq"}, 1: {0: "batch", 1: "seq"}}
    ember.onnx.export(model, inputs(3, 6), tmp_path / "enc.onnx", dynamic_axes=axes)
    loaded = ember.onnx.load(tmp_path / "enc.onnx")
    # the initializers, and so the loaded parameters, are the model's own, under its paths
    assert [name for name, _ in loaded.named_parameters()] == [name for name, _ in model.named_parameters()]
    infer = model.valid()
    for b, s in ((3, 6), (2, 9)):
        x, mask = inputs(b, s)
        got = loaded(x, mask)
        got = got[0] if isinstance(got, (tuple, list)) else got
        np.testing.assert_allclose(got.numpy(), infer(x, mask).numpy(), atol=1e-5, rtol=0)
