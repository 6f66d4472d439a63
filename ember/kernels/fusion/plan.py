"""What every backend's chain runner does alike: lay a fusion graph out as a list of steps,
find the intermediates that must be written, run a chain op by op, and keep compiled kernels
by the chain's relative signature.

A *step* is ``(op, refs, dtype)``: the op's name (``"unary:exp"``, ``"binary:add"``,
``"where"``, ``"cast:float32"``, ``"expand"``: its operand broadcast, the value unchanged), its
operands as refs (``("in", i)``: the ``i``-th computed array the chain reads; ``("step", j)``:
the value of an earlier step) and its NumPy dtype.
"""

from __future__ import annotations

import sys
import threading

from ember.core import dtypes as dt
from ember.kernels.fusion.engine import GEMM_OPS, settings
from ember.kernels.fusion.lazy import Lazy, pending_readers
from ember.kernels.fusion.log import LOG

__all__ = [
    "KernelCache",
    "eager_op",
    "held_elsewhere",
    "is_elementwise",
    "layout",
    "one_by_one",
    "pending_sources",
    "single_op",
]


def layout(root, keep=None, inline=None):
    """``(nodes, steps, inputs)``: the pending element-wise ops ``root`` depends on in dependency
    order (the root last), their steps, and the arrays they read. The pending reductions and
    matrix products among those are computed first (each by its own kernel) and read as arrays,
    except ``keep``: a pending product the caller computes as the chain runs (an input that is
    still a :class:`Lazy`), and the sources ``inline(source)`` accepts: those are laid out as
    steps, with the chains they read (a row program computes them). ``root`` may be a list of
    roots computed together (each after the ops it reads; the last one last)."""
    roots = root if isinstance(root, list) else [root]
    for source in [s for r in roots for s in pending_sources(r)]:
        if source is not keep and source.value is None and not (inline and inline(source)):
            source.realize()
    nodes, steps, inputs, index_of = [], [], [], {}
    if keep is not None:
        index_of[id(keep)] = ("in", 0)
        inputs.append(keep)
    stack = [(r, False) for r in reversed(roots)]
    while stack:
        node, expanded = stack.pop()
        if id(node) in index_of:
            continue
        pending = [a for a in node.args if type(a) is Lazy and a.value is None and id(a) not in index_of]
        if not expanded and pending:
            stack.append((node, True))
            stack.extend((a, False) for a in reversed(pending))
            continue
        refs = []
        for arg in node.args:
            if type(arg) is Lazy and arg.value is None:
                refs.append(index_of[id(arg)])
            else:
                array = arg.value if type(arg) is Lazy else arg
                key = ("in", id(array))
                if key not in index_of:
                    index_of[key] = ("in", len(inputs))
                    inputs.append(array)
                refs.append(index_of[key])
        index_of[id(node)] = ("step", len(steps))
        nodes.append(node)
        steps.append((node.op, tuple(refs), node.dtype))
    return nodes, steps, inputs


def is_elementwise(node: Lazy) -> bool:
    """Whether ``node`` is an element-wise op (not a reduction or a matrix product)."""
    return not node.op.startswith("reduce:") and node.op not in GEMM_OPS


def pending_sources(root: Lazy) -> list:
    """The pending reductions and matrix products the element-wise graph of ``root`` reads (not
    looking inside them)."""
    found, seen, stack = [], set(), [root]
    while stack:
        node = stack.pop()
        for arg in node.args:
            if type(arg) is Lazy and arg.value is None and id(arg) not in seen:
                seen.add(id(arg))
                (stack if is_elementwise(arg) else found).append(arg)
    return found


def held_elsewhere(nodes: list, steps: list, shape=None) -> list:
    """The positions of the intermediate ops that something outside the graph still holds — a
    tensor (saved for the backward pass, say) or another chain — and that the kernel writes
    too, so they are not computed again: those of ``shape`` (the root's by default; every
    shape with ``()``), except the element-wise ones :func:`_recomputed` leaves pending."""
    readers = [0] * len(nodes)
    for _, refs, _ in steps:
        for kind, j in refs:
            if kind == "step":
                readers[j] += 1
    shape = nodes[-1].shape if shape is None else shape
    held, outside = [], {}
    for j in range(len(nodes) - 1):
        # references: the readers' operand tuples, the list `nodes`, and getrefcount's argument
        refs = sys.getrefcount(nodes[j]) - readers[j] - 2
        if (shape == () or nodes[j].shape == shape) and refs > 0:
            held.append(j)
            outside[j] = refs
    position = {id(node): j for j, node in enumerate(nodes)}
    # the references pending values outside the graph hold (a forward output nothing has read)
    by_pending = pending_readers(position) if held else {}
    written: set = set()
    for j in held:
        if id(nodes[j]) in written:
            continue
        only_pending = outside[j] == by_pending.get(id(nodes[j]), 0)
        sources = _recomputed(nodes[j], written, position, only_pending)
        if sources and shape != () and any(nodes[k].shape != shape for k in sources):
            sources = None  # the kernel writes arrays of `shape` only
        if sources is None:
            written.add(id(nodes[j]))
        else:  # it stays pending; what it reads and cannot compute again is written
            written.update(id(nodes[k]) for k in sources)
    return sorted(position[i] for i in written)


REMAT_MAX_OPS = 32
"""The most pending ops a held intermediate may take to compute again (see :func:`_recomputed`)."""


def _recomputed(node: Lazy, written: set, position: dict, only_pending: bool = False):
    """Whether the held element-wise intermediate ``node`` stays pending instead of being
    written: the chain that reads it next computes it again from the arrays it reads
    (rematerialisation), which costs a few arithmetic ops where writing and reading it back
    costs two passes over memory. It does when it takes at most :data:`REMAT_MAX_OPS` ops, each
    exactly rounded (:data:`_EXACT_OPS`: computed again by another kernel, or op by op before
    that chain is compiled, it is the same value bit for bit; a ``tanh`` or an ``exp`` could
    differ in its last bit between two kernels), and the arrays it keeps alive meanwhile are at
    most its own size and an eighth (a norm's input and its per-row values): never much more
    memory than its value would take. Those arrays are the computed values it reads, the
    intermediates of this chain that are written (``written``: ids), and the pending values of
    this chain it reads that cannot be computed again (a row's sum), which are then written too.
    Returns the positions (in ``position``, by id) of those, or None when it is written itself.

    Held only by other pending values (``only_pending``: a forward chain's output that nothing
    has read, say ``x * sigmoid(x)`` inside a SwiGLU whose output the backward pass never needs),
    any element-wise op may be computed again: no one has seen its value, so no two values of it
    can differ, and it is computed at all only if those values are."""
    recomputable = is_elementwise if only_pending else _exact
    if not recomputable(node):
        return None
    budget = node.size * node.dtype.itemsize * 9 // 8
    held, ops, sources, seen, stack = 0, 0, [], set(), [node]
    while stack:
        n = stack.pop()
        ops += 1
        if ops > REMAT_MAX_OPS:
            return None
        for a in n.args:
            if a is None or id(a) in seen:
                continue
            seen.add(id(a))
            if type(a) is Lazy:
                if a.value is None and id(a) not in written:
                    if recomputable(a):
                        stack.append(a)
                        continue
                    if id(a) not in position:
                        return None  # a product the caller computes as the chain runs
                    sources.append(position[id(a)])
                held += a.size * a.dtype.itemsize
            else:
                held += a.nbytes
            if held > budget:
                return None
    return sources


def one_by_one(nodes: list, steps: list, inputs: list, backend):
    """The chain's ops run as they were recorded, each through the backend (eager execution);
    every intermediate is kept on its node."""
    values = []
    for node, (op, refs, dtype) in zip(nodes, steps):
        args = [inputs[j] if kind == "in" else values[j] for kind, j in refs]
        value = eager_op(op, args, dtype, backend, node.shape)
        values.append(value)
        if node is not nodes[-1]:
            node.settle(value)
    return values[-1]


def eager_op(op: str, args: list, dtype, backend, shape=None):
    """The element-wise ``op`` (a step's name) of computed ``args``, by the backend's own kernel
    (``shape``: the result's, which an ``expand`` needs)."""
    kind, _, name = op.partition(":")
    if kind == "expand":
        return backend.expand(args[0], shape)
    if kind == "unary":
        return backend.unary(name, *args)
    if kind == "binary":
        return backend.binary(name, *args)
    if kind == "where":
        return backend.where(*args)
    return backend.cast(args[0], dt.dtype_from_numpy(dtype))


# The ops whose result is exactly rounded (or exact) in every kernel: the backend's and a
# chain's agree bit for bit. The others (exp, tanh, pow...) are computed by each kernel's own
# approximation, so a value must not depend on whether its op ran alone or in a chain.
_EXACT_OPS = frozenset(
    {
        "unary:neg", "unary:abs", "unary:sign", "unary:sqrt", "unary:square", "unary:floor", "unary:ceil",
        "unary:round", "unary:relu", "unary:logical_not", "unary:isnan", "unary:isinf", "unary:isfinite",
        "binary:add", "binary:sub", "binary:mul", "binary:div", "binary:maximum", "binary:minimum",
        "binary:eq", "binary:ne", "binary:lt", "binary:le", "binary:gt", "binary:ge",
        "binary:logical_and", "binary:logical_or", "binary:logical_xor", "where",
        "cast:float32", "cast:float64",
    }
)  # fmt: skip


_RECOMPUTABLE_OPS = _EXACT_OPS | {"expand"}


def _exact(node: Lazy) -> bool:
    """Whether ``node`` gives the same value bit for bit in every kernel (see :func:`_recomputed`)."""
    return node.op in _RECOMPUTABLE_OPS


def single_op(root: Lazy) -> bool:
    """Whether ``root`` is a chain of one exactly rounded op (it reads only computed values):
    nothing can fuse with it, so the backend's own kernel runs it, without the planning a
    chain costs."""
    if root.op not in _EXACT_OPS:
        return False
    for arg in root.args:
        if type(arg) is Lazy and arg.value is None:
            return False
    return True


class KernelCache:
    """Compiled chain kernels by relative signature. A signature is compiled on its
    ``compile_after``-th sighting (``[fusion] compile_after``, 2 by default; before that,
    :meth:`lookup` gives None and the chain runs op by op), so a chain seen once — a test, a
    one-off expression — costs no compile, and a training step's chains compile on its second
    step. Counts ``hits`` (a cached plan reused), ``misses`` (a signature not compiled yet) and
    ``compiled``. ``backend`` names the runner's backend in the fusion log, whose events describe
    a kernel by the steps ``(op, refs, dtype name)`` its signature holds."""

    compile_after = None
    """Overrides the setting when set (tests)."""

    def __init__(self, backend: str | None = None):
        self.backend = backend
        self._kernels: dict = {}
        self._sightings: dict = {}
        self._lock = threading.Lock()
        self.stats = {"hits": 0, "misses": 0, "compiled": 0}

    def lookup(self, signature, build):
        """The kernel of ``signature`` (``build()`` makes it once seen often enough), or None."""
        fn = self._kernels.get(signature)
        if fn is not None:
            self.stats["hits"] += 1
            if LOG.medium:
                LOG.lookup("hit", signature, fn)
            return fn
        self.stats["misses"] += 1
        seen = self._sightings[signature] = self._sightings.get(signature, 0) + 1
        if LOG.medium:
            LOG.lookup("miss", signature, seen=seen)
        if seen < (self.compile_after or settings.compile_after):
            return None
        with self._lock:
            fn = self._kernels.get(signature)
            if fn is None:
                fn = build() if not LOG.basic else LOG.built(self.backend, signature, build)
                self._kernels[signature] = fn
                self.stats["compiled"] += 1
        return fn

    def __len__(self) -> int:
        return len(self._kernels)

    def kernels(self) -> list:
        """The compiled kernels, oldest first."""
        return list(self._kernels.values())
