"""Train the text classifier on DbPedia-14 (Burn's ``examples/db-pedia-train.rs``).

By default it trains offline on the DbPedia rows shipped with the example (``--source sample``)
with ember's recipe (``--recipe ember``: Burn's would draw 25,000 rows an epoch from the
sample's 4,000, about 6 minutes an epoch on 2 cores). Burn's setup is ``--source hub`` (the
Hub's dbpedia_14; ``--recipe burn`` is the default there): TransformerEncoder d_model 256,
d_ff 1024, 8 heads, 4 layers, pre-norm; Adam with L2 weight decay 5e-5; Noam(1e-2), 1,000
warm-up steps; sequences of 256; 5 epochs of 25,000 sampled rows, 2,500 for validation.
Artifacts in /tmp/text-classification-db-pedia.

Run:
    python examples/text_classification/db_pedia_train.py                       # the shipped sample, offline
    python examples/text_classification/db_pedia_train.py --source hub          # Burn's: the Hub's dbpedia_14
    python examples/text_classification/db_pedia_train.py --source local --data-dir DIR --backend cuda
    python examples/text_classification/db_pedia_train.py --source sample --model fasttext
        # the fastText-style model (ember's preset), artifacts in /tmp/text-classification-db-pedia-fasttext
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(
    0, str(Path(__file__).resolve().parent.parent)
)  # examples/: makes `text_classification` importable

import ember  # noqa: F401   (before NumPy: ember's OpenBLAS setting)
from text_classification import cli
from text_classification.dataset import DbPediaDataset

ARTIFACT_DIR = "/tmp/text-classification-db-pedia"
# Burn: TransformerEncoderConfig::new(256, 1024, 8, 4).with_norm_first(true)
MODEL = cli.ModelShape(d_model=256, d_ff=1024, n_heads=8, n_layers=4, norm_first=True)


def main(argv=None):
    """Parse the flags, train, save; returns the ``LearningResult`` (for tests)."""
    return cli.train_main(argv, __doc__.splitlines()[0], ARTIFACT_DIR, DbPediaDataset, MODEL)


if __name__ == "__main__":
    sys.exit(cli.run_script(main))
