"""Classify texts with the DbPedia model trained by ``db_pedia_train.py`` (Burn's ``examples/db-pedia-infer.rs``).

Loads ``config.json`` and ``model.bpk`` from the artifact directory (default
/tmp/text-classification-db-pedia) and prints, for Burn's three samples from the test set (or
the ``--text`` given), the class probabilities and the predicted class in Burn's format.

Run:
    python examples/text_classification/db_pedia_infer.py
    python examples/text_classification/db_pedia_infer.py --text "Mont Blanc is the highest mountain in the Alps."
    python examples/text_classification/db_pedia_infer.py --model fasttext   # the run of *_train.py --model fasttext
    python examples/text_classification/db_pedia_infer.py --evaluate         # accuracy on the shipped sample's test rows
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
# Samples from the test dataset, as in Burn's example; you are free to test with your own text.
SAMPLES = [
    " Magnus Eriksson is a Swedish former footballer who played as a forward.",
    "Crossbeam Systems is headquartered in Boxborough Massachusetts and has offices in Europe Latin America and Asia "
    "Pacific. Crossbeam Systems was acquired by Blue Coat Systems in December 2012 and the Crossbeam brand has been "
    "fully absorbed into Blue Coat.",
    " Zia is the sequel to the award-winning Island of the Blue Dolphins by Scott O'Dell. It was published in 1976 "
    "sixteen years after the publication of the first novel.",
]


def main(argv=None):
    """Parse the flags and infer; returns the predictions (for tests)."""
    return cli.infer_main(argv, __doc__.splitlines()[0], ARTIFACT_DIR, DbPediaDataset, SAMPLES)


if __name__ == "__main__":
    sys.exit(cli.run_script(main))
