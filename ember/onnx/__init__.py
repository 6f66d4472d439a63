"""ONNX interop (the ``interop`` extra: ``pip install "ember[interop]"``).

``ember.onnx.load(path)`` imports an ONNX model as an ember module whose float initializers
are trainable parameters; it runs the graph with ember's ops on any backend. The ``onnx``
package is imported only when a file is read, so importing this package needs nothing extra.
"""

from ember.onnx.errors import OnnxImportError
from ember.onnx.export_model import export
from ember.onnx.graph_module import OnnxModule
from ember.onnx.load import load

__all__ = ["OnnxImportError", "OnnxModule", "export", "load"]
