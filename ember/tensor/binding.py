"""Tensor's methods meet the functions they call.

The op functions (``ember/tensor/ops/``) and the creation functions import ``Tensor``, so
``tensor.py`` and the generated ``op_methods.py`` cannot import them. This module, above all
of them, hands the functions over once they are loaded; ``ember/tensor/__init__.py`` imports
it, so it has run before any tensor is made.
"""

import inspect

from ember.tensor import creation, op_methods, tensor
from ember.tensor.ops import _core, elementwise, indexing, linalg, movement, nn, pointwise, reduction
from ember.tensor.sparse import RowSparse

_OP_MODULES = {
    "elementwise": elementwise,
    "indexing": indexing,
    "linalg": linalg,
    "movement": movement,
    "nn": nn,
    "pointwise": pointwise,
    "reduction": reduction,
    "tensor": tensor,
}
# the modules the generated methods call, as many as the op table's rows name
op_methods.bind_ops(**{name: _OP_MODULES[name] for name in inspect.signature(op_methods.bind_ops).parameters})
tensor.bind_ops(
    _binary=elementwise.binary,
    _cast=elementwise.cast,
    _clamp=elementwise.clamp,
    _from_numpy=creation.from_numpy,
    _index_put=indexing.index_put,
    _permute=movement.permute,
    _record=_core.record,
    _RowSparse=RowSparse,
    _unary=elementwise.unary,
    _where=elementwise.where,
    _wrap=_core.wrap,
)
