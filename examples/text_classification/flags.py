"""The command-line flags of the example's scripts and their checks: the training flags
(:func:`training_parser`), the inference flags (:func:`inference_parser`), ``--backend`` /
``--dtype`` (:func:`resolve_device`) and the per-model defaults and refusals
(:func:`resolve_model_flags`). The flags themselves are listed in :mod:`text_classification.cli`.

Import scheme of the example: ``examples/`` on ``sys.path``, then
``from text_classification.flags import training_parser``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from text_classification.recipes import RECIPES

BACKENDS = ("cpu", "reference", "cuda", "torch", "torch:cuda", "torch:mps")
DTYPES = ("f32", "f16")
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
# Float dtypes each backend trains and infers in: every backend does all of DTYPES (the table
# is where a backend without float16 would say so, and --dtype checks it).
BACKEND_DTYPES = dict.fromkeys(BACKENDS, DTYPES)
BACKEND_NEEDS = {
    "cpu": "Numba kernels on the CPU (installed with ember; the default)",
    "reference": "the pure-NumPy reference backend (slow; the specification the others are tested against)",
    "cuda": "an NVIDIA GPU with its driver and CuPy (pip install 'ember[cuda]', or cupy-cuda12x)",
    "torch": "PyTorch's kernels on the CPU (pip install 'ember[torch]')",
    "torch:cuda": "PyTorch built with CUDA and an NVIDIA GPU",
    "torch:mps": "PyTorch on Apple silicon (Metal)",
}


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


def resolve_device(parser: argparse.ArgumentParser, backend: str, dtype: str) -> tuple[str, Any]:
    """``(device, dtype)`` for ``--backend`` / ``--dtype``, or a clear ``parser.error`` (exit 2).

    Returns:
        The device string (``"cpu"``, ``"reference"``, ``"cuda:0"``, ``"torch"``,
        ``"torch:cuda:0"``, ``"torch:mps"``) and the ember dtype (None
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
    elif kind.startswith("torch"):
        device = _torch_device(parser, kind)
    else:
        device = kind
    return device, (ember.float16 if dtype == "f16" else None)


def _torch_device(parser: argparse.ArgumentParser, kind: str) -> str:
    """The ember device of ``--backend torch|torch:cuda|torch:mps``, or ``parser.error`` saying
    what this machine lacks."""
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        parser.error(f"--backend {kind}: PyTorch is not installed; pip install 'ember[torch]'")
    import torch

    if kind == "torch:cuda" and not torch.cuda.is_available():
        parser.error(f"--backend {kind}: PyTorch sees no CUDA GPU here; use --backend torch on this machine")
    if kind == "torch:mps" and not torch.backends.mps.is_available():
        parser.error(f"--backend {kind}: PyTorch's MPS backend is not available here; use --backend torch")
    return "torch:cuda:0" if kind == "torch:cuda" else kind


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
