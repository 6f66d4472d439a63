"""Tracing a forward for ONNX export: every backend call it makes, recorded once.

Every tensor op computes through its device's backend, read from the one property
``Device.backend``, so the narrowest place to watch a forward is that property: for the length
of a trace it answers with a :class:`_Recorder` that forwards each call to the real backend and
notes what it was (method, arguments, results) and which module was running. Nothing in
``ember.tensor`` changes and ops cost nothing extra when no trace runs. Only calls from the
tracing thread are recorded; other threads computing meanwhile pass straight through (one
export traces at a time). A module the export takes whole (``export_modules``: a recurrent
layer as ONNX's op) is recorded as one call ``module`` instead of the calls inside it.

Arrays are identified by identity: a result of a recorded call is a :class:`Ref` to that call's
output, an example input's array is an input, a parameter's array an initializer with its
dotted path, and any other array (a module's constant tensor, a table) a constant.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, NamedTuple

import numpy as np

from ember.core.dtypes import dtype_from_numpy
from ember.onnx.export_modules import whole_module_export
from ember.tensor.device import Device


class Ref(NamedTuple):
    """A value of the traced graph: ``kind`` is "input" (``key`` its position), "param" or
    "const" (``key`` its name) or "call" (``key`` = (call index, output position))."""

    kind: str
    key: Any


class Call(NamedTuple):
    """One recorded backend call: method name, arguments with arrays replaced by
    :class:`Ref`, the refs of its array results, and the module path that made it."""

    method: str
    args: tuple
    kwargs: dict
    outputs: tuple
    module: str


class Trace:
    """What one run of a forward did: its calls, its values' shapes and dtypes, its constants."""

    def __init__(self, inputs: list, params: dict, constants: dict):
        """``inputs``: the example inputs' arrays; ``params``: dotted path -> parameter array;
        ``constants``: dotted path -> array of a module's constant tensor."""
        self.calls: list[Call] = []
        self.meta: dict[Ref, tuple] = {}  # ref -> (shape, numpy dtype) of the traced run
        self.param_arrays = params
        self.const_arrays: dict[str, np.ndarray] = {}
        self.result = None  # what the forward returned
        self._values: dict[int, Ref] = {}
        self._keep: list = []  # keeps every seen array alive, so that ids are never reused
        self._param_names = {id(a): path for path, a in params.items()}
        self._constant_names = {id(a): path for path, a in constants.items()}
        self._modules = [""]
        self._paused = 0  # inside a module exported whole: its inner calls are not recorded
        self.thread = threading.get_ident()
        for i, data in enumerate(inputs):
            self._see(data, Ref("input", i))

    def _see(self, array, ref: Ref) -> Ref:
        self._values[id(array)] = ref
        self._keep.append(array)
        self.meta[ref] = (tuple(array.shape), dtype_from_numpy(array.dtype).numpy)
        return ref

    def ref_of(self, array) -> Ref:
        """The ref of an array an op reads (a param, a constant or a fresh constant if unseen)."""
        ref = self._values.get(id(array))
        if ref is not None:
            return ref
        name = self._param_names.get(id(array))
        if name is not None:
            return self._see(array, Ref("param", name))
        name = self._constant_names.get(id(array)) or f"constant_{len(self.const_arrays)}"
        self.const_arrays[name] = host_array(array)
        return self._see(array, Ref("const", name))

    def _encode(self, value):
        if _is_array(value):
            return self.ref_of(value)
        if isinstance(value, (tuple, list)):
            return type(value)(self._encode(v) for v in value)
        if isinstance(value, dict):
            return {k: self._encode(v) for k, v in value.items()}
        if isinstance(value, np.generic) and not isinstance(value, np.ndarray):
            return value.item()
        return value

    def record(self, method: str, args: tuple, kwargs: dict, result) -> None:
        if self._paused:
            return
        enc_args = self._encode(args)
        enc_kwargs = {k: self._encode(v) for k, v in kwargs.items()}
        index = len(self.calls)
        outs = []
        leaves = result if isinstance(result, tuple) else (result,)
        for pos, leaf in enumerate(leaves):
            outs.append(self._see(leaf, Ref("call", (index, pos))) if _is_array(leaf) else None)
        if not any(o is not None for o in outs):
            return  # a call computing no array (a seed, a dtype) is not part of the graph
        self.calls.append(Call(method, enc_args, enc_kwargs, tuple(outs), self._modules[-1]))


def host_array(array) -> np.ndarray:
    """``array`` as a NumPy array (a CuPy array or a PyTorch tensor copied to the host)."""
    if isinstance(array, np.ndarray):
        return array
    if hasattr(array, "detach"):  # the torch backend's tensors, on any torch device
        return array.detach().cpu().numpy()
    return np.asarray(array.get() if hasattr(array, "get") else array)


def _is_array(value) -> bool:
    return hasattr(value, "shape") and hasattr(value, "dtype") and not isinstance(value, np.generic)


def _no_chain_runner():
    return None


class _Recorder:
    """Stands in for a backend during a trace: runs each call on ``real``, records it in ``trace``."""

    def __init__(self, real, trace: Trace):
        object.__setattr__(self, "_real", real)
        object.__setattr__(self, "_trace", trace)

    def __getattr__(self, name):
        if name == "chain_runner":  # no fusion while tracing: every op must reach the recorder
            return _no_chain_runner
        attr = getattr(self._real, name)
        if name.startswith("_") or not callable(attr):
            return attr
        trace = self._trace

        def call(*args, **kwargs):
            result = attr(*args, **kwargs)
            if threading.get_ident() == trace.thread:
                trace.record(name, args, kwargs, result)
            return result

        return call


_LOCK = threading.Lock()


@contextmanager
def tracing(module, trace: Trace):
    """Record ``trace`` while the block runs: ``Device.backend`` answers with a recorder of
    the device's backend (every device object, those made inside the forward too; nothing
    is cached on them), and each sub-module's ``forward`` is wrapped to note its dotted path."""
    with _LOCK:
        original = Device.__dict__["backend"]
        recorders: dict[int, _Recorder] = {}

        def traced(device):
            real = original.fget(device)
            recorder = recorders.get(id(real))
            if recorder is None:
                recorder = recorders[id(real)] = _Recorder(real, trace)
            return recorder

        wrapped = []  # (module, the forward its instance held before, or None)
        try:
            Device.backend = property(traced, doc=original.__doc__)
            for path, sub in module.named_modules():
                wrapped.append((sub, vars(sub).get("forward")))
                object.__setattr__(sub, "forward", _with_path(sub.forward, path or "", trace, sub))
            yield trace
        finally:
            Device.backend = original
            for sub, own in wrapped:
                if own is None:
                    del sub.__dict__["forward"]
                else:
                    object.__setattr__(sub, "forward", own)


def _with_path(forward, path: str, trace: Trace, sub):
    whole = whole_module_export(sub)

    def run(*args, **kwargs):
        trace._modules.append(path)
        try:
            if whole is None:
                return forward(*args, **kwargs)
            # one ONNX op for the whole module: its inner calls are not recorded, one call
            # "module" with its tensor inputs, parameters and tensor results is
            trace._paused += 1
            try:
                result = forward(*args, **kwargs)
            finally:
                trace._paused -= 1
            inputs = tuple(None if t is None else t._data for t in whole.inputs(*args, **kwargs))
            params = {name: p.value._data for name, p in sub.named_parameters()}
            outputs = tuple(t._data for t in whole.outputs(result))
            trace.record("module", (type(sub).__name__, inputs, params), {}, outputs)
            return result
        finally:
            trace._modules.pop()

    return run
