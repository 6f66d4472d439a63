"""The ``--pretrained NAME_OR_DIR`` and ``--lora-rank R`` flags of the example's training
scripts: fine-tune a Hugging Face encoder (:mod:`text_classification.pretrained`) instead of
training the example's Transformer, with the preset :data:`~text_classification.recipes.PRETRAINED_RECIPE`
(full) or :data:`~text_classification.recipes.PRETRAINED_LORA_RECIPE` (LoRA).

Import scheme of the example: ``examples/`` on ``sys.path``, then
``from text_classification.pretrained_cli import add_pretrained_flags``.
"""

from __future__ import annotations

import argparse

from text_classification import cli, flags

# The flags a pretrained encoder decides itself (its shape, its tokenizer, its [CLS] head).
PRETRAINED_FIXED = ("d_model", "d_ff", "n_heads", "n_layers", "dropout", "tokenizer", "pooling", "recipe")


def add_pretrained_flags(parser: argparse.ArgumentParser, pretrained: bool = True) -> argparse.ArgumentParser:
    """``--pretrained NAME_OR_DIR`` (when ``pretrained``) and ``--lora-rank R``."""
    g = parser.add_argument_group("pretrained encoder")
    if pretrained:
        g.add_argument(
            "--pretrained",
            default=None,
            metavar="NAME_OR_DIR",
            help="fine-tune a Hugging Face BERT, RoBERTa or DistilBERT checkpoint (a directory with "
            "config.json, model.safetensors and tokenizer.json, or a Hub name) instead of training "
            "the example's Transformer",
        )
    g.add_argument(
        "--lora-rank",
        type=flags._positive,
        default=None,
        metavar="R",
        help="train only LoRA adapters of rank R (alpha 2R) on the frozen encoder, and the head",
    )
    return parser


def resolve_pretrained(
    parser: argparse.ArgumentParser, args: argparse.Namespace, artifact_dir: str, dataset_cls, lora_rank: int
):
    """``(config, device, dtype)`` of a run fine-tuning ``--pretrained``, or a clear
    ``parser.error`` (exit 2): the flags the checkpoint decides, a fastText run, a checkpoint
    that cannot be read (offline and not cached, an architecture ember does not build),
    sequences longer than its positions."""
    from ember.pretrained import PretrainedError, read_config, resolve_checkpoint
    from text_classification.pretrained import encoder_shape, max_seq_length

    flag = f"--pretrained {args.pretrained}"
    if args.model == "fasttext":
        parser.error(f"{flag}: fine-tunes a pretrained Transformer encoder; --model fasttext has none")
    given = [name for name in PRETRAINED_FIXED if getattr(args, name, None) is not None]
    if given:
        flags = ", ".join("--" + name.replace("_", "-") for name in given)
        parser.error(f"{flags}: {flag} fixes these (its shape, tokenizer and [CLS] head, and its own preset)")
    args.model, args.recipe = "transformer", "pretrained"
    cli.resolve_model_flags(parser, args, artifact_dir)
    cli.check_run_dir(parser, args.artifact_dir, args.resume)
    device, dtype = cli.resolve_device(parser, args.backend, args.dtype)
    try:
        spec = read_config(resolve_checkpoint(args.pretrained))
    except PretrainedError as error:
        parser.error(f"{flag}: {error}")
    config = cli.build_config(
        args, None, finetune=lora_rank > 0, base_transformer=encoder_shape(spec), dataset=dataset_cls.NAME
    )
    config.pretrained, config.lora_rank = str(args.pretrained), int(lora_rank)
    if config.seq_length > max_seq_length(spec):
        parser.error(
            f"--seq-length {config.seq_length}: the {spec.family} checkpoint {args.pretrained} has positions "
            f"for {max_seq_length(spec)} tokens"
        )
    return config.validate(), device, dtype


def train_pretrained(
    parser: argparse.ArgumentParser, args: argparse.Namespace, artifact_dir: str, dataset_cls, lora_rank: int
):
    """Fine-tune ``--pretrained`` on ``dataset_cls`` (fully, or LoRA when ``lora_rank`` > 0);
    returns the ``LearningResult``."""
    from text_classification.training import train

    config, device, dtype = resolve_pretrained(parser, args, artifact_dir, dataset_cls, lora_rank)
    return cli.launch(
        train, args, cli.load_datasets(dataset_cls, args, parser), config, device, dtype, dataset_cls
    )
