"""``ember.onnx.load``: read an ONNX file into an :class:`~ember.onnx.OnnxModule`.

The file is read with the ``onnx`` package (the ``interop`` extra, imported only here) and
checked in full before anything is built: it must parse, use a default-domain opset ember
supports, have an ember implementation for every node (all missing ones are listed at once)
and pass ONNX's checker. Only then are the initializers turned into tensors.
"""

from __future__ import annotations

import heapq
import os
from collections import defaultdict

import numpy as np

import ember
from ember.nn import Param
from ember.onnx.dtypes import ember_dtype, onnx_type_name
from ember.onnx.errors import OnnxImportError
from ember.onnx.graph_module import OnnxModule, fold_constants
from ember.onnx.import_ops import MAX_OPSET, MIN_OPSET, lookup
from ember.onnx.node import OnnxNode

__all__ = ["load"]


_UNREADABLE = object()  # an attribute value ember does not decode (a subgraph, a sparse tensor)


def _onnx():
    try:
        import onnx
    except ImportError:
        raise ImportError('ember.onnx.load needs the onnx package: pip install "ember[interop]"') from None
    return onnx


def load(path, device=None) -> OnnxModule:
    """Import the ONNX model in ``path`` as an ember module.

    Float initializers become trainable parameters (:class:`~ember.nn.Param`) named as in the file;
    the module runs the graph with ember's ops on ``device``, so it can be fine-tuned.

    Args:
        path: the ``.onnx`` file (external data files are read from beside it).
        device: where the parameters live; ember's default device when None.

    Raises:
        FileNotFoundError: no such file.
        OnnxImportError: the file is truncated or corrupt, its opset is outside
            ``MIN_OPSET``..``MAX_OPSET``, it holds ops ember does not implement (all listed,
            with their domain and opset), it fails ONNX's checker, or an initializer's element
            type has no ember dtype.
        ImportError: the ``onnx`` package is not installed.
    """
    onnx = _onnx()
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"ember.onnx.load: no such file {path!r}")
    try:
        model = onnx.load_model(path, load_external_data=False)
    except Exception as e:  # protobuf's DecodeError and friends: the bytes are not a model
        raise OnnxImportError(f"{path}: not a readable ONNX model (truncated or corrupt?): {e}") from None
    try:  # tensors stored in files beside the model (models over 2 GB)
        from onnx.external_data_helper import load_external_data_for_model

        load_external_data_for_model(model, os.path.dirname(os.path.abspath(path)))
    except Exception as e:
        raise OnnxImportError(f"{path}: the model's external data cannot be read: {e}") from None
    nodes = _nodes(path, model.graph, _opsets(path, model))
    try:
        onnx.checker.check_model(model)
    except Exception as e:
        raise OnnxImportError(f"{path}: the ONNX checker rejects the model: {e}") from None
    return _build(path, model.graph, nodes, ember.default_device() if device is None else device)


def _opsets(path: str, model) -> dict:
    opsets = {}
    for entry in model.opset_import:
        domain = "" if entry.domain in ("", "ai.onnx") else entry.domain
        opsets[domain] = int(entry.version)
    version = opsets.get("")
    if version is None:
        if not model.graph.node and not model.graph.output:
            raise OnnxImportError(
                f"{path}: not a readable ONNX model (truncated or corrupt?): no graph and no opset"
            )
        raise OnnxImportError(
            f"{path}: the model imports no default-domain (ai.onnx) opset (a truncated file?)"
        )
    if version > MAX_OPSET:
        raise OnnxImportError(
            f"{path}: opset {version} (ai.onnx) is too new: ember imports opsets {MIN_OPSET} to {MAX_OPSET}; "
            f"re-export with opset_version={MAX_OPSET} or lower"
        )
    if version < MIN_OPSET:
        raise OnnxImportError(
            f"{path}: opset {version} (ai.onnx) is too old: ember imports opsets {MIN_OPSET} to {MAX_OPSET}; "
            f"convert it with onnx.version_converter or re-export with a newer opset"
        )
    return opsets


def _version(op_type: str, domain: str, opset: int) -> int | None:
    """The op's schema version (since_version) in ``opset``, or None when ONNX has none."""
    import onnx.defs

    try:
        return int(onnx.defs.get_schema(op_type, opset, domain).since_version)
    except Exception:
        return None


def _nodes(path: str, graph, opsets: dict) -> list:
    """The graph's nodes with their implementations; every op or op setting ember lacks is
    listed in one error."""
    nodes = []
    missing: dict = defaultdict(list)
    for i, node in enumerate(graph.node):
        name = node.name or f"{node.op_type}_{i}"
        domain = "" if node.domain in ("", "ai.onnx") else node.domain
        opset = opsets.get(domain)
        version = None if opset is None else _version(node.op_type, domain, opset)
        spec = None if version is None else lookup(node.op_type, domain, version)
        if spec is None:
            missing[(node.op_type, domain or "ai.onnx", opset, version, "")].append(name)
            continue
        built = OnnxNode(node.op_type, name, node.input, node.output, _attrs(path, node), spec)
        unreadable = [k for k, v in built.attrs.items() if v is _UNREADABLE]
        if unreadable:
            setting = f"graph or sparse attribute(s) {unreadable}"
        else:
            setting = spec.unsupported(built) if spec.unsupported is not None else None
        if setting:
            missing[(node.op_type, "ai.onnx", opset, version, setting)].append(name)
        nodes.append(built)
    if missing:
        lines = []
        for (op, domain, opset, version, setting), names in sorted(
            missing.items(), key=lambda kv: (kv[0][1], kv[0][0])
        ):
            where = "no opset imported for its domain" if opset is None else f"opset {opset}"
            if opset is not None and version is None:
                where += ", unknown to ONNX"
            elif version is not None:
                where += f", op version {version}"
            shown = ", ".join(repr(n) for n in names[:3]) + (
                f" and {len(names) - 3} more" if len(names) > 3 else ""
            )
            with_setting = f" with {setting}" if setting else ""
            lines.append(f"  {op} (domain {domain}, {where}){with_setting}: {len(names)} node(s) {shown}")
        raise OnnxImportError(
            f"{path}: {len(missing)} ONNX op(s) not supported by ember.onnx:\n" + "\n".join(lines)
        )
    return nodes


def _array(path: str, tensor) -> np.ndarray:
    from onnx import numpy_helper

    ember_dtype(tensor.data_type, f"{path}: tensor {tensor.name!r}")
    try:
        return np.array(numpy_helper.to_array(tensor), order="C")  # (0-d stays 0-d)
    except Exception as e:
        raise OnnxImportError(
            f"{path}: tensor {tensor.name!r} ({onnx_type_name(tensor.data_type)} {list(tensor.dims)}) "
            f"cannot be read: {e}"
        ) from None


def _attrs(path: str, node) -> dict:
    from onnx import AttributeProto, helper

    out = {}
    for a in node.attribute:
        if a.type == AttributeProto.TENSOR:
            out[a.name] = _array(path, a.t)
        elif a.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS, AttributeProto.SPARSE_TENSOR):
            out[a.name] = _UNREADABLE  # reported with the unsupported ops
        else:
            value = helper.get_attribute_value(a)
            out[a.name] = value.decode() if isinstance(value, bytes) else value
    return out


def _build(path: str, graph, nodes: list, device) -> OnnxModule:
    frozen = {n.inputs[j] for n in nodes for j in n.spec.frozen if j < len(n.inputs)}
    params, host = {}, {}
    for init in graph.initializer:
        array = _array(path, init)
        if array.dtype.kind == "f":
            tensor = ember.from_numpy(array, device)
            params[init.name] = Param(tensor, require_grad=init.name not in frozen)
        else:
            host[init.name] = array
    inputs = [v.name for v in graph.input if v.name not in params and v.name not in host]
    outputs = [v.name for v in graph.output]
    if not outputs:  # (a file cut at a field boundary can parse and still pass the checker)
        raise OnnxImportError(f"{path}: the graph declares no outputs (a truncated file?)")
    ordered = _topological(path, nodes, set(inputs) | set(params) | set(host))
    return OnnxModule(params, host, fold_constants(ordered, host), inputs, outputs, path)


def _topological(path: str, nodes: list, known: set) -> list:
    """The nodes in an order where each runs after the nodes producing its inputs (the file's
    order among nodes that are ready together); linear in the graph's size."""
    producer = {o: i for i, n in enumerate(nodes) for o in n.outputs if o}
    waiting = [0] * len(nodes)  # inputs not yet produced, per node
    readers: dict = defaultdict(list)
    for i, n in enumerate(nodes):
        for name in {x for x in n.inputs if x and x not in known}:
            if name not in producer:
                raise OnnxImportError(
                    f"{path}: node {n.name!r} ({n.op_type}) reads {name!r}, which nothing produces"
                )
            waiting[i] += 1
            readers[name].append(i)
    ready = [i for i, count in enumerate(waiting) if count == 0]
    heapq.heapify(ready)
    ordered = []
    while ready:
        i = heapq.heappop(ready)
        ordered.append(nodes[i])
        for name in nodes[i].outputs:
            for j in readers.pop(name, ()) if name else ():
                waiting[j] -= 1
                if waiting[j] == 0:
                    heapq.heappush(ready, j)
    if len(ordered) < len(nodes):
        stuck = next(n for i, n in enumerate(nodes) if waiting[i])
        raise OnnxImportError(f"{path}: node {stuck.name!r} ({stuck.op_type}) is part of a cycle")
    return ordered
