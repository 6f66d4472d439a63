"""The gradient mean of data-parallel training: bucketed all-reduce of ``GradientsParams``.

Each rank scales its gradients by its share of the step's items (``count / step size``;
``1 / world_size`` when the parts are equal) while copying them into flat buckets of one dtype,
at most ``bucket_bytes`` each; every bucket's all-reduce (sum) starts as soon as it is filled,
so packing the next bucket overlaps the transfer of the previous ones. The sum of the scaled
gradients is the gradient of the mean loss over the whole step — what a single process with
the global batch computes — also when the last step splits unevenly.

A parameter with a gradient on some ranks only (a branch not taken, a frozen table) counts as
zero on the others; one with a gradient on no rank stays absent, as in a single process. A
row-sparse gradient is made dense for the transfer.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.optim import GradientsParams
from ember.tensor.ops._core import wrap
from ember.tensor.sparse import is_row_sparse

from .communicator import Communicator

__all__ = ["DEFAULT_BUCKET_BYTES", "GradientAverager"]

DEFAULT_BUCKET_BYTES = 25 * 1024 * 1024


def _array_module(array: Any):
    if isinstance(array, np.ndarray):
        return np
    import cupy

    return cupy.get_array_module(array)


class GradientAverager:
    """Averages the gradients of every step across the ranks.

    Args:
        communicator: the run's communicator.
        bucket_bytes: the largest bucket sent in one all-reduce.
    """

    def __init__(self, communicator: Communicator, bucket_bytes: int = DEFAULT_BUCKET_BYTES):
        if int(bucket_bytes) < 1:
            raise ValueError(f"GradientAverager: bucket_bytes must be >= 1, got {bucket_bytes}")
        self.communicator = communicator
        self.bucket_bytes = int(bucket_bytes)
        self._checked_count: int | None = None

    def _trainable(self, model) -> list:
        params = [p for _, p in model.named_parameters() if p.is_require_grad()]
        if self._checked_count != len(params):  # once per model shape: every rank the same params
            counts = np.array([len(params), -len(params)], dtype=np.int64)
            self.communicator.allreduce_host(counts, "max")
            if counts[0] != -counts[1]:
                raise ValueError(
                    f"GradientAverager: rank {self.communicator.rank} trains {len(params)} parameters but the "
                    f"ranks range from {-counts[1]} to {counts[0]}; every rank must build the same model"
                )
            self._checked_count = len(params)
        return params

    def average(self, grads: GradientsParams, model, weight: float) -> GradientsParams:
        """The step's gradients averaged over the ranks.

        Args:
            grads: this rank's gradients (of the mean loss over its items).
            model: the module they belong to (the same on every rank).
            weight: this rank's share of the step's items (0 … 1; the shares sum to 1).

        Returns:
            New ``GradientsParams`` with the same keys on every rank.
        """
        params = self._trainable(model)
        present = np.array([1 if p.id in grads else 0 for p in params], dtype=np.int32)
        if present.size:
            self.communicator.allreduce_host(present, "sum")
        entries = []  # (param, gradient tensor or None)
        for param, anywhere in zip(params, present):
            if not anywhere:
                continue
            grad = grads.get(param.id)
            if grad is not None and is_row_sparse(grad):
                grad = grad.to_dense()
            entries.append((param, grad))
        buckets = self._buckets(entries)
        pending = [self._send(bucket, weight) for bucket in buckets]
        out = GradientsParams()
        for bucket, (buffer, request) in zip(buckets, pending):
            request.wait()
            offset = 0
            for param, _ in bucket:
                value = param.value
                n = int(np.prod(value.shape, dtype=np.int64))
                out.register(
                    param.id,
                    wrap(buffer[offset : offset + n].reshape(value.shape), value.device, value.dtype),
                )
                offset += n
        return out

    def _buckets(self, entries: list) -> list[list]:
        """Consecutive entries of one dtype, each bucket at most ``bucket_bytes`` (or one tensor)."""
        buckets: list[list] = []
        size, dtype = 0, None
        for param, grad in entries:
            value = param.value
            nbytes = int(np.prod(value.shape, dtype=np.int64)) * value.dtype.numpy.itemsize
            if not buckets or value.dtype != dtype or size + nbytes > self.bucket_bytes:
                buckets.append([])
                size, dtype = 0, value.dtype
            buckets[-1].append((param, grad))
            size += nbytes
        return buckets

    def _send(self, bucket: list, weight: float):
        first = bucket[0][0].value
        xp = _array_module(first._data)
        dtype = first.dtype.numpy
        total = sum(int(np.prod(p.value.shape, dtype=np.int64)) for p, _ in bucket)
        buffer = xp.empty(total, dtype=dtype)
        scale = dtype.type(weight)
        offset = 0
        for param, grad in bucket:
            n = int(np.prod(param.value.shape, dtype=np.int64))
            target = buffer[offset : offset + n]
            if grad is None:
                target[...] = 0
            else:
                xp.multiply(grad._data.reshape(-1), scale, out=target)
            offset += n
        return buffer, self.communicator.start_allreduce_sum(buffer)
