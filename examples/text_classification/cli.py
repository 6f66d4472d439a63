"""What the example's scripts share: the bodies of their ``main`` (:func:`train_main`,
:func:`infer_main`, :func:`launch`, :func:`run_script`), and the flags they take. The flags are
defined in :mod:`text_classification.flags` (checks of the run directory in
:mod:`text_classification.run_dir`, the config they build in :mod:`text_classification.from_flags`),
the presets in :mod:`text_classification.recipes`; their names stay importable from here.

Every training script (``ag_news_train.py``, ``db_pedia_train.py``, ``ag_news_finetune.py``)
takes::

    --model transformer|fasttext   --backend cpu|reference|cuda|torch[:cuda|:mps]   --dtype f32|f16
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
with its own preset per dataset (:data:`~text_classification.recipes.FASTTEXT_RECIPE`; Burn has
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

from collections.abc import Sequence

from text_classification.flags import (
    BACKEND_DTYPES,
    BACKEND_NEEDS,
    BACKENDS,
    DEFAULT_SEED,
    DTYPES,
    FASTTEXT_ONLY,
    MODELS,
    SHIPPED_SAMPLES,
    TRANSFORMER_ONLY,
    add_backend_flags,
    add_training_flags,
    default_source,
    inference_parser,
    model_artifact_dir,
    resolve_device,
    resolve_model_flags,
    training_parser,
)
from text_classification.from_flags import build_config, build_fasttext_config, load_datasets
from text_classification.recipes import (
    BURN_FINETUNE_RECIPE,
    BURN_RECIPE,
    EMBER_AG_NEWS_RECIPE,
    EMBER_FINETUNE_RECIPE,
    EMBER_MODEL,
    EMBER_RECIPE,
    EMBER_RECIPES,
    PRETRAINED_LORA_RECIPE,
    PRETRAINED_RECIPE,
    RECIPES,
    ModelShape,
    Recipe,
    preset,
)
from text_classification.run_dir import check_run_dir

__all__ = [
    "BACKENDS",
    "BACKEND_DTYPES",
    "BACKEND_NEEDS",
    "BURN_FINETUNE_RECIPE",
    "BURN_RECIPE",
    "DEFAULT_SEED",
    "DTYPES",
    "EMBER_AG_NEWS_RECIPE",
    "EMBER_FINETUNE_RECIPE",
    "EMBER_MODEL",
    "EMBER_RECIPE",
    "EMBER_RECIPES",
    "FASTTEXT_ONLY",
    "MODELS",
    "PRETRAINED_LORA_RECIPE",
    "PRETRAINED_RECIPE",
    "RECIPES",
    "SHIPPED_SAMPLES",
    "TRANSFORMER_ONLY",
    "ModelShape",
    "Recipe",
    "add_backend_flags",
    "add_training_flags",
    "build_config",
    "build_fasttext_config",
    "check_run_dir",
    "default_source",
    "evaluate_test_split",
    "infer_main",
    "inference_parser",
    "launch",
    "load_datasets",
    "model_artifact_dir",
    "preset",
    "resolve_device",
    "resolve_model_flags",
    "run_script",
    "train_main",
    "training_parser",
]


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
        config, trainer = build_fasttext_config(args, dataset_cls), train_fasttext
    else:
        config, trainer = build_config(args, model, dataset=dataset_cls.NAME), train
    datasets = load_datasets(dataset_cls, args, parser)
    return launch(trainer, args, datasets, config, device, dtype, dataset_cls)


def launch(trainer, args, datasets: tuple, config, device, dtype, dataset_cls):
    """``trainer`` (``train`` or ``train_fasttext``) on ``datasets`` (train, test) with the run
    settings of the flags (``--artifact-dir``, ``--resume``, ``--plots``); returns its
    ``LearningResult``."""
    dataset_train, dataset_test = datasets
    return trainer(
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
        return evaluate_test_split(parser, args, dataset_cls, device, dtype, tokenizer)
    return infer(
        args.artifact_dir, dataset_cls, args.text or samples, device, dtype, tokenizer, model=args.model
    )


def evaluate_test_split(parser, args, dataset_cls, device, dtype, tokenizer) -> float:
    """``--evaluate``: the accuracy (%) of the run in ``--artifact-dir`` over the whole test split
    of ``--source``, printed in one line; a ``--model`` the run does not hold, or a bad source,
    ends with ``parser.error`` (exit 2)."""
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
