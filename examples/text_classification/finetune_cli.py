"""The fine-tuning script's flags and checks (``ag_news_finetune.py``): its parser, the refusal
of a fastText-style base run, and the run's config from the flags and the pretrained run's
``config.json``.

Import scheme of the example: ``examples/`` on ``sys.path``, then
``from text_classification.finetune_cli import finetune_parser``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from text_classification import cli


def finetune_parser(
    description: str, artifact_dir: str, pretrained: str, num_classes_before: int
) -> argparse.ArgumentParser:
    """The training flags, plus ``--pretrained`` (default ``pretrained``), ``--num-classes-before``
    and ``--lora-rank``; ``--model`` defaults to None (the pretrained run's ``config.json`` decides)."""
    from text_classification.pretrained_cli import add_pretrained_flags

    parser = cli.training_parser(description, artifact_dir)
    parser.add_argument(
        "--pretrained",
        default=pretrained,
        metavar="MODEL_BPK",
        help=f"the pretrained model.bpk (default {pretrained}; a config.json beside it gives its shape), or "
        "a Hugging Face BERT/RoBERTa/DistilBERT checkpoint directory or Hub name",
    )
    parser.add_argument(
        "--num-classes-before",
        type=int,
        default=num_classes_before,
        help=f"classes of the pretrained model (default {num_classes_before}, DbPedia's)",
    )
    add_pretrained_flags(parser, pretrained=False)
    parser.set_defaults(model=None)  # the pretrained run's config.json decides; a flag must agree
    return parser


def refuse_fasttext(parser: argparse.ArgumentParser, args: argparse.Namespace, pretrained: Path) -> None:
    """``parser.error`` (exit 2) when ``--model fasttext`` is given or the pretrained run's
    ``config.json`` says ``"model": "fasttext"``: LoRA has nothing to adapt in that model."""
    from text_classification.inference import run_model_kind

    has_config = (pretrained.parent / "config.json").is_file()
    base_kind = run_model_kind(pretrained.parent) if has_config else "transformer"
    if "fasttext" in (args.model, base_kind):
        why = (
            "--model fasttext"
            if base_kind != "fasttext"
            else f'--pretrained {pretrained}: its config.json says "model": "fasttext"'
            + (" (--model transformer contradicts it)" if args.model == "transformer" else "")
        )
        parser.error(
            f"{why}: LoRA fine-tuning does not apply to the fastText-style model (its weights are "
            "an embedding table, trained row-sparse, and the head that fine-tuning replaces; no weight "
            "matrix to adapt). Train it on AG News directly: ag_news_train.py --model fasttext (about 40 s)"
        )


def finetune_config(args: argparse.Namespace, pretrained: Path, model: cli.ModelShape, default_path: str):
    """The fine-tuning :class:`~text_classification.training.ExperimentConfig`: the fine-tuning
    preset and the flags, on the pretrained run's shape, sequence length, pooling and tokenizer
    when its ``config.json`` is beside ``pretrained`` (else ``model``, Burn's DbPedia shape).

    Raises:
        ArtifactError: no ``config.json`` and no model at ``pretrained`` (``default_path`` is
            where ``db_pedia_train.py`` writes one).
    """
    from text_classification.inference import ArtifactError, load_config

    base = None
    if (pretrained.parent / "config.json").is_file():
        base = load_config(pretrained.parent)
    elif not pretrained.is_file():
        raise ArtifactError(
            f"no pretrained model at {pretrained}: train one first (db_pedia_train.py writes "
            f"{default_path}), or pass --pretrained PATH/model.bpk"
        )
    config = cli.build_config(
        args, model, finetune=True, base_transformer=None if base is None else base.transformer
    )
    if base is not None:  # the weights fix what the pretrained run chose
        for name in ("seq_length", "pooling"):
            if getattr(args, name) is None:
                setattr(config, name, getattr(base, name))
        if args.tokenizer is None:
            config.tokenizer = base.tokenizer
    return config
