"""``from_pretrained``: a BERT-family checkpoint directory (or Hub name) -> an ember module.

The whole file set is checked before any parameter is written: every tensor the family's
table names must be present with the shape the config implies, and every problem is reported
at once, naming the file. Weights are read with the ``safetensors`` package (never pickle).
A head the checkpoint lacks (a bare encoder save) or saved for another number of classes is
freshly initialised, as ``AutoModelForSequenceClassification`` does; ``fresh_parameters``
lists what was.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

import ember
from ember.pretrained.config import EncoderSpec, read_config
from ember.pretrained.encoder import PretrainedEncoder, build_encoder
from ember.pretrained.errors import PretrainedError
from ember.pretrained.hub import resolve_checkpoint
from ember.pretrained.key_tables import checkpoint_prefix, encoder_rows, head_rows, stored_key
from ember.record import RecordError, load_safetensors

__all__ = ["from_pretrained", "read_weights"]

_SHOWN = 12  # problems listed in one error


def read_weights(directory: Path) -> dict[str, tuple[Path, object]]:
    """key -> (file, TensorView) over ``model.safetensors`` or the shards its index lists."""
    single = directory / "model.safetensors"
    index = directory / "model.safetensors.index.json"
    if single.is_file():
        files = [single]
    elif index.is_file():
        try:
            weight_map = json.loads(index.read_text(encoding="utf-8"))["weight_map"]
            files = [directory / name for name in dict.fromkeys(weight_map.values())]
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
            raise PretrainedError(f"{index}: not a safetensors index ({error})") from None
    else:
        pickled = [p.name for p in directory.glob("*.bin")] + [p.name for p in directory.glob("*.pt")]
        extra = f" (found {', '.join(pickled)}: ember does not read pickled weights)" if pickled else ""
        raise PretrainedError(f"{directory}: no model.safetensors or model.safetensors.index.json{extra}")
    out: dict[str, tuple[Path, object]] = {}
    for file in files:
        try:
            record = load_safetensors(file)
        except (RecordError, FileNotFoundError) as error:
            raise PretrainedError(f"{file}: cannot read the weights: {error}") from None
        for key, view in record.tensors.items():
            out[key] = (file, view)
    return out


def _plan(spec: EncoderSpec, model: PretrainedEncoder, weights: dict, num_classes, where: str):
    """(ember path -> (view, layout)) for everything to load, and the fresh head paths."""
    params = dict(model.named_parameters())
    prefix = checkpoint_prefix(spec.family, weights)
    plan, problems, fresh = {}, [], []

    def expected(path, layout):
        shape = tuple(params[path].shape)
        return shape[::-1] if layout == "linear" else shape

    for path, key, layout in encoder_rows(spec.family, spec.n_layers, prefix):
        want = expected(path, layout)
        key = stored_key(key, weights)
        if key not in weights:
            problems.append(f"missing tensor {key!r} (expected {list(want)})")
        elif weights[key].shape != want:
            problems.append(f"tensor {key!r} has shape {list(weights[key].shape)}, expected {list(want)}")
        else:
            plan[path] = (weights[key], layout)
    if num_classes is not None:
        for path, key, layout in head_rows(spec.family, prefix):
            want = expected(path, layout)
            key = stored_key(key, weights)
            got = weights[key].shape if key in weights else None
            if got == want:
                plan[path] = (weights[key], layout)
            elif got is None or (path.startswith("head.output") and num_classes != spec.num_labels):
                fresh.append(path)  # no head saved, or one for another number of classes
            else:
                problems.append(f"tensor {key!r} has shape {list(got)}, expected {list(want)}")
    if problems:
        more = f"\n  ... and {len(problems) - _SHOWN} more" if len(problems) > _SHOWN else ""
        raise PretrainedError(
            f"from_pretrained: the {spec.family} weights in {where} do not fit {spec.path} "
            f"({spec.n_layers} layers, d_model {spec.d_model}):\n  " + "\n  ".join(problems[:_SHOWN]) + more
        )
    return plan, fresh


def from_pretrained(
    name_or_dir: str | os.PathLike,
    *,
    num_classes: int | None = None,
    device=None,
    dtype=None,
    cache_dir: str | os.PathLike | None = None,
) -> PretrainedEncoder:
    """Build a BERT, RoBERTa or DistilBERT encoder from a Hugging Face checkpoint.

    Args:
        name_or_dir: a directory with ``config.json`` and ``model.safetensors`` (or sharded
            safetensors with their index), or a Hub name resolved through the cache.
        num_classes: add a sequence-classification head with this many classes (the model
            then returns logits ``[B, num_classes]`` instead of the last hidden state).
        device: where the parameters go (the default device when None).
        dtype: ``float32`` (default) or ``float16``.
        cache_dir: the Hub cache for a name (see :func:`~ember.pretrained.hub.resolve_checkpoint`).

    Returns:
        A :class:`~ember.pretrained.encoder.PretrainedEncoder` in training mode (call
        ``.valid()`` for inference); ``model.fresh_parameters`` lists the head parameters
        the checkpoint did not provide.

    Raises:
        PretrainedError: an architecture ember does not build, a missing or misshapen tensor,
            an unreadable file; nothing is returned half-loaded.
    """
    directory = resolve_checkpoint(name_or_dir, cache_dir)
    spec = read_config(directory)
    weights = read_weights(directory)
    files = sorted({str(file) for file, _ in weights.values()})
    where = files[0] if len(files) == 1 else f"{directory} ({len(files)} shards)"
    model = build_encoder(spec, num_classes, device, dtype)
    plan, fresh = _plan(spec, model, {k: v[1] for k, v in weights.items()}, num_classes, where)
    params = dict(model.named_parameters())
    for path, (view, layout) in plan.items():
        param = params[path]
        array = view.numpy()
        if layout == "linear":
            array = np.ascontiguousarray(array.T)
        value = ember.from_numpy(array.astype(param.dtype.numpy, copy=False), device=param.device)
        param.set_value(value)
    model._fresh = fresh
    return model
