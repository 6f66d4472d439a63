"""The command-line flags shared by the example's scripts, and the recipe presets.

Every training script (``ag_news_train.py``, ``db_pedia_train.py``, ``ag_news_finetune.py``)
takes::

    --model transformer|fasttext   --backend cpu|reference|cuda   --dtype f32|f16
    --source hub|local|sample|synthetic   --data-dir DIR   --tokenizer PATH   --artifact-dir DIR
    --recipe burn|ember   --epochs N   --batch-size N   --seq-length N
    --train-samples N   --valid-samples N   --seed N
    --optimizer adam|adamw   --lr X   --lr-schedule noam|cosine|constant   --warmup-steps N
    --weight-decay X
    (beyond the list: --d-model --d-ff --n-heads --n-layers --dropout --pooling first|mean
     --label-smoothing X --token-dropout X --min-lr X --num-workers N --resume EPOCH --plots;
     for --model fasttext: --buckets N --ngrams N --head-tokens N --max-tokens N;
     --pretrained NAME_OR_DIR [--lora-rank R]: fine-tune a Hugging Face encoder instead, see
     :mod:`text_classification.pretrained`)

``--model transformer`` (the default) trains Burn's Transformer classifier; ``--model fasttext``
the fastText-style bag of word pieces and hashed n-grams (:mod:`text_classification.fasttext`),
with its own preset per dataset (:data:`~text_classification.fasttext.FASTTEXT_RECIPE`; Burn has
no such model, so ``--recipe burn`` does not apply to it) and its own default artifact directory
(the Transformer's with ``-fasttext`` appended). Flags of one model given to the other are an
error, not silently ignored. Fine-tuning applies to the Transformer only.

``--source`` defaults to what works offline where the example ships rows: ``sample`` (the
shipped DbPedia rows) for the DbPedia scripts, ``hub`` for AG News (no rows ship); an
unreachable Hub with nothing cached ends in a one-line error naming the offline sources.

``--recipe burn`` (the Transformer's default, except on ``--source sample``) is exactly Burn's
example: the script's Transformer, Adam with L2 weight decay 5e-5, Noam(1e-2) warm-up 1,000
steps scaled by d_model, sequences of 256, batches of 32, 5 epochs of 25,000 items drawn with
replacement, 2,500 for validation (the fine-tuning: constant 1e-3). ``--recipe ember`` is
ember's recommended recipe, tuned per dataset (:data:`EMBER_RECIPES`: :data:`EMBER_RECIPE` on
the DbPedia sample, :data:`EMBER_AG_NEWS_RECIPE` on AG News). On ``--source sample`` the
Transformer's default is ``--recipe ember``: Burn's recipe draws 25,000 rows an epoch from the
sample's 4,000 at sequences of 256 (about 6 minutes an epoch on 2 cores). Any flag given
explicitly overrides the preset.

A bad ``--artifact-dir`` (a file, a directory that cannot be created or written) or a
``--resume EPOCH`` without a complete checkpoint of that epoch ends with a usage error (exit 2)
before any work; so does fine-tuning a run whose ``config.json`` says ``"model": "fasttext"``.

The inference scripts take ``--model``, ``--backend``, ``--dtype``, ``--artifact-dir``,
``--tokenizer`` and ``--text`` (repeatable; default: Burn's three samples); the run's
``config.json`` says which model it holds, and ``--model`` (when given) must agree with it.
``--evaluate --source S [--data-dir DIR]`` prints the accuracy over the whole test split instead.

Import scheme of the example: ``examples/`` on ``sys.path``, then
``from text_classification import cli``.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "BACKENDS",
    "BURN_FINETUNE_RECIPE",
    "BURN_RECIPE",
    "DTYPES",
    "EMBER_AG_NEWS_RECIPE",
    "EMBER_FINETUNE_RECIPE",
    "EMBER_RECIPE",
    "EMBER_RECIPES",
    "MODELS",
    "PRETRAINED_LORA_RECIPE",
    "PRETRAINED_RECIPE",
    "RECIPES",
    "ModelShape",
    "Recipe",
    "add_backend_flags",
    "add_training_flags",
    "build_config",
    "build_fasttext_config",
    "check_run_dir",
    "default_source",
    "inference_parser",
    "load_datasets",
    "model_artifact_dir",
    "preset",
    "resolve_device",
    "resolve_model_flags",
    "run_script",
    "training_parser",
]

BACKENDS = ("cpu", "reference", "cuda")
DTYPES = ("f32", "f16")
RECIPES = ("burn", "ember")
MODELS = ("transformer", "fasttext")
# The datasets whose rows ship with the example: their scripts default to --source sample.
SHIPPED_SAMPLES = ("dbpedia",)
DEFAULT_SEED = 42  # --seed's default (the synthetic corpus of --evaluate uses it too)
# The flags that only one model reads (``dest`` names); the other refuses them.
TRANSFORMER_ONLY = (
    "seq_length",
    "warmup_steps",
    "min_lr",
    "pooling",
    "d_ff",
    "n_heads",
    "n_layers",
    "dropout",
    "sample_with_replacement",
    "weight_decay",
    "token_dropout",
)
FASTTEXT_ONLY = ("buckets", "ngrams", "head_tokens", "max_tokens")
# Float dtypes each backend trains and infers in (all of them do both; the table is where a
# backend without float16 would say so, and --dtype checks it).
BACKEND_DTYPES = {"cpu": ("f32", "f16"), "reference": ("f32", "f16"), "cuda": ("f32", "f16")}
BACKEND_NEEDS = {
    "cpu": "Numba kernels on the CPU (installed with ember; the default)",
    "reference": "the pure-NumPy reference backend (slow; the specification the others are tested against)",
    "cuda": "an NVIDIA GPU with its driver and CuPy (pip install 'ember[cuda]', or cupy-cuda12x)",
}


@dataclass(frozen=True)
class ModelShape:
    """The Transformer encoder of a recipe (Burn's ``TransformerEncoderConfig::new(d_model, d_ff, n_heads,
    n_layers)`` with its options)."""

    d_model: int
    d_ff: int
    n_heads: int
    n_layers: int
    norm_first: bool = True
    quiet_softmax: bool = False
    dropout: float = 0.1

    def config(self):
        from ember import nn

        return nn.TransformerEncoderConfig(
            self.d_model,
            self.d_ff,
            self.n_heads,
            self.n_layers,
            dropout=self.dropout,
            norm_first=self.norm_first,
            quiet_softmax=self.quiet_softmax,
        )


@dataclass(frozen=True)
class Recipe:
    """Everything a preset decides; each field has a flag of the same name."""

    optimizer: str
    lr: float
    lr_schedule: str
    warmup_steps: int
    weight_decay: float
    epochs: int
    batch_size: int
    seq_length: int
    train_samples: int
    valid_samples: int
    sample_with_replacement: bool
    pooling: str
    label_smoothing: float
    min_lr: float = 0.0
    token_dropout: float = 0.0
    num_workers: int = 1
    model: ModelShape | None = None  # None: the script's own model


# Burn's example: examples/text-classification/src/training.rs and examples/*-train.rs.
BURN_RECIPE = Recipe(
    optimizer="adam",
    lr=1e-2,
    lr_schedule="noam",
    warmup_steps=1000,
    weight_decay=5e-5,
    epochs=5,
    batch_size=32,
    seq_length=256,
    train_samples=25_000,
    valid_samples=2_500,
    sample_with_replacement=True,
    pooling="first",
    label_smoothing=0.0,
)
# Burn's fine-tuning (src/finetune.rs): the same, at a constant 1e-3.
BURN_FINETUNE_RECIPE = dataclasses.replace(BURN_RECIPE, lr=1e-3, lr_schedule="constant", warmup_steps=0)

# ember's recipe, chosen from measured runs of `demo.py` (DbPedia sample: 4,000 rows, accuracy over
# the 1,000 held-out rows; 2 CPU cores):
# * a pre-norm encoder of d_model 128, 2 layers, 4 heads: 2 layers train in half the time of 4;
# * sequences of 64 tokens (the sample's median text is 76 tokens, AG News's 54): the class is in
#   the title and the first sentence, and a step costs about half of one at 128;
# * the head reads the mean over the real tokens: 87.4% against 79.0% on token 0 (3 epochs);
# * AdamW (decoupled decay 0.01), 60 linear warm-up steps, then a cosine to 0 over the run; peak
#   5e-3 (4 epochs: 82.7% at 1e-3, 85.8% at 2e-3, 88.0% at 3e-3, 88.8% at 5e-3, 87.4% at 8e-3);
# * 3 epochs (87.4%; 4 epochs 88.8%, but 3 keep the demo well inside its time budget);
# * whole shuffled passes over the split (no draws with replacement), dropout 0.1 (without
#   dropout 86.8% against 88.0%), label smoothing 0.1 (neutral here: 87.2% without).
# Fine-tuning (LoRA, DbPedia-sample model -> AG News, 2 epochs of 4,000 rows): 80.5% at 1e-2,
# 63.0% at 2e-3; Burn's constant 1e-3 with Adam: 57.3%.
EMBER_MODEL = ModelShape(
    d_model=128, d_ff=512, n_heads=4, n_layers=2, norm_first=True, quiet_softmax=False, dropout=0.1
)
EMBER_RECIPE = Recipe(
    optimizer="adamw",
    lr=5e-3,
    lr_schedule="cosine",
    warmup_steps=60,
    weight_decay=1e-2,
    epochs=3,
    batch_size=32,
    seq_length=64,
    train_samples=0,
    valid_samples=0,
    sample_with_replacement=False,
    pooling="mean",
    label_smoothing=0.1,
    num_workers=1,
    model=EMBER_MODEL,
)
EMBER_FINETUNE_RECIPE = dataclasses.replace(EMBER_RECIPE, lr=1e-2, model=None)
# ember's recipe for AG News (46,432 training rows -> the full 7,600-row test split, 2 cores):
# the same model, with more regularisation and a longer run, since 12x the rows let it overfit
# later but it does overfit (training accuracy ~97%, held-out flat after epoch 4):
# * EMBER_RECIPE for 6 epochs, 300 warm-up steps: 89.7% (flat at 89.6-89.8% from epoch 3);
# * the same with dropout 0.2, 5 epochs: 89.1% after 3 epochs (stopped);
# * token dropout 0.15 (a word piece becomes [UNK]) and decoupled weight decay 0.05, 5 epochs:
#   90.2% on the full test split (epochs 1-5: 87.8, 89.1, 90.2, 90.5, 90.2%); times: README.
EMBER_AG_NEWS_RECIPE = dataclasses.replace(
    EMBER_RECIPE, epochs=5, warmup_steps=300, token_dropout=0.15, weight_decay=0.05
)
# The ember preset of each dataset (``TextClassificationDataset.NAME``); others take EMBER_RECIPE.
EMBER_RECIPES = {"dbpedia": EMBER_RECIPE, "ag_news": EMBER_AG_NEWS_RECIPE}
# Fine-tuning a pretrained Hugging Face encoder (--pretrained): the usual BERT fine-tuning recipe
# on ember's (AdamW, decay 0.01, cosine after a short warm-up, whole passes, batches of 32) with
# BERT's peak 3e-5, 2 epochs, sequences of 128, no label smoothing); LoRA trains only adapters and a fresh head, which take a higher rate (5e-4).
# The head reads the first token ([CLS]), so --pooling does not apply. Not tuned here: no
# pretrained checkpoint could be downloaded on the machines this was written on (README).
PRETRAINED_RECIPE = dataclasses.replace(
    EMBER_RECIPE,
    lr=3e-5,
    warmup_steps=100,
    epochs=2,
    seq_length=128,
    pooling="first",
    label_smoothing=0.0,
    model=None,
)
PRETRAINED_LORA_RECIPE = dataclasses.replace(PRETRAINED_RECIPE, lr=5e-4)


def preset(recipe: str, finetune: bool = False, dataset: str | None = None) -> Recipe:
    """The preset ``recipe`` (``"burn"`` or ``"ember"``), for training or fine-tuning.

    Args:
        recipe: ``"burn"`` or ``"ember"``.
        finetune: the fine-tuning preset.
        dataset: the dataset's ``NAME`` (``"ag_news"``, ``"dbpedia"``): ember's training preset
            is tuned per dataset (Burn's is one for all).
    """
    if recipe == "pretrained":  # --pretrained: full fine-tuning, or LoRA (finetune)
        return PRETRAINED_LORA_RECIPE if finetune else PRETRAINED_RECIPE
    if recipe not in RECIPES:
        raise ValueError(f"unknown recipe {recipe!r}; expected one of {', '.join(RECIPES)}")
    if recipe == "burn":
        return BURN_FINETUNE_RECIPE if finetune else BURN_RECIPE
    return EMBER_FINETUNE_RECIPE if finetune else EMBER_RECIPES.get(dataset, EMBER_RECIPE)


# ---------------------------------------------------------------------------------- flags
def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def _float(text: str) -> float:
    value = float(text)
    if value != value or value in (float("inf"), float("-inf")):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text}")
    return value


def add_backend_flags(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``--backend`` and ``--dtype`` (checked by :func:`resolve_device`)."""
    needs = "; ".join(f"{k}: {v}" for k, v in BACKEND_NEEDS.items())
    parser.add_argument(
        "--backend",
        default="cpu",
        metavar="|".join(BACKENDS),
        help=f"where to compute (default cpu). {needs}",
    )
    parser.add_argument(
        "--dtype",
        default="f32",
        metavar="|".join(DTYPES),
        help="float dtype of the model: f32 (default) or f16 (pure float16, as Burn's f16 feature)",
    )
    return parser


def add_training_flags(
    parser: argparse.ArgumentParser, artifact_dir: str, sources: Sequence[str]
) -> argparse.ArgumentParser:
    """The training scripts' flags. Recipe flags default to None: the preset fills them."""
    parser.add_argument(
        "--model",
        choices=MODELS,
        default="transformer",
        help="transformer (Burn's example, the default) or fasttext (a bag of word pieces and hashed "
        "n-grams: seconds to train, a strong baseline)",
    )
    add_backend_flags(parser)
    from text_classification.dataset import SOURCES

    parser.add_argument(
        "--source",
        choices=SOURCES,
        default=sources[0],
        help=f"where the rows come from (default {sources[0]}): hub (Hugging Face Hub, cached as "
        "SQLite), local (--data-dir with train.csv/test.csv or the Hub's parquet files), sample "
        "(the DbPedia rows shipped with the example), synthetic (a generated corpus, for tests)",
    )
    parser.add_argument("--data-dir", default=None, metavar="DIR", help="the directory of --source local")
    parser.add_argument(
        "--tokenizer",
        default=None,
        metavar="PATH",
        help="a tokenizer.json or vocab.txt, or 'bert-base-cased' for the Hub's (default: the "
        "bert-base-cased vocabulary shipped with the example)",
    )
    parser.add_argument(
        "--artifact-dir",
        default=None,
        metavar="DIR",
        help=f"where the run's artifacts go (default {artifact_dir}, or "
        f"{model_artifact_dir(artifact_dir, 'fasttext')} for --model fasttext)",
    )
    parser.add_argument(
        "--recipe",
        choices=RECIPES,
        default=None,
        help="preset: burn (Burn's example, the Transformer's default) or ember (ember's recommended "
        "recipe; the only one of --model fasttext, and the Transformer's default on --source sample, where "
        "Burn's takes about 6 min an epoch); explicit flags override it",
    )
    g = parser.add_argument_group("recipe (default: the preset's value)")
    g.add_argument("--epochs", type=_positive, default=None)
    g.add_argument("--batch-size", type=_positive, default=None)
    g.add_argument("--seq-length", type=_positive, default=None, help="tokens per text (cut or padded)")
    g.add_argument(
        "--train-samples",
        type=_non_negative,
        default=None,
        help="items drawn from the train split per epoch (0: the split's size)",
    )
    g.add_argument(
        "--valid-samples",
        type=_non_negative,
        default=None,
        help="items drawn from the test split per validation (0: the split's size)",
    )
    g.add_argument(
        "--with-replacement",
        dest="sample_with_replacement",
        default=None,
        action=argparse.BooleanOptionalAction,
        help="draw the items independently (burn) or in shuffled whole passes (ember)",
    )
    g.add_argument(
        "--seed",
        type=_non_negative,
        default=DEFAULT_SEED,
        help=f"seeds parameters, dropout and sampling ({DEFAULT_SEED})",
    )
    g.add_argument(
        "--optimizer",
        choices=("adam", "adamw"),
        default=None,
        help="adam (L2 weight decay, Burn) or adamw (decoupled weight decay)",
    )
    g.add_argument("--lr", type=_float, default=None, help="Noam's factor, else the peak or constant rate")
    g.add_argument(
        "--lr-schedule",
        choices=("noam", "cosine", "linear", "constant"),
        default=None,
        help="transformer: noam, cosine or constant (after a linear warm-up); fasttext: linear (to 0) or "
        "constant",
    )
    g.add_argument("--warmup-steps", type=_non_negative, default=None)
    g.add_argument("--min-lr", type=_float, default=None, help="where the cosine ends (0)")
    g.add_argument("--weight-decay", type=_float, default=None)
    g.add_argument("--label-smoothing", type=_float, default=None)
    g.add_argument(
        "--token-dropout",
        type=_float,
        default=None,
        help="probability that a training text's word piece becomes [UNK] (an augmentation; 0)",
    )
    g.add_argument(
        "--pooling",
        choices=("first", "mean"),
        default=None,
        help="the head reads token 0 (Burn) or the mean over the non-padding tokens",
    )
    m = parser.add_argument_group("model (default: the preset's, else the script's)")
    m.add_argument("--d-model", type=_positive, default=None)
    m.add_argument("--d-ff", type=_positive, default=None)
    m.add_argument("--n-heads", type=_positive, default=None)
    m.add_argument("--n-layers", type=_positive, default=None)
    m.add_argument("--dropout", type=_float, default=None)
    f = parser.add_argument_group("fastText-style model (--model fasttext; default: the dataset's preset)")
    f.add_argument(
        "--buckets", type=_positive, default=None, help="hashed n-gram rows of the embedding table"
    )
    f.add_argument(
        "--ngrams", type=_positive, default=None, help="longest hashed n-gram (2: word-piece bigrams)"
    )
    f.add_argument(
        "--head-tokens",
        type=_non_negative,
        default=None,
        help="the first N word pieces also get their own bag (0: none)",
    )
    f.add_argument("--max-tokens", type=_positive, default=None, help="word pieces read per text")
    o = parser.add_argument_group("run")
    o.add_argument(
        "--num-workers", type=_non_negative, default=None, help="data-loader worker processes (Burn: 1)"
    )
    o.add_argument(
        "--resume",
        type=_positive,
        default=None,
        metavar="EPOCH",
        help="resume from the checkpoint of EPOCH in the artifact directory",
    )
    o.add_argument(
        "--plots", action="store_true", help="draw plots/<Metric>.png after every epoch (matplotlib)"
    )
    return parser


def default_source(dataset_cls) -> str:
    """``--source``'s default for ``dataset_cls``: ``sample`` where rows ship with the example
    (works offline), else ``hub``."""
    return "sample" if getattr(dataset_cls, "NAME", None) in SHIPPED_SAMPLES else "hub"


def training_parser(
    description: str, artifact_dir: str, sources: Sequence[str] = ("hub",)
) -> argparse.ArgumentParser:
    """An ``ArgumentParser`` with the training flags."""
    parser = argparse.ArgumentParser(description=description)
    return add_training_flags(parser, artifact_dir, sources)


# ---------------------------------------------------------------------------------- resolution
def model_artifact_dir(artifact_dir: str, model: str) -> str:
    """A script's default artifact directory for ``model``: the Transformer's is the script's
    (Burn's), the fastText model's has ``-fasttext`` appended, so the two runs never mix."""
    return artifact_dir if model == "transformer" else f"{artifact_dir}-{model}"


def resolve_model_flags(parser: argparse.ArgumentParser, args: argparse.Namespace, artifact_dir: str) -> None:
    """Fill ``args.recipe`` and ``args.artifact_dir`` for ``args.model``, and refuse (with
    ``parser.error``, exit 2) the flags that only the other model reads."""
    refused = FASTTEXT_ONLY if args.model == "transformer" else TRANSFORMER_ONLY
    given = [name for name in refused if getattr(args, name, None) is not None]
    if given:
        flags = ", ".join(
            "--" + name.replace("_", "-").replace("sample-with-replacement", "with-replacement")
            for name in given
        )
        parser.error(
            f"{flags}: not a setting of --model {args.model} (the other model's flags: "
            f"{'transformer' if args.model == 'fasttext' else 'fasttext'})"
        )
    if args.model == "fasttext":
        if args.recipe == "burn":
            parser.error(
                "--recipe burn: Burn's example has no fastText-style model; --model fasttext trains "
                "ember's preset (--recipe ember), which explicit flags override"
            )
        if args.lr_schedule not in (None, "linear", "constant"):
            parser.error(
                f"--lr-schedule {args.lr_schedule}: --model fasttext decays its rate linearly or keeps it "
                "constant; choose linear or constant"
            )
        args.recipe = "ember"
    else:
        if args.lr_schedule == "linear":
            parser.error("--lr-schedule linear: the Transformer's schedules are noam, cosine and constant")
        # Burn's recipe on the 4,000-row sample: 25,000 draws of 256 tokens, ~6 min an epoch
        args.recipe = args.recipe or ("ember" if getattr(args, "source", None) == "sample" else "burn")
    if args.artifact_dir is None:
        args.artifact_dir = model_artifact_dir(artifact_dir, args.model)


def check_run_dir(parser: argparse.ArgumentParser, artifact_dir: str, resume: int | None) -> None:
    """Refuse with ``parser.error`` (exit 2), before any work, an ``--artifact-dir`` that cannot
    hold a run (a file, or a directory that cannot be created or written) and a ``--resume
    EPOCH`` without a complete checkpoint of that epoch (its list of the ones there)."""
    from ember.train.checkpoint.file_checkpointer import FileCheckpointer

    path = Path(artifact_dir).expanduser()
    if path.exists() and not path.is_dir():
        parser.error(f"--artifact-dir {artifact_dir}: a file, not a directory; pass --artifact-dir DIR")
    existing = path
    while not existing.exists():  # the deepest existing folder is where the run would be created
        existing = existing.parent
    if not existing.is_dir():
        parser.error(
            f"--artifact-dir {artifact_dir}: {existing} is a file, so the directory cannot be created"
        )
    if not os.access(existing, os.W_OK | os.X_OK):
        what = "is not writable" if existing == path else f"cannot be created ({existing} is not writable)"
        parser.error(f"--artifact-dir {artifact_dir}: the directory {what}; pass --artifact-dir DIR")
    if resume is None:
        return
    # A checkpoint is complete once its "training" record (written last) exists.
    marker = FileCheckpointer(path / "checkpoint", "training")
    if not marker.path(resume).is_file():
        epochs = sorted(
            int(p.stem.rsplit("-", 1)[1])
            for p in marker.directory.glob("training-*.bpk")
            if p.stem.rsplit("-", 1)[1].isdigit()
        )
        have = ", ".join(map(str, epochs)) if epochs else "none"
        parser.error(
            f"--resume {resume}: no complete checkpoint of epoch {resume} in {marker.directory} "
            f"(complete epochs there: {have})"
        )


def resolve_device(parser: argparse.ArgumentParser, backend: str, dtype: str) -> tuple[str, Any]:
    """``(device, dtype)`` for ``--backend`` / ``--dtype``, or a clear ``parser.error`` (exit 2).

    Returns:
        The device string (``"cpu"``, ``"reference"``, ``"cuda:0"``) and the ember dtype (None
        for float32, the models' default).
    """
    import ember

    kind = backend.strip().lower()
    if kind not in BACKENDS:
        parser.error(
            f"--backend: unknown backend {backend!r}; choose one of {', '.join(BACKENDS)} ("
            + "; ".join(f"{k}: {v}" for k, v in BACKEND_NEEDS.items())
            + ")"
        )
    if dtype not in DTYPES:
        parser.error(f"--dtype: unknown dtype {dtype!r}; choose f32 or f16")
    if dtype not in BACKEND_DTYPES[kind]:
        parser.error(
            f"--dtype {dtype}: the {kind} backend does not compute in {dtype}; it supports "
            f"{', '.join(BACKEND_DTYPES[kind])}"
        )
    if kind == "cuda":
        from ember.kernels.cuda.runtime import is_available, unavailable_reason

        if not is_available():
            parser.error(
                f"--backend cuda: no usable CUDA GPU here ({unavailable_reason()}). The cuda backend needs "
                f"{BACKEND_NEEDS['cuda']}; use --backend cpu on this machine"
            )
        device = "cuda:0"
    else:
        device = kind
    return device, (ember.float16 if dtype == "f16" else None)


def _pick(args: argparse.Namespace, name: str, default):
    value = getattr(args, name, None)
    return default if value is None else value


def build_config(
    args: argparse.Namespace,
    script_model: ModelShape,
    finetune: bool = False,
    base_transformer=None,
    dataset: str | None = None,
):
    """The :class:`~text_classification.training.ExperimentConfig` of the parsed flags: the
    preset's values, each overridden by its flag when given.

    Args:
        args: the parsed flags (from :func:`add_training_flags`).
        script_model: the script's own Transformer (Burn's), used by presets without a model.
        finetune: use the fine-tuning presets.
        base_transformer: a pretrained model's ``TransformerEncoderConfig`` (fine-tuning): it
            replaces the preset's model, since the weights must fit it.
        dataset: the dataset's ``NAME``, which picks ember's preset (see :func:`preset`).
    """
    from ember.optim import AdamConfig, AdamWConfig, WeightDecayConfig
    from text_classification.training import ExperimentConfig

    recipe_name = args.recipe or "burn"  # the Transformer's default preset
    recipe = preset(recipe_name, finetune, dataset)
    if base_transformer is not None:
        transformer = base_transformer
        for name in ("d_model", "d_ff", "n_heads", "n_layers", "dropout"):
            if getattr(args, name, None) is not None:
                transformer = dataclasses.replace(transformer, **{name: getattr(args, name)})
    else:
        shape = recipe.model or script_model
        shape = dataclasses.replace(
            shape,
            **{
                name: getattr(args, name)
                for name in ("d_model", "d_ff", "n_heads", "n_layers", "dropout")
                if getattr(args, name, None) is not None
            },
        )
        transformer = shape.config()
    optimizer_name = _pick(args, "optimizer", recipe.optimizer)
    weight_decay = _pick(args, "weight_decay", recipe.weight_decay)
    if optimizer_name == "adam":
        optimizer = AdamConfig(weight_decay=WeightDecayConfig(weight_decay) if weight_decay else None)
    else:
        optimizer = AdamWConfig(weight_decay=weight_decay)
    config = ExperimentConfig(
        transformer=transformer,
        optimizer=optimizer,
        seq_length=_pick(args, "seq_length", recipe.seq_length),
        batch_size=_pick(args, "batch_size", recipe.batch_size),
        num_epochs=_pick(args, "epochs", recipe.epochs),
        train_samples=_pick(args, "train_samples", recipe.train_samples),
        valid_samples=_pick(args, "valid_samples", recipe.valid_samples),
        sample_with_replacement=_pick(args, "sample_with_replacement", recipe.sample_with_replacement),
        lr_schedule=_pick(args, "lr_schedule", recipe.lr_schedule),
        lr=_pick(args, "lr", recipe.lr),
        warmup_steps=_pick(args, "warmup_steps", recipe.warmup_steps),
        min_lr=_pick(args, "min_lr", recipe.min_lr),
        pooling=_pick(args, "pooling", recipe.pooling),
        label_smoothing=_pick(args, "label_smoothing", recipe.label_smoothing),
        token_dropout=_pick(args, "token_dropout", recipe.token_dropout),
        num_workers=_pick(args, "num_workers", recipe.num_workers),
        seed=args.seed,
        tokenizer=args.tokenizer,
        recipe=recipe_name,
    )
    return config.validate()


def build_fasttext_config(args: argparse.Namespace, dataset_cls):
    """The :class:`~text_classification.fasttext.FastTextExperimentConfig` of the parsed flags:
    the dataset's preset (:data:`~text_classification.fasttext.FASTTEXT_RECIPE`), each setting
    overridden by its flag when given."""
    from text_classification.fasttext import fasttext_experiment

    flags = {
        "num_epochs": "epochs",
        "batch_size": "batch_size",
        "train_samples": "train_samples",
        "valid_samples": "valid_samples",
        "optimizer": "optimizer",
        "lr": "lr",
        "lr_schedule": "lr_schedule",
        "label_smoothing": "label_smoothing",
        "num_workers": "num_workers",
        "d_model": "d_model",
        "buckets": "buckets",
        "ngrams": "ngrams",
        "head_tokens": "head_tokens",
        "max_tokens": "max_tokens",
        "tokenizer": "tokenizer",
    }
    overrides = {
        field: getattr(args, flag) for field, flag in flags.items() if getattr(args, flag, None) is not None
    }
    return fasttext_experiment(dataset_cls, seed=args.seed, recipe=args.recipe, **overrides)


def load_datasets(
    dataset_cls, args: argparse.Namespace, parser: argparse.ArgumentParser | None = None
) -> tuple:
    """``(train, test)`` of ``dataset_cls`` from ``--source`` / ``--data-dir``; a bad source or
    directory ends with ``parser.error`` (exit 2) when a parser is given; an unreachable Hub
    with nothing cached raises ``DatasetUnavailableError`` naming the offline sources."""
    from ember.data import DatasetUnavailableError

    try:
        kwargs = {}
        if args.source == "synthetic":
            kwargs = {"seed": args.seed}
        data_dir = args.data_dir
        return (
            dataset_cls.from_source(args.source, "train", data_dir, **kwargs),
            dataset_cls.from_source(args.source, "test", data_dir, **kwargs),
        )
    except (ValueError, FileNotFoundError) as error:
        if parser is None:
            raise
        parser.error(str(error))
    except DatasetUnavailableError as error:
        if args.source != "hub":
            raise
        offline = "--source local --data-dir DIR" + (
            ", or --source sample (the shipped rows)" if default_source(dataset_cls) == "sample" else ""
        )
        raise DatasetUnavailableError(
            f"--source hub: {dataset_cls.__name__} cannot be read from the Hugging Face Hub here and no copy "
            f"is cached. Offline, use {offline}. Details:\n{error}"
        ) from error


def inference_parser(description: str, artifact_dir: str, source: str = "hub") -> argparse.ArgumentParser:
    """``--backend``, ``--dtype``, ``--artifact-dir``, ``--tokenizer``, ``--text`` (and
    ``--evaluate --source``, ``source`` by default)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--model",
        choices=MODELS,
        default=None,
        help="the model the run must hold (default: whatever its config.json says); also picks the "
        f"default artifact directory ({model_artifact_dir(artifact_dir, 'fasttext')} for "
        "fasttext)",
    )
    add_backend_flags(parser)
    parser.add_argument(
        "--artifact-dir",
        default=None,
        metavar="DIR",
        help=f"the training run to load (default {artifact_dir})",
    )
    parser.add_argument(
        "--tokenizer",
        default=None,
        metavar="PATH",
        help="override the tokenizer the run recorded in config.json",
    )
    parser.add_argument(
        "--text",
        action="append",
        default=None,
        metavar="TEXT",
        help="a text to classify (repeatable; default: Burn's three samples)",
    )
    from text_classification.dataset import SOURCES

    parser.add_argument(
        "--evaluate",
        action="store_true",
        help="instead: the accuracy over the whole test split of --source / --data-dir",
    )
    parser.add_argument(
        "--source",
        choices=SOURCES,
        default=source,
        help=f"the test split's source for --evaluate (default {source})",
    )
    parser.add_argument("--data-dir", default=None, metavar="DIR", help="the directory of --source local")
    return parser


def train_main(argv, description: str, artifact_dir: str, dataset_cls, model: ModelShape):
    """The body of the ``*_train.py`` scripts: parse the flags, train, save; returns the
    ``LearningResult``."""
    from text_classification.fasttext import train_fasttext
    from text_classification.pretrained_cli import add_pretrained_flags, train_pretrained
    from text_classification.training import train

    parser = add_pretrained_flags(
        training_parser(description, artifact_dir, sources=(default_source(dataset_cls),))
    )
    args = parser.parse_args(argv)
    if args.pretrained is not None:  # fine-tune a Hugging Face encoder (fully, or LoRA)
        return train_pretrained(parser, args, artifact_dir, dataset_cls, args.lora_rank or 0)
    if args.lora_rank is not None:
        parser.error("--lora-rank: applies to fine-tuning a --pretrained encoder")
    resolve_model_flags(parser, args, artifact_dir)
    check_run_dir(parser, args.artifact_dir, args.resume)
    device, dtype = resolve_device(parser, args.backend, args.dtype)
    if args.model == "fasttext":
        config = build_fasttext_config(args, dataset_cls)
        dataset_train, dataset_test = load_datasets(dataset_cls, args, parser)
        return train_fasttext(
            args.artifact_dir,
            dataset_train,
            dataset_test,
            config,
            device,
            dataset_cls=dataset_cls,
            dtype=dtype,
            checkpoint=args.resume,
            plots=args.plots,
        )
    config = build_config(args, model, dataset=dataset_cls.NAME)
    dataset_train, dataset_test = load_datasets(dataset_cls, args, parser)
    return train(
        args.artifact_dir,
        dataset_train,
        dataset_test,
        config,
        device,
        dataset_cls=dataset_cls,
        dtype=dtype,
        checkpoint=args.resume,
        plots=args.plots,
    )


def infer_main(argv, description: str, artifact_dir: str, dataset_cls, samples: Sequence[str]):
    """The body of the ``*_infer.py`` scripts: parse the flags, infer ``--text`` or ``samples``;
    returns the predictions."""
    from text_classification.inference import infer

    parser = inference_parser(description, artifact_dir, default_source(dataset_cls))
    args = parser.parse_args(argv)
    if args.artifact_dir is None:
        args.artifact_dir = model_artifact_dir(artifact_dir, args.model or "transformer")
    device, dtype = resolve_device(parser, args.backend, args.dtype)
    tokenizer = None
    if args.tokenizer is not None:
        from text_classification.tokenizer import load_tokenizer

        tokenizer = load_tokenizer(args.tokenizer)
    if args.evaluate:
        from text_classification.inference import evaluate_run, run_model_kind

        kind = run_model_kind(args.artifact_dir)
        if args.model is not None and args.model != kind:
            parser.error(f"--model {args.model}: {args.artifact_dir} holds a {kind} run")
        try:
            dataset = dataset_cls.from_source(
                args.source,
                "test",
                args.data_dir,
                **({"seed": DEFAULT_SEED} if args.source == "synthetic" else {}),
            )
        except (ValueError, FileNotFoundError) as error:
            parser.error(str(error))
        accuracy = evaluate_run(args.artifact_dir, dataset_cls, dataset, device, dtype, tokenizer)
        print(
            f"{dataset_cls.__name__} {kind} run {args.artifact_dir}: accuracy {accuracy:.2f}% over the "
            f"{len(dataset):,} rows of the test split ({args.source})"
        )
        return accuracy
    return infer(
        args.artifact_dir, dataset_cls, args.text or samples, device, dtype, tokenizer, model=args.model
    )


def run_script(main, argv=None) -> int:
    """Run a script's ``main`` and turn the example's known failures into one-line errors (exit 1)."""
    import sys

    from ember.data import DatasetUnavailableError
    from ember.pretrained import PretrainedError
    from text_classification.inference import ArtifactError
    from text_classification.tokenizer import TokenizerUnavailableError

    try:
        main(argv)
    except (ArtifactError, DatasetUnavailableError, PretrainedError, TokenizerUnavailableError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0
