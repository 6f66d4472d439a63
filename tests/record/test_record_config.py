"""Config: dataclass configs saved as pretty JSON, loaded back strictly."""

import enum
import json
from dataclasses import field
from pathlib import Path
from typing import Literal

import pytest

from ember.record import Config, ConfigError


class Activation(enum.Enum):
    GELU = "gelu"
    RELU = "relu"


class EncoderConfig(Config):
    d_model: int
    n_heads: int
    dropout: float = 0.1
    activation: Activation = Activation.GELU
    norm_first: bool = False


class Initializer(Config):
    pass


class KaimingUniform(Initializer):
    gain: float = 0.5773502691896258
    fan_out_only: bool = False


class Normal(Initializer):
    mean: float = 0.0
    std: float = 1.0


class ExperimentConfig(Config):
    encoder: EncoderConfig
    heads: list[EncoderConfig] = field(default_factory=list)
    kernel: tuple[int, int] = (3, 3)
    sizes: tuple[int, ...] = ()
    max_seq: int | None = None
    weight_decay: float | None = 5e-5
    class_names: dict[str, int] = field(default_factory=dict)
    by_id: dict[int, str] = field(default_factory=dict)
    init: Initializer = field(default_factory=KaimingUniform)
    artifact_dir: Path = Path("/tmp/run")
    mode: Literal["train", "eval"] = "train"


class Frozen(Config, frozen=True):
    n: int = 1


def _full_config() -> ExperimentConfig:
    return ExperimentConfig(
        EncoderConfig(128, 4, norm_first=True),
        heads=[EncoderConfig(8, 1, activation=Activation.RELU)],
        kernel=(5, 7),
        sizes=(1, 2, 3),
        max_seq=256,
        weight_decay=None,
        class_names={"World": 0},
        by_id={3: "x"},
        init=Normal(std=0.02),
        artifact_dir=Path("/tmp/a"),
        mode="eval",
    )


def test_save_load_round_trip_with_nesting_enums_tuples(tmp_path):
    config = _full_config()
    path = config.save(tmp_path / "config.json")
    loaded = ExperimentConfig.load(path)
    assert loaded == config
    assert isinstance(loaded.kernel, tuple) and isinstance(loaded.heads[0], EncoderConfig)
    assert loaded.heads[0].activation is Activation.RELU
    assert type(loaded.init) is Normal and loaded.by_id == {3: "x"}
    assert isinstance(loaded.artifact_dir, Path)


def test_json_form_is_pretty_and_str_is_the_json(tmp_path):
    config = _full_config()
    path = config.save(tmp_path / "config.json")
    text = path.read_text()
    assert text == str(config) == config.to_json()
    assert text.startswith('{\n  "encoder": {\n    "d_model": 128,')
    data = json.loads(text)
    assert data["encoder"]["activation"] == "GELU"  # enum by member name, like serde
    assert data["kernel"] == [5, 7] and data["weight_decay"] is None
    assert data["init"] == {"Normal": {"mean": 0.0, "std": 0.02}}  # externally tagged
    assert list(data) == list(ExperimentConfig.__dataclass_fields__)


def test_with_methods_exist_for_every_field_and_copy():
    base = EncoderConfig(64, 2)
    changed = base.with_dropout(0.3).with_activation(Activation.RELU).with_d_model(32)
    assert (changed.d_model, changed.dropout, changed.activation) == (32, 0.3, Activation.RELU)
    assert base == EncoderConfig(64, 2)  # the original is untouched
    for name in ExperimentConfig.__dataclass_fields__:
        assert callable(getattr(ExperimentConfig, f"with_{name}"))
    frozen = Frozen().with_n(5)
    assert frozen.n == 5
    with pytest.raises(Exception):
        frozen.n = 6


def test_load_binary_and_from_json():
    config = _full_config()
    assert ExperimentConfig.load_binary(config.to_json().encode()) == config
    with pytest.raises(ConfigError, match="not UTF-8"):
        EncoderConfig.load_binary(b"\xff\xfe")
    with pytest.raises(ConfigError, match="invalid JSON"):
        EncoderConfig.from_json("{")


def test_unknown_key_names_key_and_class(tmp_path):
    path = tmp_path / "c.json"
    data = json.loads(_full_config().to_json())
    data["heads"][0]["n_layers"] = 4
    path.write_text(json.dumps(data))
    with pytest.raises(ConfigError) as info:
        ExperimentConfig.load(path)
    message = str(info.value)
    assert "unknown key 'n_layers' for EncoderConfig" in message
    assert "ExperimentConfig.heads[0]" in message and str(path) in message


def test_missing_key_names_key_and_class():
    data = json.loads(_full_config().to_json())
    del data["encoder"]["n_heads"]
    with pytest.raises(
        ConfigError,
        match=r"ExperimentConfig.encoder: missing key 'n_heads' "
        r"for EncoderConfig",
    ):
        ExperimentConfig.from_dict(data)
    del data["max_seq"]
    data["encoder"]["n_heads"] = 2
    with pytest.raises(ConfigError, match="missing key 'max_seq'"):
        ExperimentConfig.from_dict(data)
    assert ExperimentConfig.from_dict(data, fill_defaults=True).max_seq is None
    with pytest.raises(ConfigError, match="missing key 'd_model'"):
        EncoderConfig.from_dict({"n_heads": 1}, fill_defaults=True)  # no default to fill


@pytest.mark.parametrize(
    "path, value, match",
    [
        (("encoder", "d_model"), "128", r"encoder.d_model: expected int, got a string"),
        (("encoder", "d_model"), 1.5, "expected int"),
        (("encoder", "norm_first"), 1, "expected bool"),
        (("encoder", "activation"), "SWISH", r"Activation member name \['GELU', 'RELU'\]"),
        (("kernel",), [1, 2, 3], "expected a list of 2 items"),
        (("mode",), "test", r"expected one of \['train', 'eval'\]"),
        (("init",), {"Uniform": {}}, "unknown key 'Uniform' for Initializer"),
        (("by_id",), {"x": "y"}, "dict key 'x' is not an int"),
        (("encoder",), [1], "expected an object for EncoderConfig"),
    ],
)
def test_wrong_types_are_reported_with_their_location(path, value, match):
    data = json.loads(_full_config().to_json())
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(ConfigError, match=match):
        ExperimentConfig.from_dict(data)


def test_int_is_accepted_for_float_fields():
    config = EncoderConfig.from_dict(
        {"d_model": 1, "n_heads": 1, "dropout": 0, "activation": "GELU", "norm_first": False}
    )
    assert config.dropout == 0.0 and isinstance(config.dropout, float)


def test_reserved_field_names_and_unstorable_values():
    with pytest.raises(TypeError, match="field name 'save'"):

        class Bad(Config):
            save: int = 1

    class Holder(Config):
        value: object = None

    with pytest.raises(ConfigError, match="cannot store"):
        Holder(value=object()).to_json()


# ---- calling a config instead of what it builds (issue #30 item 15) -----------------------------
class LayerConfig(Config, kw_only=True):
    width: int
    scale: float = 1.0

    def init(self, device=None):
        return None


class StackConfig(Config):
    encoder: EncoderConfig

    def init(self):
        return None


def test_calling_a_layer_config_says_to_init_it_first():
    import ember
    from ember import nn

    x = ember.ones(4, 3)
    expected = (
        "LinearConfig is a config, not a module: build the module with `.init(device)` first, "
        "e.g. `LinearConfig(3, 2).init()(x)`"
    )
    with pytest.raises(TypeError) as info:
        nn.LinearConfig(3, 2)(x)
    assert str(info.value).startswith(expected)
    assert nn.LinearConfig(3, 2).init()(x).shape == (4, 2)  # what the hint says works
    with pytest.raises(TypeError, match=r"e\.g\. `MaxPool2dConfig\(\(2, 2\)\)\.init\(\)\(x\)`"):
        nn.MaxPool2dConfig((2, 2))(x)
    with pytest.raises(TypeError, match=r"e\.g\. `LayerConfig\(width=8\)\.init\(\)\(\.\.\.\)`"):
        LayerConfig(width=8)(x, mask=None)


def test_calling_other_configs_names_their_init():
    from ember.optim import AdamConfig

    with pytest.raises(
        TypeError,
        match=r"^AdamConfig is a config, not the object it configures: build that with `\.init\(\)` "
        r"first, e.g\. `AdamConfig\(\)\.init\(\)`$",
    ):
        AdamConfig()(1e-3)
    with pytest.raises(
        TypeError, match=r"^EncoderConfig is a config \(settings saved as JSON\).*cannot be called"
    ):
        EncoderConfig(128, 4)()
    # Required values that are not short plain ones are elided.
    with pytest.raises(
        TypeError, match=r"not the object it configures: .* e\.g\. `StackConfig\(\.\.\.\)\.init\(\)`$"
    ):
        StackConfig(EncoderConfig(128, 4))()
