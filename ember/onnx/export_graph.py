"""The ONNX graph an export builds: nodes, initializers, and numbers computed from input shapes."""

from __future__ import annotations

import numpy as np

from ember.onnx.export_dims import Dim, Expr, SymInt, solve


class ExportError(ValueError):
    """A forward that cannot be exported; the message names the op and the module path."""


class GraphBuilder:
    """Collects ONNX nodes and initializers; ``names`` maps each traced value to its ONNX name."""

    def __init__(self, onnx, opset: int, dims: list[Dim], input_names: list[str], meta: dict):
        self.onnx = onnx
        self.meta = meta  # traced value -> (shape, dtype) in the example's run
        self.opset = opset
        self.dims = dims
        self.input_names = input_names
        self.nodes: list = []
        self.initializers: dict[str, np.ndarray] = {}
        self.names: dict = {}
        self._count = 0
        self._cache: dict = {}
        self.where = ""  # the op and module being emitted, for error messages

    # ---- names and nodes ----------------------------------------------------------------------
    def fresh(self, hint: str) -> str:
        self._count += 1
        return f"{hint}_{self._count}"

    def node(self, op_type: str, inputs: list, outputs: int = 1, **attrs):
        """Append a node; returns its output name (or names when ``outputs`` > 1)."""
        outs = [self.fresh(op_type) for _ in range(outputs)]
        self.nodes.append(self.onnx.helper.make_node(op_type, list(inputs), outs, **attrs))
        return outs[0] if outputs == 1 else outs

    def const(self, value, dtype=None) -> str:
        """A ``Constant`` node holding ``value`` (deduplicated for small arrays). Constants the
        export makes are nodes, not initializers, so that the initializers are the model's
        own tensors: a loader that trains initializers never trains a scale or a shape."""
        arr = np.asarray(value, dtype=dtype)
        key = None
        if arr.size <= 64:
            key = ("const", arr.dtype.str, arr.shape, arr.tobytes())
            if key in self._cache:
                return self._cache[key]
        name = self.fresh("const")
        tensor = self.onnx.numpy_helper.from_array(np.array(arr, order="C"), name)
        self.nodes.append(self.onnx.helper.make_node("Constant", [], [name], value=tensor))
        if key is not None:
            self._cache[key] = name
        return name

    # ---- numbers from shapes ------------------------------------------------------------------
    def expr(self, value) -> Expr | int:
        """``value`` as an int, or as an expression over dynamic dims (a :class:`SymInt`)."""
        if not isinstance(value, SymInt):
            return value
        found = solve(value, self.dims)
        if found is None:
            raise ExportError(
                f"{self.where}: the number {value.values[0]} changes with the dynamic axes "
                f"({value.values[1]} when they are resized) in a way ember cannot express from "
                f"the inputs' dims ({', '.join(d.name for d in self.dims)}); compute it from "
                f"tensor ops, or export without these dynamic axes"
            )
        return found

    def scalar_int(self, value) -> str:
        """An int64 scalar: a constant, or computed from the inputs' shapes."""
        e = self.expr(value)
        if not isinstance(e, Expr):
            return self.const(np.int64(e))
        key = ("expr", e)
        if key in self._cache:
            return self._cache[key]
        out = None
        for name in e.dims:
            d = next(d for d in self.dims if d.name == name)
            shape = self._shape_of_input(d.input)
            size = self.node("Gather", [shape, self.const(np.int64(d.axis))], axis=0)
            out = size if out is None else self.node("Mul", [out, size])
        if e.coef != 1:
            out = self.node("Mul", [out, self.const(np.int64(e.coef))])
        if e.offset:
            out = self.node("Add", [out, self.const(np.int64(e.offset))])
        self._cache[key] = out
        return out

    def _shape_of_input(self, index: int) -> str:
        key = ("shape", index)
        if key not in self._cache:
            self._cache[key] = self.node("Shape", [self.input_names[index]])
        return self._cache[key]

    def is_dynamic(self, values) -> bool:
        return any(isinstance(v, SymInt) for v in values)

    def ints(self, values, unsolved=None) -> str:
        """A 1-D int64 tensor of ``values`` (ints and :class:`SymInt`). ``unsolved``: what to
        put for the one value no expression gives (a reshape's -1), or None to raise."""
        values = list(values)
        if not self.is_dynamic(values):
            return self.const(np.array(values, dtype=np.int64).reshape(len(values)))
        parts = []
        used_unsolved = False
        for v in values:
            if isinstance(v, SymInt) and unsolved is not None and solve(v, self.dims) is None:
                if used_unsolved:
                    self.expr(v)  # raises, naming the number
                used_unsolved = True
                parts.append(self.const(np.array([unsolved], dtype=np.int64)))
            elif isinstance(v, SymInt):
                key = ("vector", self.expr(v))
                if key not in self._cache:
                    self._cache[key] = self.node("Unsqueeze", [self.scalar_int(v), self.const(np.array([0]))])
                parts.append(self._cache[key])
            else:
                parts.append(self.const(np.array([v], dtype=np.int64)))
        return self.node("Concat", parts, axis=0)

    def scalar_value(self, value, np_dtype) -> str:
        """A 0-d tensor of ``np_dtype``: a constant, or a dynamic number cast to it."""
        if not isinstance(value, SymInt):
            return self.const(np.array(value, dtype=np_dtype))
        out = self.scalar_int(value)
        if np.dtype(np_dtype) != np.int64:
            out = self.node("Cast", [out], to=self.onnx_type(np_dtype))
        return out

    def onnx_type(self, np_dtype) -> int:
        return self.onnx.helper.np_dtype_to_tensor_dtype(np.dtype(np_dtype))

    # ---- traced values ------------------------------------------------------------------------
    def value(self, ref) -> str:
        """The ONNX name of a traced value (an initializer for a param or constant)."""
        name = self.names.get(ref)
        if name is None:
            raise ExportError(
                f"{self.where}: reads a result ({ref.kind} {ref.key}) that ONNX export does not give"
            )
        return name

    def shape(self, ref) -> tuple:
        return self.meta[ref][0]

    def dtype(self, ref) -> np.dtype:
        return self.meta[ref][1]

    def unsupported(self, what: str) -> ExportError:
        return ExportError(f"{self.where}: cannot be exported to ONNX: {what}")
