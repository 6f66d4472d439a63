"""Every layer built from a config answers the PyTorch way of building it with a hint.

For each module class exported by ``ember.nn`` whose config is found beside it (itself or a base
class: ``BatchNorm1d`` is built by ``BatchNormConfig``), the call a PyTorch user would write
either builds the same layer as the config given the same arguments, or raises a ``TypeError``
that names the config — never an error from deep inside such as ``'int' object is not
iterable``. Where the hint spells out a complete config call, that call is run and must build
the layer.
"""

from __future__ import annotations

import re

import pytest

from ember import nn
from ember.nn.config_hint import config_of
from ember.tensor.tensor import Tensor

# The arguments a PyTorch (or Keras, torchtune) user passes, as they would type them.
HABITS = {
    "AdaptiveAvgPool1d": "4",
    "AdaptiveAvgPool2d": "1",
    "AdaptiveAvgPool3d": "1",
    "AvgPool1d": "3, stride=2",
    "AvgPool2d": "2, stride=2",
    "BatchNorm": "4",
    "BatchNorm1d": "4",
    "BatchNorm2d": "4, momentum=0.1",
    "BiGru": "8, 16, batch_first=True",
    "BiLstm": "8, 16, batch_first=True",
    "BiRnn": "8, 16, nonlinearity='relu'",
    "BinaryCrossEntropyLoss": "reduction='mean'",
    "CtcLoss": "blank=0, zero_infinity=True",
    "Celu": "alpha=0.5",
    "Conv1d": "3, 8, 3",
    "Conv2d": "3, 8, 3, padding=1",
    "Conv3d": "3, 8, 3",
    "ConvTranspose1d": "3, 8, 3, stride=2",
    "ConvTranspose2d": "3, 8, 3, stride=2, padding=1",
    "ConvTranspose3d": "3, 8, 3",
    "CosineEmbeddingLoss": "margin=0.5",
    "CosineSimilarity": "dim=1, eps=1e-8",
    "CrossAttention": "64, 8",
    "CrossEntropyLoss": "label_smoothing=0.1",
    "DeformConv2d": "3, 8, 3, padding=1",
    "Dropout": "p=0.5",
    "Elu": "alpha=0.5",
    "Embedding": "10, 4",
    "EmbeddingBag": "10, 4, mode='sum'",
    "Fold4d": "output_size=(4, 5), kernel_size=2",
    "GaussianNllLoss": "full=True",
    "GaussianNoise": "std=0.1",
    "GroupNorm": "2, 4",
    "Gru": "8, 16, batch_first=True",
    "HardShrink": "lambd=0.3",
    "HardSigmoid": "",
    "Hardtanh": "-2.0, 2.0",
    "HingeEmbeddingLoss": "margin=2.0",
    "HuberLoss": "",
    "InstanceNorm": "4",
    "Interpolate1d": "scale_factor=2.0, mode='linear'",
    "Interpolate2d": "scale_factor=2.0, mode='bilinear'",
    "KlDivLoss": "reduction='batchmean'",
    "LayerNorm": "8",
    "LeakyRelu": "0.2",
    "Linear": "3, 2",
    "LocalResponseNorm": "2",
    "LpLoss": "",
    "Lstm": "8, 16, batch_first=True",
    "MarginRankingLoss": "margin=0.5",
    "MaxPool1d": "2",
    "MaxPool2d": "2",
    "MultiHeadAttention": "64, 8, dropout=0.1",
    "MultiMarginLoss": "p=1, margin=2.0",
    "PRelu": "num_parameters=1, init=0.25",
    "PairwiseDistance": "p=2.0",
    "PixelShuffle": "2",
    "PixelUnshuffle": "2",
    "PoissonNllLoss": "log_input=False",
    "PositionWiseFeedForward": "64, 128",
    "PositionalEncoding": "64",
    "RnntLoss": "blank=0, reduction='mean'",
    "RRelu": "0.1, 0.3",
    "RmsNorm": "8",
    "Rnn": "8, 16, nonlinearity='relu'",
    "RotaryEncoding": "64",
    "Shrink": "0.5, 0.5",
    "SmoothL1Loss": "beta=0.5",
    "SoftShrink": "lambd=0.3",
    "Softplus": "beta=2.0, threshold=20.0",
    "SwiGlu": "8, 16",
    "Threshold": "0.1, 20.0",
    "ThresholdedRelu": "0.5",
    "TransformerDecoder": "nn.Identity(), num_layers=2",
    "TransformerEncoder": "nn.Identity(), num_layers=2",
    "TripletMarginLoss": "margin=1.0, p=2",
    "Unfold4d": "kernel_size=2",
}


def config_owner(cls: type) -> type | None:
    """The class in ``cls``'s bases (itself first) that has a config beside it."""
    return next((c for c in cls.__mro__ if config_of(c) is not None), None)


def configured_layers() -> list[str]:
    return sorted(
        name
        for name in nn.__all__
        if isinstance(getattr(nn, name), type)
        and issubclass(getattr(nn, name), nn.Module)
        and config_owner(getattr(nn, name)) is not None
    )


def plain_state(module: nn.Module) -> dict:
    """The settings a layer holds (its tensors and sub-modules left out)."""
    return {k: v for k, v in vars(module).items() if not isinstance(v, (Tensor, nn.Param, nn.Module))}


def test_every_configured_layer_has_a_habit_and_no_habit_is_stale():
    layers = configured_layers()
    assert len(layers) >= 40 and {"Linear", "MaxPool2d", "Lstm", "TransformerEncoder"} <= set(layers)
    assert sorted(set(layers) - set(HABITS)) == [], "add the PyTorch-style call of these layers to HABITS"
    assert sorted(set(HABITS) - set(layers)) == [], "these HABITS name no configured layer of ember.nn"


@pytest.mark.parametrize("name", configured_layers())
def test_a_pytorch_style_call_builds_the_same_layer_or_names_the_config(name):
    cls = getattr(nn, name)
    owner = config_owner(cls)
    config = config_of(owner)
    call = HABITS.get(name)
    if call is None:
        pytest.fail(f"add the PyTorch-style call of nn.{name} to HABITS")
    try:
        built = eval(f"nn.{name}({call})", {"nn": nn})
    except TypeError as exc:
        message = str(exc)
        assert re.match(
            rf"nn\.{name}\(.*\): ember layers are built from their config; use nn\.{config.__name__}\(",
            message,
        ), message
        assert ").init()" in message and f"The constructor {name}(" in message, message
        suggested = re.search(rf"use (nn\.{config.__name__}\(.*?\)\.init\(\)), where", message)
        if suggested:  # the user's values fit the config: the call shown must build the layer
            layer = eval(suggested.group(1), {"nn": nn})
            assert isinstance(layer, owner), (suggested.group(1), type(layer))
        return
    # the constructor took the call as it is: it must mean what the config means
    assert isinstance(built, cls)
    expected = eval(f"nn.{config.__name__}({call}).init()", {"nn": nn})
    assert plain_state(built) == plain_state(expected)


def test_an_int_where_a_pair_goes_names_the_pair_config():
    with pytest.raises(TypeError) as raised:
        nn.MaxPool2d(2)
    message = str(raised.value)
    assert "use nn.MaxPool2dConfig((2, 2)).init()" in message
    assert "Got kernel_size=2 where the constructor takes tuple[int, int]." in message
    assert "not iterable" not in message
    assert nn.MaxPool2dConfig((2, 2)).init().kernel_size == (2, 2)
    with pytest.raises(TypeError, match=r"use nn\.AdaptiveAvgPool2dConfig\(\(1, 1\)\)\.init\(\)"):
        nn.AdaptiveAvgPool2d(1)
    with pytest.raises(TypeError, match=r"use nn\.MaxPool2dConfig\(\(3, 3\), \(2, 2\)\)\.init\(\)"):
        nn.MaxPool2d(3, 2)  # kernel 3, stride 2
    with pytest.raises(TypeError, match=r"use nn\.Conv2dConfig\(channels, kernel_size, ") as conv:
        nn.Conv2d(3, 8, 3)  # channels are (in, out), not one number per axis: not widened
    assert "(3, 3)" not in str(conv.value)
    with pytest.raises(
        TypeError, match=r"Got stride=2 where the constructor takes tuple\[int, int\] \| None"
    ):
        nn.AvgPool2d((2, 2), stride=2)
    # what the constructor takes still builds: pairs, lists for pairs, the config's own values
    assert nn.MaxPool2d((3, 3), stride=[2, 2]).stride == (2, 2)
    assert nn.AvgPool2d([2, 2]).kernel_size == (2, 2)


def test_a_flag_is_not_a_number_and_big_arguments_are_shown_by_type():
    with pytest.raises(TypeError, match=r"Got eps=True where the constructor takes float"):
        nn.GaussianNllLoss(True)  # PyTorch's first argument is `full`, ember's `eps`
    weight = nn.Param(nn.LinearConfig(3, 2).init().weight.val())
    with pytest.raises(TypeError, match=r"^nn\.Linear\(<Param>, 2\): "):
        nn.Linear(weight, 2)  # a bias size where the bias Param goes
    assert nn.Linear(weight, None).weight is weight
