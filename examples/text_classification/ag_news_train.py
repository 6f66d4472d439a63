"""Train the text classifier on AG News (Burn's ``examples/ag-news-train.rs``).

Burn's recipe (the default): TransformerEncoder d_model 128, d_ff 512, 4 heads, 4 layers,
pre-norm, quiet softmax; Adam with L2 weight decay 5e-5; Noam(1e-2), 1,000 warm-up steps;
sequences of 256; 5 epochs of 25,000 sampled rows, 2,500 for validation; artifacts in
/tmp/text-classification-ag-news. ``--recipe ember`` trains ember's recipe instead.

No AG News rows ship with ember (their licence is unclear): use the Hub (the default) or the
classic CSV files / the Hub's parquet files in a directory.

Run:
    python examples/text_classification/ag_news_train.py                            # the Hub's ag_news
    python examples/text_classification/ag_news_train.py --source local --data-dir DIR --recipe ember
    python examples/text_classification/ag_news_train.py --backend cuda --dtype f16
    python examples/text_classification/ag_news_train.py --model fasttext --source local --data-dir DIR
        # the fastText-style model (ember's preset), artifacts in /tmp/text-classification-ag-news-fasttext
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(
    0, str(Path(__file__).resolve().parent.parent)
)  # examples/: makes `text_classification` importable

import ember  # noqa: F401   (before NumPy: ember's OpenBLAS setting)
from text_classification import cli
from text_classification.dataset import AgNewsDataset

ARTIFACT_DIR = "/tmp/text-classification-ag-news"
# Burn: TransformerEncoderConfig::new(128, 512, 4, 4).with_norm_first(true).with_quiet_softmax(true)
MODEL = cli.ModelShape(d_model=128, d_ff=512, n_heads=4, n_layers=4, norm_first=True, quiet_softmax=True)


def main(argv=None):
    """Parse the flags, train, save; returns the ``LearningResult`` (for tests)."""
    return cli.train_main(argv, __doc__.splitlines()[0], ARTIFACT_DIR, AgNewsDataset, MODEL)


if __name__ == "__main__":
    sys.exit(cli.run_script(main))
