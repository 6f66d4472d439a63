"""Where a checkpoint lives: a local directory, or a Hub name resolved through the
``huggingface_hub`` cache (downloading when the network is there and ``HF_HUB_OFFLINE`` is not
set). Offline, a name the cache does not hold is an error naming the cache it looked in.
"""

from __future__ import annotations

import os
from pathlib import Path

from ember.pretrained.errors import PretrainedError

__all__ = ["CHECKPOINT_FILES", "hub_cache_dir", "resolve_checkpoint"]

# What a download fetches: the config, the weights (one file or shards), the tokenizer.
CHECKPOINT_FILES = [
    "config.json",
    "model.safetensors",
    "model-*.safetensors",
    "model.safetensors.index.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
]
_TRUE = {"1", "on", "yes", "true"}


def hub_cache_dir() -> Path:
    """The cache ``huggingface_hub`` uses, read from the environment now (not at import)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    home = os.environ.get("HF_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "huggingface"
    )
    return Path(home) / "hub"


def _offline() -> bool:
    return any(
        os.environ.get(v, "").strip().lower() in _TRUE for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    )


def resolve_checkpoint(name_or_dir: str | os.PathLike, cache_dir: str | os.PathLike | None = None) -> Path:
    """The local directory of ``name_or_dir``.

    Args:
        name_or_dir: a checkpoint directory, or a Hub name such as ``"bert-base-uncased"``.
        cache_dir: the Hub cache (default: ``HF_HUB_CACHE``, else ``$HF_HOME/hub``, else
            ``~/.cache/huggingface/hub``).

    Raises:
        PretrainedError: a path that is not a directory, or a name neither cached nor
            downloadable.
    """
    path = Path(name_or_dir)
    if path.is_dir():
        return path
    text = str(name_or_dir)
    if path.exists() or path.is_absolute() or text.startswith((".", "~")) or text.count("/") > 1:
        raise PretrainedError(
            f"from_pretrained: {text!r} is not a checkpoint directory (config.json + model.safetensors)"
        )
    cache = Path(cache_dir) if cache_dir is not None else hub_cache_dir()
    offline = _offline()
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        raise PretrainedError(
            f"from_pretrained: {text!r} is not a directory, and resolving a Hub name needs the "
            f"huggingface_hub package (pip install huggingface_hub); or pass a checkpoint directory"
        ) from None
    try:
        return Path(
            snapshot_download(
                text, cache_dir=str(cache), allow_patterns=CHECKPOINT_FILES, local_files_only=offline
            )
        )
    except Exception as error:  # offline misses, HTTP and connection errors all end here
        why = (
            "HF_HUB_OFFLINE is set and the cache does not hold it"
            if offline
            else f"the download failed ({error})"
        )
        raise PretrainedError(
            f"from_pretrained: {text!r} is not a local directory and is not in the Hugging Face cache "
            f"{cache}: {why}. Download it once with network access, or pass a checkpoint directory"
        ) from None
