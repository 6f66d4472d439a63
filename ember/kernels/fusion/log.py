"""The fusion log: what the engine decided, one JSON object per line (``jq`` reads it).

``[fusion] logger`` in ``ember.toml`` (``logger = { file = "/tmp/fusion.log", level = "full" }``
or ``{ stderr = true }``), or ``EMBER_FUSION_LOG=stderr|PATH`` with ``EMBER_FUSION_LOG_LEVEL``,
turns it on. Each level adds events to the one before:

* ``basic``: each kernel compiled (or loaded from Numba's disk cache), ``{"event": "compile",
  "backend", "kernel", "signature", "ops", "dtypes", "inputs", "outputs", "rank", "compile_s",
  "disk_cache"}``;
* ``medium``: each plan-cache look-up, ``{"event": "hit" | "miss", "signature", "ops", ...}``,
  and each flush, ``{"event": "flush", "cause", "pending", "shape", "dtype"}``: the cause is
  what needed the value (``Tensor.numpy``, ``Tensor.item``, ``Tensor.__repr__``, ``backward``,
  ``optimizer step``, ``depth limit``, or the ember function that called a backend op the
  engine does not fuse: ``matmul``, ``sum``...);
* ``full``: each op recorded, ``{"event": "record", "op", "shape", "dtype", "depth"}``, and each
  op the engine ran at once, ``{"event": "eager", "op", "reason"}``.

The hooks test :data:`LOG`'s ``basic`` / ``medium`` / ``full`` booleans, so an op costs one
attribute read when the log is off; the configuration is read on the first test, not at
``import ember``. Events are built only when their level is on (the cause of a flush walks the
Python stack). The file is opened once, appended to and line-buffered; a write that fails
warns once and turns the log off: the log never stops a computation.
"""

from __future__ import annotations

import hashlib
import os
import sys
import threading
import time

from ember.kernels.event_log import EventLog

__all__ = ["LEVELS", "LOG", "FusionLog", "configure", "reset"]

LEVELS = ("disabled", "basic", "medium", "full")

_FUSION_DIR = os.path.dirname(os.path.abspath(__file__))
_KERNELS_DIR = os.path.dirname(_FUSION_DIR)
_TENSOR_DIR = os.path.join(os.path.dirname(_KERNELS_DIR), "tensor")
_TENSOR_FILE = os.path.join(_TENSOR_DIR, "tensor.py")
_BACKWARD_FILE = os.path.join(_TENSOR_DIR, "backward.py")


class FusionLog(EventLog):
    """Where the events go and which are written. ``basic``, ``medium`` and ``full`` say
    whether that level's events are on; they are set from ``[fusion] logger`` on first read."""

    what = "fusion log"
    setting = "fusion.logger"
    levels = LEVELS

    # ---- the events ----------------------------------------------------------------------
    def record(self, node) -> None:
        """``full``: ``node`` (a :class:`~.lazy.Lazy`) was recorded."""
        self.write(
            {
                "event": "record",
                "op": node.op,
                "shape": node.shape,
                "dtype": _name(node.dtype),
                "depth": node.depth,
            }
        )

    def eager(self, op: str, reason: str) -> None:
        """``full``: ``op`` ran at once, for ``reason``."""
        self.write({"event": "eager", "op": op, "reason": reason})

    def flush(self, root) -> None:
        """``medium``: ``root`` (a pending :class:`~.lazy.Lazy`) is being computed; the cause
        is read from the Python stack above ``Lazy.realize``. A value computed within another
        flush (a reduction a chain reads) is part of that flush, not one of its own."""
        entry = self.flush_entry(root, sys._getframe(2))
        if entry is not None:
            self.write(entry)

    def flush_entry(self, root, frame) -> dict | None:
        """The ``flush`` event of ``root`` needed by the code of ``frame`` and above (a group
        of roots computed together adds ``"roots"``); None within another flush."""
        cause = _cause(frame)
        if cause is None:
            return None
        return {
            "event": "flush",
            "cause": cause,
            "pending": _pending(root),
            "shape": root.shape,
            "dtype": _name(root.dtype),
        }

    def lookup(self, event: str, signature, fn=None, seen: int | None = None) -> None:
        """``medium``: a plan-cache ``"hit"`` (``fn`` the kernel) or ``"miss"`` (``seen``: the
        sightings of the signature so far)."""
        entry = {"event": event, "signature": _digest(signature), "ops": len(_ops(signature)[0])}
        if fn is not None:
            entry["kernel"] = _kernel_name(fn)
        if seen is not None:
            entry["seen"] = seen
        self.write(entry)

    def built(self, backend: str, signature, build):
        """``basic``: ``build()``, the kernel of ``signature``, watched so that the calls that
        compile it (Numba compiles on a call, once per argument layout) are logged."""
        start = time.perf_counter()
        fn = build()
        if getattr(fn, "signatures", None) is None:  # compiled by build() itself
            self._compiled(backend, signature, fn, time.perf_counter() - start, (), False)
            return fn
        return _Watched(fn, backend, signature)

    def _compiled(self, backend, signature, fn, seconds, args, from_disk) -> None:
        ops, dtypes, inputs = _ops(signature)
        names = _parameters(fn)
        self.write(
            {
                "event": "compile",
                "backend": backend,
                "kernel": _kernel_name(fn),
                "signature": _digest(signature),
                "ops": ops,
                "dtypes": dtypes,
                "inputs": inputs,
                "outputs": sum(1 for n in names if n == "red" or n.startswith("out")) if names else None,
                "rank": max((getattr(a, "ndim", 0) for a in args), default=None),
                "compile_s": round(seconds, 4),
                "disk_cache": from_disk,
            }
        )


class _Watched:
    """A Numba kernel whose calls that compile a new specialisation (or load it from the disk
    cache) are logged, with the time the call took."""

    def __init__(self, fn, backend: str, signature):
        self.fn = fn
        self.backend = backend
        self.signature = signature
        self.known = len(fn.signatures)
        self.lock = threading.Lock()

    def __call__(self, *args):
        fn = self.fn
        if not LOG.basic:
            return fn(*args)
        hits = _disk_hits(fn)
        start = time.perf_counter()
        result = fn(*args)
        seconds = time.perf_counter() - start
        with self.lock:  # threads that waited for the same compile log it once
            grew, self.known = len(fn.signatures) > self.known, max(self.known, len(fn.signatures))
        if grew:
            LOG._compiled(self.backend, self.signature, fn, seconds, args, _disk_hits(fn) > hits)
        return result

    def __getattr__(self, name):  # the dispatcher's stats, signatures, py_func...
        if name == "fn":
            raise AttributeError(name)
        return getattr(self.fn, name)


def _disk_hits(fn) -> int:
    stats = getattr(fn, "stats", None)
    return sum(stats.cache_hits.values()) if stats is not None else 0


def _name(dtype) -> str:
    return getattr(dtype, "name", str(dtype))


def _kernel_name(fn) -> str:
    """The generated module a kernel lives in (its file under the kernel cache directory)."""
    fn = fn.fn if isinstance(fn, _Watched) else fn
    return getattr(fn, "__module__", None) or getattr(fn, "__name__", type(fn).__name__)


def _parameters(fn) -> tuple:
    fn = fn.fn if isinstance(fn, _Watched) else fn
    code = getattr(getattr(fn, "py_func", None), "__code__", None)
    return code.co_varnames[: code.co_argcount] if code is not None else ()


def _digest(signature) -> str:
    """A short name of a signature that is the same in every process."""
    return hashlib.sha256(repr(signature).encode()).hexdigest()[:12]


def _is_steps(item) -> bool:
    return (
        isinstance(item, tuple)
        and len(item) > 0
        and all(isinstance(s, tuple) and len(s) == 3 and isinstance(s[0], str) for s in item)
    )


def _ops(signature) -> tuple[list, list, int]:
    """``(ops, dtypes, inputs)`` of a signature: the steps ``(op, refs, dtype name)`` it holds
    (:mod:`.plan`), then, for a kernel that ends in a pattern of its own (a reduction:
    ``("reduce", "sum", ...)``), that pattern as a last op; and how many inputs the steps read."""
    items = signature if isinstance(signature, tuple) else ()
    steps = next((item for item in items if _is_steps(item)), ())
    ops = [s[0] for s in steps]
    dtypes = [s[2] for s in steps]
    head = []
    for item in items:
        if not isinstance(item, str):
            break
        head.append(item)
    if head:
        ops.append(":".join(head))
        dtypes.append(dtypes[-1] if dtypes else None)
    inputs = {j for _, refs, _ in steps for kind, j in refs if kind == "in"}
    return ops, dtypes, len(inputs)


def _pending(root) -> int:
    """How many values the flush of ``root`` computes: the pending ops it depends on."""
    lazy = type(root)
    seen, stack = set(), [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.extend(a for a in node.args if type(a) is lazy and a.value is None)
    return len(seen)


def _in_machinery(path: str) -> bool:
    """Whether a frame's file is the engine or a chain runner (``kernels/<backend>/fused_*``)."""
    return path.startswith(_FUSION_DIR) or (
        path.startswith(_KERNELS_DIR) and os.path.basename(path).startswith("fused_")
    )


def _qualname(frame) -> str:
    code = frame.f_code
    return getattr(code, "co_qualname", code.co_name)  # co_qualname: Python 3.11+


def _cause(frame) -> str | None:
    """What needed a value, from the frames above ``Lazy.realize``; None within another flush
    (a ``Lazy.realize`` further up). Else ``"depth limit"`` (the
    engine's ``_record``), the cause :func:`~.lazy.flush_all` was given (``"optimizer step"``),
    ``"backward"`` (anything under :func:`ember.tensor.backward.backward`), the op the engine was
    asked for and does not fuse (``"sum"``, ``"floor_divide"``...), or else the first ember
    function above the engine and ``Tensor._data`` (the outermost of ``Tensor``'s own methods
    calling each other: ``Tensor.item`` calls ``Tensor.numpy``)."""
    op = None
    f = frame
    while f is not None:
        code = f.f_code
        path = code.co_filename
        if _in_machinery(path):
            if code.co_name == "realize" and "self" in f.f_locals:  # Lazy.realize, not realize(x)
                return None
            if code.co_name == "_record":
                return "depth limit"
            if code.co_name == "flush_all" and f.f_locals.get("cause"):
                return f.f_locals["cause"]
            if op is None and path.startswith(_FUSION_DIR) and code.co_name in _ENGINE_ENTRIES:
                op = f.f_locals.get("op") if code.co_name in ("unary", "binary", "reduce") else code.co_name
        elif not (path == _TENSOR_FILE and code.co_name == "_data"):
            break
        f = f.f_back
    if op is None and f is not None and f.f_code.co_filename == _TENSOR_FILE:
        while f.f_back is not None and f.f_back.f_code.co_filename == _TENSOR_FILE:
            f = f.f_back
    named = op or (_qualname(f) if f is not None else "unknown")
    while f is not None:
        if f.f_code.co_filename == _BACKWARD_FILE:
            return "backward"
        f = f.f_back
    return named


_ENGINE_ENTRIES = frozenset({"unary", "binary", "reduce", "where", "cast"})


LOG = FusionLog()
"""The fusion log of this process."""


def configure(level: str, file=None, stderr: bool = False) -> None:
    """Log to ``file`` or standard error up to ``level`` (see :meth:`FusionLog.configure`)."""
    LOG.configure(level, file, stderr)


def reset() -> None:
    """Close the log; ``[fusion] logger`` is read again on the next event."""
    LOG.reset()
