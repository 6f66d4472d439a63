"""Every layer of ember.nn's catalogue that ONNX can express, exported and run in ONNX Runtime
against ember (float32, within 1e-5 max abs), at the example batch size and another; and the
layers that cannot be exported, each with the error that names why."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import nn

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from ember.onnx.export_graph import ExportError  # noqa: E402

TOL = 1e-5


def _x(*shape, seed=0):
    return ember.tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


def _ids(*shape, seed=0):
    return ember.tensor(np.random.default_rng(seed).integers(0, 10, shape))


class _Output(nn.Module):
    """The first result of a layer returning (output, state)."""

    def __init__(self, layer):
        self.layer = layer

    def forward(self, *xs):
        return self.layer(*xs)[0]


class _Decoder(nn.Module):
    def __init__(self):
        self.decoder = nn.TransformerDecoderConfig(8, 16, 2, 1).init()

    def forward(self, target, memory):
        return self.decoder(nn.TransformerDecoderInput(target, memory))


# (name, module factory, example inputs factory, dynamic_axes or None for batch on every input)
CATALOGUE = [
    ("Linear", lambda: nn.LinearConfig(6, 4).init(), lambda s: _x(3, 6, seed=s)),
    ("Conv1d", lambda: nn.Conv1dConfig(3, 4, 3, padding=1).init(), lambda s: _x(3, 3, 10, seed=s)),
    (
        "Conv2d",
        lambda: nn.Conv2dConfig((4, 6), (3, 3), stride=(2, 2), groups=2).init(),
        lambda s: _x(3, 4, 9, 9, seed=s),
    ),
    ("Conv3d", lambda: nn.Conv3dConfig((2, 3), (2, 2, 2)).init(), lambda s: _x(3, 2, 4, 4, 4, seed=s)),
    (
        "ConvTranspose2d",
        lambda: nn.ConvTranspose2dConfig((3, 2), (3, 3), stride=(2, 2)).init(),
        lambda s: _x(3, 3, 5, 5, seed=s),
    ),
    ("MaxPool1d", lambda: nn.MaxPool1dConfig(2).init(), lambda s: _x(3, 3, 8, seed=s)),
    ("AvgPool1d", lambda: nn.AvgPool1dConfig(2).init(), lambda s: _x(3, 3, 8, seed=s)),
    ("AdaptiveAvgPool1d", lambda: nn.AdaptiveAvgPool1dConfig(3).init(), lambda s: _x(3, 3, 8, seed=s)),
    ("MaxPool2d", lambda: nn.MaxPool2dConfig((2, 2)).init(), lambda s: _x(3, 3, 8, 8, seed=s)),
    (
        "AvgPool2d",
        lambda: nn.AvgPool2dConfig((3, 3), strides=(2, 2), padding=(1, 1)).init(),
        lambda s: _x(3, 3, 8, 8, seed=s),
    ),
    ("AdaptiveAvgPool2d", lambda: nn.AdaptiveAvgPool2dConfig((3, 3)).init(), lambda s: _x(3, 3, 8, 8, seed=s)),
    ("AdaptiveAvgPool3d", lambda: nn.AdaptiveAvgPool3dConfig((2, 2, 2)).init(), lambda s: _x(3, 3, 4, 4, 4, seed=s)),
    ("ConvTranspose1d", lambda: nn.ConvTranspose1dConfig((3, 2), 3).init(), lambda s: _x(3, 3, 5, seed=s)),
    ("ConvTranspose3d", lambda: nn.ConvTranspose3dConfig((3, 2), (2, 2, 2)).init(), lambda s: _x(3, 3, 3, 3, 3, seed=s)),
    (
        "DeformConv2d",
        lambda: nn.DeformConv2dConfig((2, 3), (3, 3)).init(),
        lambda s: (_x(3, 2, 5, 5, seed=s), _x(3, 18, 3, 3, seed=s + 1)),
    ),
    ("Unfold4d", lambda: nn.Unfold4dConfig((2, 2)).init(), lambda s: _x(3, 3, 5, 5, seed=s)),
    ("Fold4d", lambda: nn.Fold4dConfig((4, 4), (2, 2)).init(), lambda s: _x(3, 12, 9, seed=s)),
    *[
        (
            f"Interpolate2d_{mode}",
            (lambda mode=mode: nn.Interpolate2dConfig(output_size=(6, 6), mode=mode).init()),
            lambda s: _x(3, 3, 4, 4, seed=s),
        )
        for mode in ("nearest", "linear", "cubic")
    ],
    ("PixelShuffle", lambda: nn.PixelShuffleConfig(2).init(), lambda s: _x(3, 8, 3, 3, seed=s)),
    ("PixelUnshuffle", lambda: nn.PixelUnshuffleConfig(2).init(), lambda s: _x(3, 2, 4, 4, seed=s)),
    ("CosineSimilarity", lambda: nn.CosineSimilarityConfig().init(), lambda s: (_x(3, 6, seed=s), _x(3, 6, seed=s + 1))),
    ("PairwiseDistance", lambda: nn.PairwiseDistanceConfig().init(), lambda s: (_x(3, 6, seed=s), _x(3, 6, seed=s + 1))),
    ("GaussianNoise", lambda: nn.GaussianNoiseConfig(0.1).init(), lambda s: _x(3, 6, seed=s)),
    ("RRelu", lambda: nn.RReluConfig().init(), lambda s: _x(3, 6, seed=s)),
    ("LayerNorm", lambda: nn.LayerNormConfig(8).init(), lambda s: _x(3, 5, 8, seed=s)),
    ("RmsNorm", lambda: nn.RmsNormConfig(8).init(), lambda s: _x(3, 5, 8, seed=s)),
    ("GroupNorm", lambda: nn.GroupNormConfig(2, 4).init(), lambda s: _x(3, 4, 6, seed=s)),
    ("InstanceNorm", lambda: nn.InstanceNormConfig(4, affine=True).init(), lambda s: _x(3, 4, 6, seed=s)),
    ("BatchNorm", lambda: nn.BatchNormConfig(4).init(), lambda s: _x(3, 4, 6, seed=s)),
    ("LocalResponseNorm", lambda: nn.LocalResponseNormConfig(3).init(), lambda s: _x(3, 4, 6, seed=s)),
    ("Dropout", lambda: nn.DropoutConfig(0.5).init(), lambda s: _x(3, 6, seed=s)),
    ("Embedding", lambda: nn.EmbeddingConfig(10, 4).init(), lambda s: _ids(3, 5, seed=s)),
    ("EmbeddingBag_mean", lambda: nn.EmbeddingBagConfig(10, 4).init(), lambda s: _ids(3, 5, seed=s)),
    ("EmbeddingBag_max", lambda: nn.EmbeddingBagConfig(10, 4, mode="max").init(), lambda s: _ids(3, 5, seed=s)),
    ("PositionalEncoding", lambda: nn.PositionalEncodingConfig(8).init(), lambda s: _x(3, 5, 8, seed=s)),
    ("RotaryEncoding", lambda: nn.RotaryEncodingConfig(16, 8).init(), lambda s: _x(3, 5, 8, seed=s)),
    ("PositionWiseFeedForward", lambda: nn.PositionWiseFeedForwardConfig(8, 16).init(), lambda s: _x(3, 5, 8, seed=s)),
    ("TransformerEncoder", lambda: nn.TransformerEncoderConfig(8, 16, 2, 2).init(), lambda s: _x(3, 5, 8, seed=s)),
    (
        "TransformerEncoder_norm_first_quiet",
        lambda: nn.TransformerEncoderConfig(8, 16, 2, 1, norm_first=True, quiet_softmax=True).init(),
        lambda s: _x(3, 5, 8, seed=s),
    ),
    ("TransformerDecoder", _Decoder, lambda s: (_x(3, 4, 8, seed=s), _x(3, 6, 8, seed=s + 1))),
    (
        "CrossAttention",
        lambda: nn.CrossAttentionConfig(8, 6, 2, 1, 4).init(),
        lambda s: (_x(3, 4, 8, seed=s), _x(3, 5, 6, seed=s + 1)),
    ),
    ("Gru", lambda: nn.GruConfig(4, 5, True).init(), lambda s: _x(3, 6, 4, seed=s)),
    ("Lstm", lambda: _Output(nn.LstmConfig(4, 5, True).init()), lambda s: _x(3, 6, 4, seed=s)),
    ("Rnn", lambda: _Output(nn.RnnConfig(4, 5, True).init()), lambda s: _x(3, 6, 4, seed=s)),
    ("Lstm_clip_unrolled", lambda: _Output(nn.LstmConfig(4, 5, True, clip=0.5).init()), lambda s: _x(3, 6, 4, seed=s)),
    ("BiLstm", lambda: _Output(nn.BiLstmConfig(4, 5, True).init()), lambda s: _x(3, 6, 4, seed=s)),
    ("BiGru", lambda: _Output(nn.BiGruConfig(4, 5, True).init()), lambda s: _x(3, 6, 4, seed=s)),
    ("PRelu", lambda: nn.PReluConfig().init(), lambda s: _x(3, 5, seed=s)),
    ("SwiGlu", lambda: nn.SwiGluConfig(4, 6).init(), lambda s: _x(3, 4, seed=s)),
    ("Glu", lambda: nn.Glu(-1), lambda s: _x(3, 6, seed=s)),
    *[
        (name, (lambda name=name: getattr(nn, name)()), lambda s: _x(3, 6, seed=s))
        for name in (
            "Relu", "Relu6", "Gelu", "Sigmoid", "Tanh", "Silu", "Mish", "LogSigmoid", "Softsign",
            "Selu", "HardSwish", "Tanhshrink", "Softmax",
        )
    ],
    *[
        (type(cfg).__name__[: -len("Config")], (lambda cfg=cfg: cfg.init()), lambda s: _x(3, 6, seed=s))
        for cfg in (
            nn.LeakyReluConfig(), nn.EluConfig(), nn.CeluConfig(), nn.SoftplusConfig(), nn.HardtanhConfig(),
            nn.HardSigmoidConfig(), nn.ThresholdConfig(0.1, 2.0), nn.HardShrinkConfig(), nn.SoftShrinkConfig(),
            nn.ThresholdedReluConfig(),
        )
    ],
]  # fmt: skip


@pytest.mark.parametrize(("name", "make", "inputs"), CATALOGUE, ids=[c[0] for c in CATALOGUE])
def test_layer_runs_in_onnxruntime_as_in_ember(tmp_path, name, make, inputs):
    model = make()
    example = inputs(0)
    example = example if isinstance(example, tuple) else (example,)
    proto = ember.onnx.export(model, example, tmp_path / "layer.onnx")
    session = ort.InferenceSession(str(tmp_path / "layer.onnx"), providers=["CPUExecutionProvider"])
    infer = model.valid()
    names = [i.name for i in proto.graph.input]
    other = inputs(1)
    other = other if isinstance(other, tuple) else (other,)
    # another batch size: each input's rows cut to 2 (the example has 3)
    other = tuple(ember.tensor(t.numpy()[:2]) for t in other)
    for case in (example, other):
        got = session.run(None, {n: t.numpy() for n, t in zip(names, case)})[0]
        want = infer(*case).numpy()
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, atol=TOL, rtol=0)


# What is not exported, and why: the error names the op and the module path.
NOT_EXPORTABLE = [
    # a loss is not inference: its fused cross-entropy has no emitter (export the logits)
    (
        "CrossEntropyLoss",
        lambda: nn.CrossEntropyLossConfig().init(),
        (_x(3, 5), ember.tensor(np.array([0, 1, 4]))),
        None,
        "cross_entropy",
    ),
    # an Lstm with a clip (ONNX's LSTM clips the gates' inputs, ember the cell state) runs one
    # step per position: the graph unrolls it for the example's length, so its sequence axis
    # stays static (batch is dynamic; the default configurations become ONNX's LSTM op)
    (
        "Lstm with clip over a dynamic sequence",
        lambda: _Output(nn.LstmConfig(4, 5, True, clip=1.0).init()),
        (_x(3, 6, 4),),
        {0: {0: "batch", 1: "seq"}},
        "runs other ops when the dynamic axes",
    ),
]


@pytest.mark.parametrize(
    ("name", "make", "inputs", "axes", "match"), NOT_EXPORTABLE, ids=[c[0] for c in NOT_EXPORTABLE]
)
def test_not_exportable_layers_raise_naming_why(tmp_path, name, make, inputs, axes, match):
    with pytest.raises(ExportError, match=match) as info:
        ember.onnx.export(make(), inputs, tmp_path / "no.onnx", dynamic_axes=axes)
    assert "module '" in str(info.value)
