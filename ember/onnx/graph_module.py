"""``OnnxModule``: an imported ONNX graph run node by node with ember's ops.

Values live in two places. *Data* values are ember tensors on the module's device: the graph
inputs, the float initializers (the module's parameters, named as in the file) and everything
computed from them, so gradients flow to the parameters. *Host* values are NumPy arrays:
integer and bool initializers, ``Constant`` outputs, shapes (``Shape``) and whatever is
computed from host values only. A node whose inputs are all on the host runs on the host
(ember's NumPy ``reference`` backend), which keeps shape arithmetic off the accelerator; a host
value meeting a data value is copied to the data's device (a constant of the file once per
device), except for the inputs an op reads as static ints (a ``Reshape``'s shape), which stay
on the host. Nodes that read constants only are run once, at load (:func:`fold_constants`).
"""

from __future__ import annotations

import numpy as np

import ember
from ember.nn import Module
from ember.onnx.errors import OnnxImportError
from ember.onnx.node import OnnxNode
from ember.tensor import Tensor

__all__ = ["OnnxModule", "fold_constants"]

_HOST = "reference"


class OnnxModule(Module):
    """A module that runs an ONNX graph (built by :func:`ember.onnx.load`).

    Its parameters are the graph's float initializers, each under its ONNX name
    (``named_parameters()`` gives ``"fc1.weight"`` for a PyTorch export), so it trains,
    saves and loads like any ember module. Call it with the graph inputs in order, or by name.
    ``Dropout`` nodes pass their input through, in training too (an exported graph is an
    inference graph).

    Args:
        params: float initializers by name.
        host: integer and bool initializers by name (NumPy arrays).
        nodes: the nodes, in topological order.
        inputs: the graph input names (initializers excluded).
        outputs: the graph output names.
        source: the file it came from, for messages.
    """

    def __init__(self, params: dict, host: dict, nodes: list, inputs: list, outputs: list, source: str):
        self._params = dict(params)
        self._host = dict(host)
        self._nodes = list(nodes)
        self._inputs = list(inputs)
        self._outputs = list(outputs)
        self._source = source
        self._uploads: dict = {}  # (host constant, device) -> its copy there

    def _items(self):
        # parameters are found under their ONNX names, not under an attribute
        yield from self._params.items()

    @property
    def input_names(self) -> list:
        return list(self._inputs)

    @property
    def output_names(self) -> list:
        return list(self._outputs)

    @property
    def nodes(self) -> list:
        """The graph's nodes (``OnnxNode``), in the order they run."""
        return list(self._nodes)

    def forward(self, *args, **kwargs):
        """Run the graph; returns its output (a tuple when the graph has several)."""
        values = self._bind(args, kwargs)
        device = self._device(values)
        for node in self._nodes:
            outs = _run(node, [values[name] if name else None for name in node.inputs], self._upload)
            for name, value in zip(node.outputs, outs):
                if name:
                    values[name] = value
        results = []
        for name in self._outputs:
            value = values[name]
            results.append(_tensor(value, device) if isinstance(value, np.ndarray) else value)
        return results[0] if len(results) == 1 else tuple(results)

    def _bind(self, args, kwargs) -> dict:
        if len(args) > len(self._inputs):
            raise TypeError(
                f"{self._label()}: expected at most {len(self._inputs)} inputs {self._inputs}, got {len(args)}"
            )
        given = dict(zip(self._inputs, args))
        for name, value in kwargs.items():
            if name not in self._inputs:
                raise TypeError(
                    f"{self._label()}: unknown input {name!r}; the graph's inputs are {self._inputs}"
                )
            if name in given:
                raise TypeError(f"{self._label()}: input {name!r} given twice")
            given[name] = value
        missing = [n for n in self._inputs if n not in given]
        if missing:
            raise TypeError(
                f"{self._label()}: missing input(s) {missing}; the graph's inputs are {self._inputs}"
            )
        values: dict = dict(self._host)
        for name, p in self._params.items():
            values[name] = p.val()
        for name, value in given.items():
            if isinstance(value, np.ndarray):
                value = _tensor(value, self._default_device())
            elif not isinstance(value, Tensor):
                value = ember.tensor(value, device=self._default_device())
            if self._params and value.device != self._default_device():
                raise ValueError(
                    f"{self._label()}: input {name!r} is on {value.device} but the parameters are on "
                    f"{self._default_device()}; move one with .to(device)"
                )
            values[name] = value
        return values

    def _upload(self, name: str, array: np.ndarray, device) -> Tensor:
        """``array`` (the value ``name``) as a tensor on ``device``; the file's constants are
        copied to each device once."""
        if name not in self._host:
            return _tensor(array, device)
        key = (name, str(device))
        if key not in self._uploads:
            self._uploads[key] = _tensor(array, device)
        return self._uploads[key]

    def _default_device(self):
        for p in self._params.values():
            return p.device
        return ember.default_device()

    def _device(self, values: dict):
        for name in self._inputs:
            return values[name].device
        return self._default_device()

    def _label(self) -> str:
        return f"OnnxModule({self._source!r})"

    def extra_repr(self) -> dict:
        return {
            "source": self._source,
            "inputs": self._inputs,
            "outputs": self._outputs,
            "nodes": len(self._nodes),
        }


def fold_constants(nodes: list, host: dict) -> list:
    """Run the nodes whose inputs are all constants (in ``host``, which receives their outputs)
    once, now; returns the nodes left to run per call. An error in a folded node is raised here,
    at load."""
    left = []
    for node in nodes:
        if all(not name or name in host for name in node.inputs):
            outs = _run(node, [host[name] if name else None for name in node.inputs])
            host.update((name, value) for name, value in zip(node.outputs, outs) if name)
        else:
            left.append(node)
    return left


def _run(node: OnnxNode, inputs: list, upload=None) -> list:
    """Run one node; its outputs as a list (host values as NumPy arrays). ``upload(name, array,
    device)`` copies a host input to the data's device."""
    spec = node.spec
    on_host = all(v is None or isinstance(v, np.ndarray) for v in inputs)
    target = _HOST if on_host else next(v.device for v in inputs if isinstance(v, Tensor))
    args = []
    for i, (name, value) in enumerate(zip(node.inputs, inputs)):
        if value is None:
            args.append(None)
        elif i in spec.static:
            args.append(value if isinstance(value, np.ndarray) else value.numpy())
        elif isinstance(value, np.ndarray):
            args.append(_tensor(value, target) if on_host or upload is None else upload(name, value, target))
        else:
            args.append(value)
    try:
        out = spec.fn(node, *args)
    except OnnxImportError:
        raise
    except (ValueError, TypeError, IndexError) as e:
        shapes = [None if v is None else f"{_dtype_name(v)}{list(np.shape(v))}" for v in inputs]
        raise OnnxImportError(f"ONNX {node.op_type} node {node.name!r} (inputs {shapes}): {e}") from e
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    if on_host:
        outs = [o.numpy() if isinstance(o, Tensor) else o for o in outs]
    return outs


def _tensor(array: np.ndarray, device) -> Tensor:
    # (not np.ascontiguousarray: it turns a 0-d array into a 1-d one)
    return ember.from_numpy(array if array.flags.c_contiguous else array.copy(), device)


def _dtype_name(value) -> str:
    return str(value.dtype)
