"""Row-sparse gradients: the rows of a 2-D table that a batch touched, and nothing else.

``ember.embedding_bag(..., sparse=True)`` (and ``nn.EmbeddingBag`` with ``sparse=True``)
gives its table a :class:`RowSparse` gradient instead of a dense ``[n, d]`` tensor, so a
step on a 500,000-row table costs what the batch touched. The object flows through the
whole gradient path:

* ``loss.backward()`` returns it in :class:`ember.Gradients` (``grads.get(weight)``); when
  the table also gets a dense gradient (it is used by another op too), the two are added
  into one dense tensor. A sparse gradient that reaches a non-leaf node (a LoRA-adapted
  weight, say) is made dense there; casts and device moves keep it sparse.
* ``GradientsParams``, ``GradientsAccumulator`` (sums stay sparse), gradient clipping
  (by value on the values; by norm with the norm of the values, equal to the dense norm),
  ``MixedPrecision`` and the optimizers accept it; see each optimizer's docstring for its
  semantics (SGD exact / lazy, Adam and AdamW lazy as ``torch.optim.SparseAdam``, the
  others densify).

Invariants: ``indices`` is an int64 ``[K]`` tensor, strictly increasing (unique, sorted),
with values in ``[0, shape[0])``; ``values`` is a float ``[K, d]`` tensor on the same
device; ``shape == (n, d)``. The implicit rows are zeros.
"""

from __future__ import annotations

import numbers

from ember.core import dtypes as dt
from ember.tensor.ops._core import Tensor, shape_str, wrap
from ember.tensor.ops.indexing import check_index_range

__all__ = ["RowSparse", "add_grads", "is_row_sparse"]


def is_row_sparse(x) -> bool:
    """Whether ``x`` is a :class:`RowSparse` gradient."""
    return type(x) is RowSparse


class RowSparse:
    """A 2-D tensor whose non-zero rows are listed: ``dense[indices[k]] = values[k]``.

    Construct it from rows that may repeat and come in any order; they are coalesced
    (sorted, duplicates summed) by the backend's ``coalesce_rows`` composite.

    Args:
        indices: int tensor ``[K]`` of row numbers in ``[0, shape[0])``.
        values: float tensor ``[K, d]`` on the same device.
        shape: ``(n, d)``, the dense shape.
    """

    __slots__ = ("indices", "shape", "values")

    def __init__(self, indices: Tensor, values: Tensor, shape):
        op = "RowSparse"
        if not isinstance(indices, Tensor) or not indices.dtype.is_int or indices.ndim != 1:
            raise TypeError(f"{op}: indices must be a 1-D int tensor, got {_described(indices)}")
        if not isinstance(values, Tensor) or not values.dtype.is_float or values.ndim != 2:
            raise TypeError(f"{op}: values must be a 2-D float tensor [K, d], got {_described(values)}")
        shape = tuple(int(s) for s in shape)
        if len(shape) != 2 or values.shape != (indices.shape[0], shape[1]):
            raise ValueError(
                f"{op}: indices {shape_str(indices.shape)} and values {shape_str(values.shape)} "
                f"do not describe rows of a {shape_str(shape)} tensor (expected values [K, {shape[-1]}])"
            )
        if indices.device != values.device:
            raise RuntimeError(f"{op}: indices are on {indices.device} but values on {values.device}")
        check_index_range(op, indices, shape[0], "row index")
        b = values.device.backend
        rows, vals = b.coalesce_rows(b.cast(indices._data, dt.int64), values._data)
        self.indices = wrap(rows, values.device, dt.int64)
        self.values = wrap(vals, values.device, values.dtype)
        self.shape = shape

    @classmethod
    def _trusted(cls, indices, values, shape) -> "RowSparse":
        """Build from arrays that already satisfy the invariants (backend outputs)."""
        out = object.__new__(cls)
        out.indices, out.values, out.shape = indices, values, tuple(shape)
        return out

    # ---- properties -----------------------------------------------------------------------
    @property
    def dtype(self) -> dt.DType:
        return self.values.dtype

    @property
    def device(self):
        return self.values.device

    @property
    def ndim(self) -> int:
        return 2

    @property
    def nnz(self) -> int:
        """Number of stored rows K."""
        return self.indices.shape[0]

    @property
    def is_sparse(self) -> bool:
        return True

    @property
    def requires_grad(self) -> bool:
        return False

    # ---- conversion -----------------------------------------------------------------------
    def to_dense(self) -> Tensor:
        """The dense ``[n, d]`` tensor (allocates the whole table)."""
        b = self.device.backend
        return wrap(
            b.rows_to_dense(self.indices._data, self.values._data, self.shape[0]), self.device, self.dtype
        )

    def numpy(self):
        """The dense values as a NumPy array (allocates the whole table)."""
        return self.to_dense().numpy()

    def __array__(self, dtype=None, copy=None):
        arr = self.numpy()
        return arr.astype(dtype) if dtype is not None else arr

    def to(self, target, dtype=None) -> "RowSparse":
        """Move the rows to a device and/or cast the values, as ``Tensor.to``."""
        values = self.values.to(target, dtype)
        indices = self.indices if values.device == self.indices.device else self.indices.to(values.device)
        if values is self.values and indices is self.indices:
            return self
        return RowSparse._trusted(indices.detach(), values.detach(), self.shape)

    def float(self) -> "RowSparse":
        return self.to(dt.float32)

    def double(self) -> "RowSparse":
        return self.to(dt.float64)

    def half(self) -> "RowSparse":
        return self.to(dt.float16)

    def detach(self) -> "RowSparse":
        return RowSparse._trusted(self.indices.detach(), self.values.detach(), self.shape)

    def clone(self) -> "RowSparse":
        return RowSparse._trusted(self.indices.detach(), self.values.detach().clone(), self.shape)

    def coalesce(self) -> "RowSparse":
        """Itself: a RowSparse is always coalesced."""
        return self

    # ---- arithmetic -----------------------------------------------------------------------
    def __add__(self, other):
        """``sparse + sparse`` -> RowSparse (rows united, shared rows summed);
        ``sparse + dense`` -> dense Tensor."""
        if type(other) is RowSparse:
            _check_shapes("add", self, other)
            if other.device != self.device:
                other = other.to(self.device)
            b = self.device.backend
            rows = b.cat([self.indices._data, other.indices._data], 0)
            vals = b.cat([self.values._data, b.cast(other.values._data, self.dtype)], 0)
            rows, vals = b.coalesce_rows(rows, vals)
            return RowSparse._trusted(
                wrap(rows, self.device, dt.int64), wrap(vals, self.device, self.dtype), self.shape
            )
        if isinstance(other, Tensor):
            _check_shapes("add", self, other)
            if other.device != self.device:
                other = other.to(self.device)
            b = self.device.backend
            values = self.values if self.values.dtype is other.dtype else self.values.to(other.dtype)
            return wrap(
                b.rows_add_dense(other._data, self.indices._data, values._data), other.device, other.dtype
            )
        if isinstance(other, numbers.Number) and other == 0:
            return self
        return NotImplemented

    __radd__ = __add__

    def _scaled(self, value) -> "RowSparse":
        return RowSparse._trusted(self.indices, (self.values * value).detach(), self.shape)

    def __mul__(self, other):
        if isinstance(other, numbers.Number) and not isinstance(other, bool):
            return self._scaled(other)
        return NotImplemented

    __rmul__ = __mul__

    def __truediv__(self, other):
        if isinstance(other, numbers.Number) and not isinstance(other, bool):
            return self._scaled(1.0 / other)
        return NotImplemented

    def __neg__(self) -> "RowSparse":
        return self._scaled(-1.0)

    def isfinite(self) -> Tensor:
        """Element-wise finiteness of the stored values (the implicit zeros are finite)."""
        return self.values.isfinite()

    def norm(self) -> float:
        """The L2 norm, equal to the dense tensor's (rows are unique)."""
        return float(self.values.double().square().sum().sqrt().item())

    def __repr__(self) -> str:
        return (
            f"RowSparse(shape={list(self.shape)}, nnz={self.nnz}, dtype={self.dtype}, device={self.device})"
        )


def _described(value) -> str:
    """What an argument is, for an error: a tensor's dtype and shape, else its type."""
    if isinstance(value, Tensor):
        return f"{value.dtype} {shape_str(value.shape)}"
    return type(value).__name__


def _check_shapes(op: str, a, b) -> None:
    if tuple(a.shape) != tuple(b.shape):
        raise ValueError(
            f"RowSparse.{op}: shapes {shape_str(a.shape)} and {shape_str(b.shape)} differ "
            f"(sparse gradients add only to tensors of their own shape)"
        )


def add_grads(a, b):
    """``a + b`` for gradients that may each be a Tensor or a :class:`RowSparse`."""
    if type(b) is RowSparse and type(a) is not RowSparse:
        return b + a
    return a + b
