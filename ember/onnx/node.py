"""One ONNX node as the importer keeps it: its op, tensor names, decoded attributes and the
ember implementation chosen for its op version (see ``ember.onnx.import_ops``)."""

from __future__ import annotations

from ember.onnx.errors import OnnxImportError

__all__ = ["OnnxNode"]


class OnnxNode:
    """A graph node ready to run.

    Args:
        op_type: the ONNX op (``"Gemm"``).
        name: the node's name (its first output's name when the file leaves it empty).
        inputs: input value names; ``""`` marks an omitted optional input.
        outputs: output value names.
        attrs: attribute values as Python/NumPy values.
        spec: the implementation (an ``ember.onnx.import_ops.OpSpec``).
    """

    __slots__ = ("attrs", "inputs", "name", "op_type", "outputs", "spec")

    def __init__(self, op_type: str, name: str, inputs: list, outputs: list, attrs: dict, spec):
        self.op_type = op_type
        self.name = name
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.attrs = attrs
        self.spec = spec

    def attr(self, name: str, default=None):
        """The attribute ``name``, or ``default`` when the node does not set it."""
        return self.attrs.get(name, default)

    def fail(self, message: str) -> OnnxImportError:
        """An error naming this node; ``raise node.fail("...")``."""
        return OnnxImportError(f"ONNX {self.op_type} node {self.name!r}: {message}")

    def __repr__(self) -> str:
        return f"OnnxNode({self.op_type}, {self.name!r}, {self.inputs} -> {self.outputs})"
