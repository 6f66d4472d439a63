"""The text-classification example's model at a tiny size, and token batches for it, for the
ONNX export and import tests (the example is not installed: ``examples/`` goes on sys.path)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from ember import nn

EXAMPLES = str(Path(__file__).resolve().parents[2] / "examples")
VOCAB_SIZE = 50


def tiny_text_model(pooling: str = "first"):
    """The example's ``TextClassificationModel``: 2 layers of d_model 16, 4 classes, sequences of up to 12."""
    if EXAMPLES not in sys.path:
        sys.path.insert(0, EXAMPLES)
    from text_classification.model import TextClassificationModelConfig

    cfg = TextClassificationModelConfig(
        nn.TransformerEncoderConfig(16, 32, 2, 2),
        n_classes=4,
        vocab_size=VOCAB_SIZE,
        max_seq_length=12,
        pooling=pooling,
    )
    return cfg.init()


def padded_tokens(b: int, s: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``(tokens [b, s] int64, mask_pad [b, s] bool)``: random ids, the first row padded from the middle."""
    rng = np.random.default_rng(seed)
    mask = np.zeros((b, s), bool)
    mask[0, s // 2 :] = True  # one padded row
    return rng.integers(0, VOCAB_SIZE, (b, s)).astype(np.int64), mask
