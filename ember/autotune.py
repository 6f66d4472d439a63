"""Tune the ``cpu`` kernels for a model ahead of time, so that its first steps measure nothing.

    python -m ember.autotune --model agnews                 # the performance table's AG News model
    python -m ember.autotune --model agnews --model dbpedia --level extensive
    python -m ember.autotune --model my_model.toml          # a model shape of your own

Autotune measures a tuned op's candidates the first time it meets an input class and keeps
the winner in the autotune cache (``[autotune] cache``), where every later process reads it.
Without this command that happens during the first training steps (paced, so that they run at
most about twice as slow as warm ones). This command runs the model's work instead, at its
real shapes and without pacing: a training step (forward, cross-entropy, backward) and an
inference batch, each with every row full and with rows of random length, so every key a
training run or an inference server meets is in the cache before it starts. `make install`
runs it for both built-in models after the precompile.

A model is ``agnews`` or ``dbpedia`` (the Transformer text classifiers of the README's
performance table: batch 32, sequence 256) or a TOML or JSON file with the fields of
:class:`ModelShape` (``d_model``, ``d_ff``, ``heads``, ``layers`` required; the rest default as
below).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np

import ember
from ember import config, nn
from ember.config.files import read_toml
from ember.kernels.autotune import (
    LEVELS,
    cache_folder,
    leveled,
    measured_count,
    paced,
    remeasured,
    reset,
    tunables,
)
from ember.kernels.cpu.background_compile import compile_here

__all__ = ["MODELS", "ModelShape", "load_shape", "tune"]


@dataclasses.dataclass(frozen=True)
class ModelShape:
    """A Transformer encoder classifier: token and position embeddings, ``encoder``, a linear
    head on the first token, fed batches of ``tokens`` = (batch, sequence) ids."""

    encoder: nn.TransformerEncoderConfig
    classes: int = 4
    vocab: int = 28_996
    tokens: tuple[int, int] = (32, 256)
    dtype: str = "float32"


def _encoder(d_model: int, d_ff: int, heads: int, layers: int, quiet_softmax: bool = True):
    """The pre-norm encoder of the benchmark models."""
    return nn.TransformerEncoderConfig(
        d_model, d_ff, heads, layers, norm_first=True, quiet_softmax=quiet_softmax
    )


#: The models of the README's performance table (``bench/model_table.py``).
MODELS = {
    "agnews": ModelShape(_encoder(128, 512, 4, 4), classes=4),
    "dbpedia": ModelShape(_encoder(256, 1024, 8, 4), classes=14),
}

#: A model file's fields and their types: the encoder's four sizes are required, the rest
#: default as in :class:`ModelShape` (``quiet_softmax`` true).
_FILE_FIELDS = dict.fromkeys(
    ("d_model", "d_ff", "heads", "layers", "classes", "vocab", "batch", "seq"), "int"
)
_FILE_FIELDS.update(quiet_softmax="bool", dtype="str")
_REQUIRED = ("d_model", "d_ff", "heads", "layers")


def load_shape(name_or_path: str) -> ModelShape:
    """A built-in model by name, or a model shape read from a TOML or JSON file.

    Raises:
        ValueError: an unknown name, a file that is neither TOML nor JSON, or fields that are
            missing, unknown or of the wrong type (the message names them).
    """
    if name_or_path in MODELS:
        return MODELS[name_or_path]
    path = Path(name_or_path)
    if not path.is_file():
        raise ValueError(
            f"autotune --model {name_or_path!r}: neither a built-in model ({', '.join(MODELS)}) nor a file"
        )
    if path.suffix == ".json":
        raw = json.loads(path.read_text())
    elif path.suffix == ".toml":
        raw = read_toml(path)
    else:
        raise ValueError(f"autotune --model {path}: a model file is .toml or .json, got {path.suffix!r}")
    unknown = sorted(set(raw) - set(_FILE_FIELDS))
    missing = [name for name in _REQUIRED if name not in raw]
    if unknown or missing:
        raise ValueError(
            f"autotune --model {path}: unknown fields {unknown}, missing fields {missing}; "
            f"a model shape has {list(_FILE_FIELDS)}"
        )
    for name, value in raw.items():
        want = _FILE_FIELDS[name]
        if want == "int":
            ok = isinstance(value, int) and not isinstance(value, bool) and value > 0
        else:
            ok = type(value).__name__ == want
        if not ok:
            expected = "an int > 0" if want == "int" else "a " + want
            raise ValueError(f"autotune --model {path}: {name} = {value!r}, expected {expected}")
    ember.dtype(raw.get("dtype", "float32"))  # an unknown dtype fails here, named
    return ModelShape(  # a dataclass's defaults are its class attributes
        _encoder(*(raw[name] for name in _REQUIRED), raw.get("quiet_softmax", True)),
        classes=raw.get("classes", ModelShape.classes),
        vocab=raw.get("vocab", ModelShape.vocab),
        tokens=(raw.get("batch", ModelShape.tokens[0]), raw.get("seq", ModelShape.tokens[1])),
        dtype=raw.get("dtype", ModelShape.dtype),
    )


class _Classifier(nn.Module):
    def __init__(self, shape: ModelShape):
        dt = ember.dtype(shape.dtype)
        d_model = shape.encoder.d_model
        self.tokens = nn.EmbeddingConfig(shape.vocab, d_model).init(dtype=dt)
        self.positions = nn.EmbeddingConfig(shape.tokens[1], d_model).init(dtype=dt)
        self.encoder = shape.encoder.init(dtype=dt)
        self.head = nn.LinearConfig(d_model, shape.classes).init(dtype=dt)

    def forward(self, ids, mask):
        positions = ember.arange(ids.shape[1]).unsqueeze(0).expand(ids.shape)
        x = (self.tokens(ids) + self.positions(positions)) / 2
        return self.head(self.encoder.forward_first_token(nn.TransformerEncoderInput(x).mask_pad(mask)))


def _batches(shape: ModelShape, rng: np.random.Generator, random_rows: int):
    """A batch of full rows, then ``random_rows`` batches of rows of random length."""
    batch, seq = shape.tokens
    rows = [np.full(batch, seq)] + [
        rng.integers(max(seq // 4, 1), seq + 1, batch) for _ in range(random_rows)
    ]
    for lengths in rows:
        ids = rng.integers(1, shape.vocab, (batch, seq))
        mask = np.arange(seq)[None, :] >= lengths[:, None]
        ids[mask] = 0
        yield ember.tensor(ids), ember.tensor(mask), ember.tensor(rng.integers(0, shape.classes, batch))


def tune(shape: ModelShape, random_rows: int = 3) -> None:
    """Run ``shape``'s training step and inference batch at its real sizes, every tuned op
    deciding as it goes (measuring, or reading the cache); nothing paced."""
    compile_here()  # measure the compiled kernels, not the stand-ins of a background compile
    ember.seed(0)
    model = _Classifier(shape)
    loss_fn = nn.CrossEntropyLossConfig().init()
    with paced(False):
        for ids, mask, labels in _batches(shape, np.random.default_rng(0), random_rows):
            loss_fn(model(ids, mask), labels).backward()
            with ember.no_grad():
                model.valid()(ids, mask)


def _level(asked: str | None) -> str:
    if asked is not None:
        return asked
    configured = config.get("autotune.level")
    return "balanced" if configured == "minimal" else configured


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ember.autotune", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--model",
        action="append",
        required=True,
        help=f"{' | '.join(MODELS)} | PATH to a .toml/.json model shape; repeat for several",
    )
    parser.add_argument(
        "--level",
        choices=LEVELS[1:],
        help="how thoroughly to measure (default: [autotune] level, or balanced where that is minimal)",
    )
    parser.add_argument("--random-rows", type=int, default=3, help="batches of random-length rows per model")
    parser.add_argument(
        "--fresh",
        action="store_true",
        help="measure every key again, even where the cache holds a decision (after tuning on a busy machine)",
    )
    args = parser.parse_args(argv)
    try:
        shapes = [(name, load_shape(name)) for name in args.model]
    except ValueError as error:
        parser.error(str(error))
    folder = cache_folder()
    if folder is None:
        parser.error(
            "[autotune] cache is 'off' (EMBER_AUTOTUNE_CACHE or ember.toml): nothing tuned would be kept"
        )
    level = _level(args.level)
    config_level = config.resolve("autotune.level")
    with leveled(level), remeasured() if args.fresh else contextlib.nullcontext():
        reset()
        for name, shape in shapes:
            start = time.perf_counter()
            before = measured_count()
            tune(shape, args.random_rows)
            print(
                f"autotune {name}: {measured_count() - before} keys measured at {level} "
                f"in {time.perf_counter() - start:.1f} s",
                flush=True,
            )
    for op, tunable in sorted(tunables().items()):
        for key, winner in sorted(tunable.decisions().items()):
            print(f"  {op:<24} {key:<40} {winner}")
    print(
        f"cache: {folder}"
        + (
            ""
            if config_level.value != "minimal"
            else f"  (note: [autotune] level is minimal ({config_level.source}); minimal reads these decisions)"
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
