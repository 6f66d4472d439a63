"""The error ember's ONNX import raises for a file it cannot load or a node it cannot run."""

from __future__ import annotations

__all__ = ["OnnxImportError"]


class OnnxImportError(ValueError):
    """An ONNX file that ember cannot load (unreadable, invalid, an unsupported opset or op), or
    a node whose inputs or attributes its ember implementation does not accept."""
