"""``ember.onnx.export``: a module's forward as an ONNX model file."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ember.nn.module import Module
from ember.onnx.export_dims import Dim, SymInt, TraceMismatch, merge_args, other_sizes, resized_inputs, solve
from ember.onnx.export_graph import ExportError, GraphBuilder
from ember.onnx.export_modules import emit_module
from ember.onnx.export_ops import emit
from ember.onnx.export_packing import unpack_encoders
from ember.onnx.export_trace import Ref, Trace, host_array, tracing
from ember.tensor.creation import tensor
from ember.tensor.tensor import Tensor

MIN_OPSET, MAX_OPSET = 17, 21


def _require_onnx():
    try:
        import onnx
    except ImportError as e:
        raise ImportError('ember.onnx.export needs the onnx package: pip install "ember[interop]"') from e
    return onnx


def export(
    model,
    example_inputs,
    path: str | os.PathLike | None,
    *,
    opset: int = 17,
    dynamic_axes: dict | None = None,
    input_names: list[str] | None = None,
    output_names: list[str] | None = None,
):
    """Trace ``model``'s forward on ``example_inputs`` and write it as an ONNX model.

    The forward runs in inference mode (on ``model.valid()``: dropout off, no graph; a
    Transformer encoder's token packing replaced by ops a graph can hold), three times: as given, then twice with the dynamic axes resized, so that sizes computed in
    Python from ``x.shape`` become ``Shape`` nodes. Parameters become initializers named by
    their dotted paths. Values a forward reads back into Python (``.item()``, ``.numpy()``)
    are constants of the graph: an arange or a mask built from them in NumPy is checked to be
    the same at the other sizes, but a branch taken on an input's values is the example's.

    Args:
        model: an ``ember.nn.Module`` (its ``forward`` is traced) or a bound method of one
            (``model.logits``).
        example_inputs: a Tensor or a tuple of Tensors, the forward's positional arguments.
        path: the ``.onnx`` file to write, or None to only return the model.
        opset: the ONNX opset, 17 to 21.
        dynamic_axes: ``{input: {axis: name}}`` (input by index or name); inputs sharing a
            name share the size. None: axis 0 of every input is ``"batch"``; ``{}``: static.
        input_names: names of the graph inputs (default ``input_0``, ...).
        output_names: names of the graph outputs (default ``output_0``, ...).

    Returns:
        The ``onnx.ModelProto`` (checked by ``onnx.checker.check_model``).

    Raises:
        ExportError: an op ONNX cannot express, naming the op and the module path; a forward
            that takes another path when the dynamic axes change size.
        TypeError / ValueError: bad arguments, naming them.
    """
    onnx = _require_onnx()
    module, method = _target(model, Module)
    inputs = _inputs(example_inputs, Tensor)
    if not isinstance(opset, int) or isinstance(opset, bool) or not MIN_OPSET <= opset <= MAX_OPSET:
        raise ValueError(
            f"ember.onnx.export: opset must be an int from {MIN_OPSET} to {MAX_OPSET}, got {opset!r}"
        )
    input_names = _names("input_names", input_names, len(inputs), "input")
    axes = _dynamic_axes(dynamic_axes, inputs, input_names)

    infer = module.valid()
    unpack_encoders(infer)  # token packing reads the mask on the host: see export_packing
    run = getattr(infer, method)
    dims = _dims(axes, inputs)
    trace1 = _trace(infer, run, inputs)
    outputs1 = _outputs(trace1.result, Tensor)
    output_names = _names("output_names", output_names, len(outputs1), "output")
    _check_name_clashes(input_names, output_names, trace1.param_arrays)
    out_refs = [trace1.ref_of(t._data) for t in outputs1]
    needed = _needed(trace1, out_refs)
    calls = {i: trace1.calls[i] for i in needed}
    out_shapes = [[tuple(t.shape) for t in outputs1]]  # per trace, per output
    if dims:
        traces = [trace1]
        for t in (1, 2):
            sizes = {d.name: d.sizes[t] for d in dims}
            arrays = resized_inputs([x.numpy() for x in inputs], axes, sizes)
            resized = [tensor(a, device=x.device, dtype=x.dtype) for a, x in zip(arrays, inputs)]
            traces.append(_trace(infer, run, resized, sizes=sizes))
            out_shapes.append([tuple(x.shape) for x in _outputs(traces[-1].result, Tensor)])
        calls = _merged(traces, needed, dims)

    g = GraphBuilder(onnx, opset, dims, input_names, trace1.meta)
    for i in range(len(inputs)):
        g.names[Ref("input", i)] = input_names[i]
    _emit_calls(g, calls, dict(infer.named_modules()))
    g.where = "ember.onnx.export: the outputs"
    _name_leaves(g, out_refs)  # an output that is a parameter or a constant itself
    for ref, name in zip(out_refs, output_names):
        g.nodes.append(onnx.helper.make_node("Identity", [g.value(ref)], [name]))
    read = {ref.key for ref in g.names if ref.kind == "param"}
    for dotted, array in trace1.param_arrays.items():  # in the module's order
        if dotted in read:
            g.initializers[dotted] = host_array(array)
    for ref, name in g.names.items():
        if ref.kind == "const":
            g.initializers[name] = trace1.const_arrays[ref.key]
    graph_inputs = [
        onnx.helper.make_tensor_value_info(
            input_names[i],
            g.onnx_type(t.dtype.numpy),
            [axes.get(i, {}).get(a, s) for a, s in enumerate(t.shape)],
        )
        for i, t in enumerate(inputs)
    ]
    graph_outputs = [
        onnx.helper.make_tensor_value_info(
            name, g.onnx_type(t.dtype.numpy), _output_dims(k, name, out_shapes, dims)
        )
        for k, (t, name) in enumerate(zip(outputs1, output_names))
    ]
    initializers = [
        onnx.numpy_helper.from_array(np.array(a, order="C"), n) for n, a in g.initializers.items()
    ]
    graph = onnx.helper.make_graph(g.nodes, type(module).__name__, graph_inputs, graph_outputs, initializers)
    proto = onnx.helper.make_model(
        graph, opset_imports=[onnx.helper.make_opsetid("", opset)], producer_name="ember"
    )
    onnx.checker.check_model(proto, full_check=True)
    if path is not None:
        onnx.save(proto, os.fspath(path))
    return proto


# ---- arguments ---------------------------------------------------------------------------------
def _target(model, module_type) -> tuple[Any, str]:
    if isinstance(model, module_type):
        return model, "forward"
    owner = getattr(model, "__self__", None)
    if isinstance(owner, module_type) and callable(model):
        return owner, model.__name__
    raise TypeError(
        f"ember.onnx.export: model must be an ember.nn.Module or a bound method of one "
        f"(model.logits), got {type(model).__name__}"
    )


def _inputs(example_inputs, tensor_type) -> list:
    items = example_inputs if isinstance(example_inputs, (tuple, list)) else (example_inputs,)
    if not items:
        raise ValueError("ember.onnx.export: example_inputs is empty; give the forward's tensor arguments")
    for i, t in enumerate(items):
        if not isinstance(t, tensor_type):
            raise TypeError(
                f"ember.onnx.export: example input {i} must be an ember.Tensor, got {type(t).__name__}"
            )
    return list(items)


def _names(what: str, names, n: int, prefix: str) -> list[str]:
    if names is None:
        return [f"{prefix}_{i}" for i in range(n)]
    names = list(names)
    if len(names) != n or not all(isinstance(s, str) and s for s in names) or len(set(names)) != n:
        raise ValueError(f"ember.onnx.export: {what} must be {n} distinct non-empty strings, got {names!r}")
    return names


def _check_name_clashes(input_names, output_names, params) -> None:
    """Graph inputs, outputs and initializers share one namespace in ONNX."""
    clash = set(input_names) & set(output_names)
    if clash:
        raise ValueError(f"ember.onnx.export: {sorted(clash)} named both an input and an output")
    for what, names in (("input", input_names), ("output", output_names)):
        taken = sorted(set(names) & set(params))
        if taken:
            raise ValueError(
                f"ember.onnx.export: {what} name(s) {taken} are parameter paths of the model "
                f"(its initializers' names); choose other {what}_names"
            )


def _dynamic_axes(spec, inputs, names) -> dict[int, dict[int, str]]:
    if spec is None:
        return {i: {0: "batch"} for i, t in enumerate(inputs) if t.ndim >= 1}
    if not isinstance(spec, dict):
        raise TypeError(
            f"ember.onnx.export: dynamic_axes must be a dict {{input: {{axis: name}}}}, got {spec!r}"
        )
    out: dict[int, dict[int, str]] = {}
    for key, axes in spec.items():
        i = names.index(key) if isinstance(key, str) and key in names else key
        if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < len(inputs):
            raise ValueError(
                f"ember.onnx.export: dynamic_axes names input {key!r}, expected an index below "
                f"{len(inputs)} or one of {names}"
            )
        if not isinstance(axes, dict):
            raise TypeError(
                f"ember.onnx.export: dynamic_axes[{key!r}] must be a dict {{axis: name}}, got {axes!r}"
            )
        rank = inputs[i].ndim
        for axis, name in axes.items():
            if not isinstance(axis, int) or isinstance(axis, bool) or not -rank <= axis < rank:
                raise ValueError(
                    f"ember.onnx.export: dynamic axis {axis!r} of input {key!r} is out of range for "
                    f"its shape {list(inputs[i].shape)}"
                )
            if not isinstance(name, str) or not name:
                raise ValueError(
                    f"ember.onnx.export: dynamic axis {axis} of input {key!r} needs a name, got {name!r}"
                )
            out.setdefault(i, {})[axis % rank] = name
    return out


def _dims(axes, inputs) -> list[Dim]:
    dims: dict[str, Dim] = {}
    for i in sorted(axes):
        for axis, name in sorted(axes[i].items()):
            size = int(inputs[i].shape[axis])
            if name in dims:
                if dims[name].sizes[0] != size:
                    raise ValueError(
                        f"ember.onnx.export: dynamic axis {name!r} has size {dims[name].sizes[0]} on input "
                        f"{dims[name].input} and {size} on input {i}; one name is one size"
                    )
                continue
            if size < 2:
                raise ValueError(
                    f"ember.onnx.export: dynamic axis {name!r} (input {i}, axis {axis}) has size {size} in "
                    f"the example; give at least 2, since a size of 1 broadcasts"
                )
            dims[name] = Dim(name, i, axis, (size,))
    second, third = other_sizes([d.sizes[0] for d in dims.values()])
    return [d._replace(sizes=(d.sizes[0], n2, n3)) for d, n2, n3 in zip(dims.values(), second, third)]


# ---- tracing ------------------------------------------------------------------------------------
def _trace(module, run, inputs, sizes=None) -> Trace:
    params = {path: p.value._data for path, p in module.named_parameters()}
    constants = {}
    for path, sub in module.named_modules():
        for attr, value in vars(sub).items():
            if isinstance(value, Tensor):
                constants[f"{path}.{attr}" if path else attr] = value._data
    trace = Trace([t._data for t in inputs], params, constants)
    with tracing(module, trace):
        try:
            trace.result = run(*inputs)
        except ExportError:
            raise
        except Exception as e:
            if sizes is None:
                raise
            resized = ", ".join(f"{name}={n}" for name, n in sizes.items())
            # with these sizes every trace shrinks the axes, never past the example's
            shrinkable = ", ".join(f"{name} >= {2 * k + 4}" for k, name in enumerate(sizes))
            raise ExportError(
                f"ember.onnx.export: the forward fails when the dynamic axes are resized ({resized}, "
                f"to see which numbers follow them): {type(e).__name__}: {e}. Give example inputs "
                f"whose dynamic axes can shrink or grow by a few ({shrinkable} are only shrunk)"
            ) from e
    return trace


def _outputs(result, tensor_type) -> list:
    items = list(result) if isinstance(result, (tuple, list)) else [result]
    for i, t in enumerate(items):
        if not isinstance(t, tensor_type):
            raise TypeError(
                f"ember.onnx.export: the forward must return a Tensor or a tuple of Tensors; "
                f"output {i} is {type(t).__name__}"
            )
    return items


def _refs_in(value):
    if isinstance(value, Ref):
        yield value
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _refs_in(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _refs_in(v)
    elif isinstance(value, slice):
        yield from _refs_in((value.start, value.stop, value.step))


def _needed(trace: Trace, out_refs) -> set[int]:
    """Indices of the calls the outputs depend on (checks and statistics nobody reads drop out)."""
    needed: set[int] = set()
    stack = [r for r in out_refs if r.kind == "call"]
    while stack:
        ref = stack.pop()
        index = ref.key[0]
        if index in needed:
            continue
        needed.add(index)
        call = trace.calls[index]
        stack.extend(r for r in _refs_in((call.args, call.kwargs)) if r.kind == "call")
    return needed


def _merged(traces: list[Trace], needed, dims) -> dict:
    """The needed calls of the first trace, with numbers that differ between the traces as
    ``SymInt`` s; raises when the traces ran other ops or read other host-made arrays."""
    first = traces[0]
    calls = {}
    for index in sorted(needed):
        c1 = first.calls[index]
        same = [t.calls[index] if index < len(t.calls) else None for t in traces]
        try:
            for c in same[1:]:
                if c is None or c.method != c1.method or c.module != c1.module:
                    other = "nothing" if c is None else f"{c.method} in module '{c.module}'"
                    raise TraceMismatch(f"{c1.method} in module '{c1.module}' vs {other}")
            args = merge_args(*(c.args for c in same))
            kwargs = merge_args(*(c.kwargs for c in same))
        except TraceMismatch as e:
            raise ExportError(
                f"ember.onnx.export: the forward runs other ops when the dynamic axes "
                f"({', '.join(d.name for d in dims)}) change size (call {index}, module "
                f"'{c1.module or '(root)'}'): {e}; export with static shapes (dynamic_axes={{}}) "
                f"or keep shape-dependent branches out of the forward"
            ) from None
        for ref in _refs_in(args):
            if ref.kind == "const":
                a = first.const_arrays[ref.key]
                for t in traces[1:]:
                    b = t.const_arrays.get(ref.key)
                    if b is None or a.shape != b.shape or not np.array_equal(a, b, equal_nan=True):
                        raise ExportError(
                            f"ember.onnx.export: op {c1.method} in module '{c1.module or '(root)'}' reads "
                            f"an array made outside ember's tensor ops ({ref.key}, shape {list(a.shape)}) "
                            f"that changes with the dynamic axes; build it with tensor ops"
                        )
        calls[index] = c1._replace(args=args, kwargs=kwargs)
    return calls


def _emit_calls(g: GraphBuilder, calls: dict, modules: dict) -> None:
    """Emit the needed calls in order, each error naming the op and the module that ran it."""
    for index in sorted(calls):
        call = calls[index]
        _name_leaves(g, (call.args, call.kwargs))
        owner = modules.get(call.module)
        where = (
            "the forward" if owner is None else f"module '{call.module or '(root)'}' ({type(owner).__name__})"
        )
        what = call.method
        if call.method in ("unary", "binary", "reduce", "arg_reduce"):
            what = f"{call.method} {call.args[0]!r}"
        g.where = f"ember.onnx.export: op {what} in {where}"
        names = emit_module(g, owner, call) if call.method == "module" else emit(g, call)
        for ref, name in zip(call.outputs, names):
            if ref is not None and name is not None:
                g.names[ref] = name


def _output_dims(k: int, name: str, out_shapes: list, dims: list[Dim]) -> list:
    """Output ``k``'s dims: sizes, or names where they changed between the traces (the dynamic
    dim's own name when it is one, else ``<output>_dim<axis>``)."""
    shape = list(out_shapes[0][k])
    for axis, sizes in enumerate(zip(*(shapes[k] for shapes in out_shapes))):
        if len(set(sizes)) > 1:
            e = solve(SymInt(sizes), dims)
            plain = e is not None and e.coef == 1 and e.offset == 0 and len(e.dims) == 1
            shape[axis] = e.dims[0] if plain else f"{name}_dim{axis}"
    return shape


def _name_leaves(g: GraphBuilder, value) -> None:
    """Give params and constants read by a call their initializer names."""
    for ref in _refs_in(value):
        if ref not in g.names and ref.kind in ("param", "const"):
            g.names[ref] = ref.key
