"""The ``checkpoint`` fixture: tiny random BERT-family checkpoints in tmp_path (see
``helpers.hf_checkpoints``)."""

from __future__ import annotations

import pytest
from helpers.hf_checkpoints import save_checkpoint


@pytest.fixture
def checkpoint(tmp_path):
    """``checkpoint(family, head=True, **config)`` -> (directory, the transformers model)."""

    def make(family: str, head: bool = True, **extra):
        directory = tmp_path / f"{family}-{'cls' if head else 'base'}"
        return directory, save_checkpoint(directory, family, head, **extra)

    return make
