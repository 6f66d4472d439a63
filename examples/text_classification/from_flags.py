"""What the parsed training flags build: the run's config (the preset's values, each
overridden by its flag when given) and its train and test splits.

Import scheme of the example: ``examples/`` on ``sys.path``, then
``from text_classification.from_flags import build_config``.
"""

from __future__ import annotations

import argparse
import dataclasses

from text_classification.flags import default_source
from text_classification.recipes import ModelShape, preset


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
    the dataset's preset (:data:`~text_classification.recipes.FASTTEXT_RECIPE`), each setting
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
