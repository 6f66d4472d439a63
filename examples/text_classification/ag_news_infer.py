"""Classify texts with the AG News model trained by ``ag_news_train.py`` (Burn's ``examples/ag-news-infer.rs``).

Loads ``config.json`` and ``model.bpk`` from the artifact directory (default
/tmp/text-classification-ag-news) and prints, for Burn's three samples from the test set (or
the ``--text`` given), the class probabilities and the predicted class in Burn's format.

Run:
    python examples/text_classification/ag_news_infer.py
    python examples/text_classification/ag_news_infer.py --text "Stocks rally as oil prices fall" --backend cuda
    python examples/text_classification/ag_news_infer.py --model fasttext   # the run of *_train.py --model fasttext
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
# Samples from the test dataset, as in Burn's example; you are free to test with your own text.
SAMPLES = [
    "Jays power up to take finale Contrary to popular belief, the power never really snapped back at SkyDome on "
    "Sunday. The lights came on after an hour delay, but it took some extra time for the batting orders to provide "
    "some extra wattage.",
    "Yemen Sentences 15 Militants on Terror Charges A court in Yemen has sentenced one man to death and 14 others to "
    "prison terms for a series of attacks and terrorist plots in 2002, including the bombing of a French oil tanker.",
    "IBM puts grids to work at U.S. Open IBM will put a collection of its On Demand-related products and "
    "technologies to this test next week at the U.S. Open tennis championships, implementing a grid-based "
    "infrastructure capable of running multiple workloads including two not associated with the tournament.",
]


def main(argv=None):
    """Parse the flags and infer; returns the predictions (for tests)."""
    return cli.infer_main(argv, __doc__.splitlines()[0], ARTIFACT_DIR, AgNewsDataset, SAMPLES)


if __name__ == "__main__":
    sys.exit(cli.run_script(main))
