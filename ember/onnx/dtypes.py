"""ONNX element types (``TensorProto.DataType`` numbers) that ember tensors can hold."""

from __future__ import annotations

import ember
from ember.onnx.errors import OnnxImportError

__all__ = ["ember_dtype", "onnx_type_name"]

_NAMES = {
    1: "FLOAT", 2: "UINT8", 3: "INT8", 4: "UINT16", 5: "INT16", 6: "INT32", 7: "INT64", 8: "STRING",
    9: "BOOL", 10: "FLOAT16", 11: "DOUBLE", 12: "UINT32", 13: "UINT64", 14: "COMPLEX64",
    15: "COMPLEX128", 16: "BFLOAT16",
}  # fmt: skip
_EMBER = {
    1: ember.float32,
    6: ember.int32,
    7: ember.int64,
    9: ember.bool_,
    10: ember.float16,
    11: ember.float64,
}


def onnx_type_name(code: int) -> str:
    return _NAMES.get(code, f"type {code}")


def ember_dtype(code: int, where: str):
    """The ember dtype of ONNX element type ``code``; ``where`` names the user for the error."""
    try:
        return _EMBER[code]
    except KeyError:
        supported = ", ".join(_NAMES[c] for c in _EMBER)
        raise OnnxImportError(
            f"{where}: ONNX element type {onnx_type_name(code)} has no ember dtype (supported: {supported})"
        ) from None
