"""ember.onnx.export then ember.onnx.load: the imported module gives the original model's outputs
(within 1e-5, at the exported and at other dynamic sizes, on every backend), with every op the
exporter emits, and its parameters keep the original dotted paths."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers.text_model import padded_tokens, tiny_text_model

import ember
from ember import nn

pytest.importorskip("onnx")

import ember.onnx


class _ConvNet(nn.Module):
    """Strided conv, BatchNorm (running statistics), average pooling, dropout, a log-softmax head."""

    def __init__(self):
        self.conv = nn.Conv2dConfig((3, 6), (3, 3), stride=(2, 2), padding=(1, 1)).init()
        self.norm = nn.BatchNormConfig(6).init()
        self.pool = nn.AvgPool2dConfig((2, 2)).init()
        self.drop = nn.DropoutConfig(0.3).init()
        self.head = nn.LinearConfig(24, 5).init()

    def forward(self, x):
        h = self.pool(ember.gelu(self.norm(self.conv(x))))
        return ember.log_softmax(self.head(self.drop(h.reshape(h.shape[0], 24))), -1)


def _x(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_conv_net_round_trip(tmp_path, device):
    ember.seed(3)
    model = _ConvNet()
    model(ember.tensor(_x(4, 3, 8, 8, seed=9) + 1))  # a training-mode pass moves BatchNorm's statistics
    assert np.abs(model.norm.running_mean.numpy()).min() > 0
    ember.onnx.export(model, ember.tensor(_x(2, 3, 8, 8)), tmp_path / "cnn.onnx")
    imported = ember.onnx.load(tmp_path / "cnn.onnx", device=device)
    assert {n for n, _ in model.named_parameters()} <= {n for n, _ in imported.named_parameters()}
    infer = model.valid()
    for batch in (2, 5):  # batch is a dynamic axis of the export
        x = _x(batch, 3, 8, 8, seed=batch)
        got = imported(ember.tensor(x, device=device)).numpy()
        np.testing.assert_allclose(got, infer(ember.tensor(x)).numpy(), atol=1e-5, rtol=0)


def test_text_transformer_round_trip(tmp_path, device):
    ember.seed(4)
    model = tiny_text_model("mean")
    axes = {"tokens": {0: "batch", 1: "seq"}, "mask_pad": {0: "batch", 1: "seq"}}
    tokens, mask = padded_tokens(3, 8)
    ember.onnx.export(
        model.logits,
        (ember.tensor(tokens), ember.tensor(mask)),
        tmp_path / "tc.onnx",
        dynamic_axes=axes,
        input_names=["tokens", "mask_pad"],
    )
    imported = ember.onnx.load(tmp_path / "tc.onnx", device=device)
    assert {n for n, _ in model.named_parameters()} <= {n for n, _ in imported.named_parameters()}
    infer = model.valid()
    for b, s in ((3, 8), (2, 5), (1, 12)):
        tokens, mask = padded_tokens(b, s, seed=b * s)
        got = imported(tokens=ember.tensor(tokens, device=device), mask_pad=ember.tensor(mask, device=device))
        np.testing.assert_allclose(
            got.numpy(), infer.logits(ember.tensor(tokens), ember.tensor(mask)).numpy(), atol=1e-5, rtol=0
        )


def test_every_op_the_exporter_writes_is_imported():
    """Each ONNX op name in ember.onnx's export sources has an import entry at every opset the
    exporter writes (17 to 21)."""
    import ast

    import onnx.defs

    from ember.onnx.import_ops import lookup

    emitted = set()
    for source in (Path(ember.onnx.__file__).parent).glob("export*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            text = getattr(node, "value", None) if isinstance(node, ast.Constant) else None
            if isinstance(text, str) and text[:1].isupper() and onnx.defs.has(text):
                emitted.add(text)
    assert {"MatMul", "LayerNormalization", "ScatterElements"} <= emitted  # the scan finds them
    missing = [
        (op, opset)
        for op in sorted(emitted)
        for opset in range(17, 22)
        if lookup(op, "", onnx.defs.get_schema(op, opset).since_version) is None
    ]
    assert missing == []
