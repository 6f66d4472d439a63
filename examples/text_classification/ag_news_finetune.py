"""LoRA-finetune a DbPedia model on AG News (Burn's ``examples/ag-news-finetune.rs``).

Loads the DbPedia model trained by ``db_pedia_train.py`` (``--pretrained``, default
/tmp/text-classification-db-pedia/model.bpk; its ``config.json`` beside it gives the model's
shape, sequence length, pooling and tokenizer — without one, Burn's DbPedia shape 256/1024/8
heads/4 layers is assumed), applies LoRA rank 8 / alpha 16 (every base weight frozen), resets
the head to AG News's 4 classes and trains the adapters and the head. Burn's recipe: Adam
with L2 weight decay 5e-5 at a constant 1e-3, 5 epochs of 25,000 sampled rows. Artifacts in
/tmp/text-classification-ag-news; infer with ``ag_news_infer.py``.

A fastText-style run is refused with a clear error, whether ``--model fasttext`` says so or the
pretrained run's ``config.json`` does (``"model": "fasttext"``; ``--model transformer`` then
contradicts it): LoRA has no weight matrix to adapt in that model (train it on AG News
directly, ``ag_news_train.py --model fasttext``).

``--pretrained`` may instead name a Hugging Face BERT, RoBERTa or DistilBERT checkpoint (a
directory with config.json, model.safetensors and tokenizer.json, or a Hub name): its encoder is
LoRA-fine-tuned on AG News with a new head (rank ``--lora-rank``, default 8), with its own
tokenizer and preset (:data:`~text_classification.recipes.PRETRAINED_LORA_RECIPE`). ``--lora-rank``
also sets the rank for a DbPedia model.

Run (the chain):
    python examples/text_classification/db_pedia_train.py
    python examples/text_classification/ag_news_finetune.py
    python examples/text_classification/ag_news_infer.py
    python examples/text_classification/ag_news_finetune.py --pretrained bert-base-uncased --source local --data-dir DIR
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(
    0, str(Path(__file__).resolve().parent.parent)
)  # examples/: makes `text_classification` importable

import ember  # noqa: F401   (before NumPy: ember's OpenBLAS setting)
from text_classification import cli
from text_classification.dataset import AgNewsDataset, DbPediaDataset

ARTIFACT_DIR = "/tmp/text-classification-ag-news"
PRETRAINED = "/tmp/text-classification-db-pedia/model.bpk"
NUM_CLASSES_BEFORE = DbPediaDataset.num_classes()  # 14
# Burn: TransformerEncoderConfig::new(256, 1024, 8, 4).with_norm_first(true), the DbPedia model's shape
MODEL = cli.ModelShape(d_model=256, d_ff=1024, n_heads=8, n_layers=4, norm_first=True)


def main(argv=None):
    """Parse the flags, fine-tune, save; returns the ``LearningResult`` (for tests)."""
    from ember import nn
    from text_classification.finetune import LORA_RANK, lora_finetuning
    from text_classification.finetune_cli import finetune_config, finetune_parser, refuse_fasttext
    from text_classification.pretrained import is_checkpoint
    from text_classification.pretrained_cli import train_pretrained

    parser = finetune_parser(__doc__.splitlines()[0], ARTIFACT_DIR, PRETRAINED, NUM_CLASSES_BEFORE)
    args = parser.parse_args(argv)
    rank = args.lora_rank or LORA_RANK
    if is_checkpoint(args.pretrained):  # a Hugging Face encoder: LoRA through the training path
        return train_pretrained(parser, args, ARTIFACT_DIR, AgNewsDataset, rank)
    pretrained = Path(args.pretrained)
    refuse_fasttext(parser, args, pretrained)
    args.model = "transformer"
    cli.resolve_model_flags(parser, args, ARTIFACT_DIR)
    cli.check_run_dir(parser, args.artifact_dir, args.resume)
    device, dtype = cli.resolve_device(parser, args.backend, args.dtype)
    config = finetune_config(args, pretrained, MODEL, PRETRAINED)
    dataset_train, dataset_test = cli.load_datasets(AgNewsDataset, args, parser)
    return lora_finetuning(
        args.artifact_dir,
        dataset_train,
        dataset_test,
        config,
        pretrained,
        args.num_classes_before,
        device,
        dataset_cls=AgNewsDataset,
        dtype=dtype,
        checkpoint=args.resume,
        lora=nn.Lora(rank=rank, alpha=2.0 * rank),  # Burn: LoraConfig::new(r, 2.0 * r)
        plots=args.plots,
    )


if __name__ == "__main__":
    sys.exit(cli.run_script(main))
