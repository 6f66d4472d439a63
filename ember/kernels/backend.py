"""The backend contract.

A backend computes on its own arrays (NumPy arrays for ``reference`` and ``cpu``, CuPy arrays
for ``cuda``). ``Tensor`` wraps one array; no other layer touches raw arrays except through a
backend. A backend is a subclass of :class:`Backend`, which joins the op families of
:mod:`ember.kernels.families`, one class per family, each method declared and documented once:

========================  ======================================================================
family                    methods
========================  ======================================================================
creation and transfer     :class:`~ember.kernels.families.creation.CreationOps`: primitives
element-wise              :class:`~ember.kernels.families.elementwise.ElementwiseOps`: primitives
reduction                 :class:`~ember.kernels.families.reduction.ReductionOps`: primitives
movement and indexing     :class:`~ember.kernels.families.movement.MovementOps`: primitives
linear algebra            :class:`~ember.kernels.families.linalg.LinalgOps`: ``matmul``; ``linear``
activations               :class:`~ember.kernels.families.activation.ActivationOps`: composites
normalisation             :class:`~ember.kernels.families.norm.NormOps`: composites
losses                    :class:`~ember.kernels.families.loss.LossOps`: composites
embeddings                :class:`~ember.kernels.families.embedding.EmbeddingOps`: composites
dropout                   :class:`~ember.kernels.families.dropout.DropoutOps`: ``dropout_keep_mask``; composites
attention                 :class:`~ember.kernels.families.attention.AttentionOps`: composites
optimizer updates         :class:`~ember.kernels.families.optimizer.OptimizerOps`: composites
========================  ======================================================================

A *primitive* (``@primitive``) every backend implements. A *composite* (``@composite``) has a
default composed from primitives, which is the behaviour every backend must give; a backend
overrides it with a fused kernel marked ``@fused`` (:mod:`ember.kernels.families.declare`),
which must agree with the ``reference`` backend on the conformance suite.

Fused overrides fall back, never raise, outside their limits: a fused kernel that cannot
take some input the composed default takes (a head dimension, zero keys, an empty axis, a
dtype, a memory layout, a size past its int32 arguments or launch grid) returns ``DECLINED``,
and the family's default runs instead, with float16 computed in float32 as below — so that
every backend accepts what ``reference`` accepts and gives what it gives.
The forward and the backward of a composite decide from the same inputs (shapes, dtypes,
scalar arguments), so a forward that fell back is differentiated by the composed backward.
Only input the reference rejects too (and the tensor layer, which validates shapes, dtypes
and index ranges, normally rejects first) may raise, with the same error class.

Conventions for every method: inputs are never modified; outputs are new arrays; ``dtype``
arguments are :class:`ember.core.dtypes.DType`; axes are non-negative ints already
normalised by the tensor layer, which also validates shapes, dtypes and index ranges.

float16: the composites declared with ``half=`` compute half-precision inputs in float32 and
return float16, with their saved statistics (mean, rstd, lse) in float32, on every backend. A fused kernel may keep a statistic wider
than that (the cpu and cuda attention keep lse in float64 for their backward); the
backward of the same backend is its only reader. An empty normalised axis gives an empty
result (the lse of an empty row is -inf), never an error.
"""

from __future__ import annotations

import inspect

from ember.core import dtypes as dt
from ember.kernels.families.activation import ActivationOps
from ember.kernels.families.attention import ATTN_MASK_VALUE, AttentionOps
from ember.kernels.families.creation import CreationOps
from ember.kernels.families.declare import COMPOSITES, DECLINED, PRIMITIVE_NAMES, fused, fused_call, primitive
from ember.kernels.families.dropout import DropoutOps
from ember.kernels.families.elementwise import BINARY_OPS, UNARY_OPS, ElementwiseOps
from ember.kernels.families.embedding import EmbeddingOps
from ember.kernels.families.linalg import LinalgOps
from ember.kernels.families.loss import LossOps
from ember.kernels.families.movement import MovementOps
from ember.kernels.families.norm import NormOps
from ember.kernels.families.optimizer import OptimizerOps
from ember.kernels.families.reduction import REDUCE_OPS, ReductionOps

__all__ = [
    "ATTN_MASK_VALUE",
    "BINARY_OPS",
    "COMPOSITE_NAMES",
    "DECLINED",
    "PRIMITIVES",
    "REDUCE_OPS",
    "UNARY_OPS",
    "Backend",
    "contract_violations",
    "fused",
    "fused_call",
    "primitive",
]

FAMILIES = (
    CreationOps,
    ElementwiseOps,
    ReductionOps,
    MovementOps,
    LinalgOps,
    ActivationOps,
    NormOps,
    LossOps,
    EmbeddingOps,
    DropoutOps,
    AttentionOps,
    OptimizerOps,
)
"""The op families, in the order of the table above."""

PRIMITIVES = tuple(PRIMITIVE_NAMES)
"""Every primitive's name: each backend implements them all."""

COMPOSITE_NAMES = tuple(COMPOSITES)
"""Every composite's name: a backend may override these, and only these, with ``@fused``."""


class Backend(*FAMILIES):
    """The contract: every op family joined. A backend subclasses it (or
    :class:`~ember.kernels.reference.ArrayBackend`, which implements the primitives with a
    NumPy-compatible array module), implements the primitives and overrides with ``@fused``
    the composites it fuses."""

    name = "abstract"

    def kernels_ready(self, array, kernel: str | None = None) -> bool:
        """Whether this backend's fused kernel ``kernel`` (a composite's name; ``None``: every
        kernel) for ``array``'s dtype can run now (the ``cpu`` backend compiles them in the
        background on first use; until then the defaults run)."""
        return True

    def chain_runner(self):
        """The function that computes a fusion graph on this backend
        (:mod:`ember.kernels.fusion`), or None when the backend runs every op as it comes."""
        return None

    def dtype_of(self, x) -> dt.DType:
        """The :class:`~ember.core.dtypes.DType` of one of this backend's arrays."""
        return dt.dtype_from_numpy(x.dtype)

    def _scalar(self, value, like):
        return self.full((), value, self.dtype_of(like))


_SERVICES = frozenset(
    name for name in vars(Backend) if not name.startswith("_") and callable(vars(Backend)[name])
)


def contract_violations(cls) -> list[str]:
    """What keeps backend class ``cls`` from meeting the contract, one line each (empty: it
    meets it): a primitive not implemented, a composite overridden without ``@fused``, a
    ``@fused`` method whose parameters differ from its composite's, a public method the contract
    does not declare, or attribute resolution through ``__getattr__``."""
    problems = []
    own = [k for k in cls.__mro__ if k not in Backend.__mro__]
    for name in PRIMITIVES:
        if getattr(getattr(cls, name, None), "contract_role", None) == "primitive":
            problems.append(f"{cls.__name__} does not implement the primitive {name!r}")
    for klass in own:
        for name, attr in vars(klass).items():
            if name == "__getattr__":
                problems.append(f"{klass.__name__} resolves attributes through __getattr__")
            if name.startswith("_") or not callable(attr):
                continue
            role = getattr(attr, "contract_role", None)
            if name in COMPOSITES:
                if role != "fused":
                    problems.append(f"{klass.__name__}.{name} overrides a composite without @fused")
                elif _parameters(attr.kernel) != _parameters(COMPOSITES[name]):
                    problems.append(
                        f"{klass.__name__}.{name} takes {_parameters(attr.kernel)}, "
                        f"the contract {_parameters(COMPOSITES[name])}"
                    )
            elif name not in PRIMITIVES and name not in _SERVICES:
                problems.append(f"{klass.__name__}.{name} is not a method of the backend contract")
    return problems


def _parameters(function) -> tuple[str, ...]:
    return tuple(inspect.signature(inspect.unwrap(function)).parameters)
