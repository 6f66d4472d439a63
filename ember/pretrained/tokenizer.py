"""The checkpoint's own tokenizer: ``tokenizer.json`` loaded with the ``tokenizers`` library,
checked against the model's vocabulary (an id past the embedding table would index nothing).
"""

from __future__ import annotations

import os

from ember.pretrained.config import read_config
from ember.pretrained.errors import PretrainedError
from ember.pretrained.hub import resolve_checkpoint

__all__ = ["load_tokenizer"]


def load_tokenizer(name_or_dir: str | os.PathLike, *, cache_dir: str | os.PathLike | None = None):
    """The ``tokenizers.Tokenizer`` of a checkpoint (directory or Hub name).

    Raises:
        PretrainedError: no or unreadable ``tokenizer.json``, or one with more tokens than the
            checkpoint's ``vocab_size``.
    """
    directory = resolve_checkpoint(name_or_dir, cache_dir)
    spec = read_config(directory)
    path = directory / "tokenizer.json"
    if not path.is_file():
        raise PretrainedError(
            f"{path}: the checkpoint has no tokenizer.json (the tokenizers library's format)"
        )
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise PretrainedError("load_tokenizer needs the tokenizers package: pip install tokenizers") from None
    try:
        tokenizer = Tokenizer.from_file(str(path))
    except Exception as error:
        raise PretrainedError(f"{path}: not a tokenizer the tokenizers library can read: {error}") from None
    size = tokenizer.get_vocab_size(with_added_tokens=True)
    if size > spec.vocab_size:
        raise PretrainedError(
            f"{path}: the tokenizer has {size} tokens but {spec.path} gives the model vocab_size "
            f"{spec.vocab_size}; ids from {spec.vocab_size} on have no embedding row, so this is "
            f"not the checkpoint's tokenizer"
        )
    return tokenizer
