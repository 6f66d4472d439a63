"""``Module``: the base class of every layer and model (Burn's ``Module`` trait).

A module finds its parameters and sub-modules by walking its attributes: a :class:`Param`,
a :class:`Module`, or a list / tuple / dict holding them (nested containers included).
Attributes whose names start with ``_`` are skipped, and plain tensors are constants (moved
by ``to`` but neither trained nor saved), as in Burn. Each parameter has a dotted path built
from attribute names, list indices and dict keys — ``transformer.layers.0.mha.query.weight``
— and a LoRA adapter's factors sit under the ``lora`` component of the weight they adapt
(``...query.weight.lora.a``). A parameter object reached twice (tied weights) is reported
once, under its first path.

Nothing a user puts on a module is silently ignored: assigning a tensor that requires grad
(``self.w = ember.randn(3, 4).require_grad()``) to a public attribute, or holding one in a
list / tuple / dict attribute, raises a ``TypeError`` saying to wrap it in ``nn.Param`` —
as a plain attribute it would be a constant, missing from ``named_parameters()``, untouched
by optimizers and not saved. The check runs at assignment and again whenever the parameters
are walked (a list filled after assignment is caught there).

Layers that have a ``<Name>Config`` (``nn.Linear`` / ``nn.LinearConfig``) are built from it:
``nn.LinearConfig(3, 2).init()``. Calling the constructor the way other frameworks do
(``nn.Linear(3, 2)``, ``nn.MaxPool2d(2)``) raises a ``TypeError`` pointing at the config; this
holds for every subclass of :class:`Module` with a config class of that name beside it
(``ember/nn/config_hint.py``).

Modules are mutable Python objects: ``to``, ``freeze``, ``unfreeze``, ``map_parameters``,
``load_record`` and ``apply_lora`` change the module in place and return it, so both
``model.to("cpu")`` and ``model = model.to("cpu")`` work. ``valid``, ``fork``, ``train`` and
``clone`` return new modules.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

from ember._deprecation import renamed_method
from ember.nn.config_hint import with_config_hint
from ember.nn.discarded_copy import warn_if_discarded
from ember.nn.param import Param, ParamId, _as_leaf
from ember.tensor import dtypes as dt
from ember.tensor.device import Device, as_device
from ember.tensor.grad_mode import no_grad
from ember.tensor.tensor import Tensor, _is_dtype_name

__all__ = ["Module"]


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


def _container_items(value) -> list | None:
    """(component, item) pairs of a list/tuple/dict, or None for anything else."""
    if isinstance(value, (list, tuple)):
        return [(str(i), v) for i, v in enumerate(value)]
    if isinstance(value, dict):
        return [(str(k), v) for k, v in value.items()]
    return None


def _first_visit(seen: set[int], obj) -> bool:
    """Whether the walk reaches ``obj`` for the first time (a tied module or parameter is
    reported once, under its first path); marks it seen."""
    if id(obj) in seen:
        return False
    seen.add(id(obj))
    return True


def _holds_modules(value) -> bool:
    items = _container_items(value)
    if items is None:
        return isinstance(value, Module)
    return any(_holds_modules(v) for _, v in items)


def _holds_module_items(value) -> bool:
    items = _container_items(value)
    if items is None:
        return isinstance(value, (Module, Param))
    return any(_holds_module_items(v) for _, v in items)


def _trainable_tensor_path(value, path: str) -> str | None:
    """The path of a tensor that requires grad (a graph leaf) in ``value`` or its containers."""
    if isinstance(value, Tensor):
        node = value._node
        return path if node is not None and node.is_leaf else None
    if isinstance(value, (Param, Module)):
        return None
    for comp, item in _container_items(value) or ():
        found = _trainable_tensor_path(item, _join(path, comp))
        if found is not None:
            return found
    return None


def _refuse_trainable_tensor(owner: str, path: str) -> None:
    raise TypeError(
        f"{owner}.{path}: a tensor that requires grad is not a parameter; as a plain module attribute "
        f"it would be missing from named_parameters(), untouched by optimizers and not saved. Wrap it "
        f"in nn.Param(tensor) (a float Param is trainable by default), or drop require_grad() to "
        f"keep it as a constant"
    )


class Module:
    """Base class of layers and models.

    Subclasses set attributes in ``__init__`` (no ``super().__init__()`` call is needed) and
    define ``forward``; calling the module calls ``forward``. A module copied by
    :meth:`valid` is in inference mode: dropout is off, BatchNorm uses its running
    statistics, parameters do not require grad and its forward passes record no graph.

    Trainable values are :class:`~ember.nn.Param` attributes (``self.w = nn.Param(t)``); a
    plain tensor attribute is a constant. A tensor that requires grad is refused with a
    ``TypeError`` (at assignment and when parameters are walked) rather than being silently
    ignored: wrap it in ``nn.Param``. Attributes starting with ``_`` are private and skipped.
    A layer with a ``<Name>Config`` class beside it is built by ``<Name>Config(...).init()``;
    calling its constructor with sizes (``nn.Linear(3, 2)``) raises a ``TypeError`` that
    says so.
    """

    _training: bool = True

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "__init__" in cls.__dict__:
            cls.__init__ = with_config_hint(cls, cls.__dict__["__init__"])

    def __setattr__(self, name: str, value) -> None:
        if not name.startswith("_"):
            path = _trainable_tensor_path(value, name)
            if path is not None:
                _refuse_trainable_tensor(type(self).__name__, path)
        object.__setattr__(self, name, value)

    # ---- calling ------------------------------------------------------------------------------
    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} does not define forward()")

    def __call__(self, *args, **kwargs):
        if self._training:
            return self.forward(*args, **kwargs)
        with no_grad():  # an inference copy never records graph nodes (Burn's inner device)
            return self.forward(*args, **kwargs)

    @property
    def training(self) -> bool:
        """False for copies made by :meth:`valid` (inference mode)."""
        return self._training

    # ---- traversal ------------------------------------------------------------------------------
    def _items(self) -> Iterator[tuple[str, Any]]:
        """Public attributes in definition order (overridden by modules that add structure)."""
        for name, value in vars(self).items():
            if not name.startswith("_"):
                yield name, value

    def named_children(self) -> Iterator[tuple[str, "Module"]]:
        """Direct sub-modules with their path relative to this module (``layers.0``)."""

        def visit(prefix, value):
            if isinstance(value, Module):
                yield prefix, value
                return
            items = _container_items(value)
            if items:
                for comp, item in items:
                    yield from visit(_join(prefix, comp), item)

        for name, value in self._items():
            yield from visit(name, value)

    def children(self) -> list["Module"]:
        return [m for _, m in self.named_children()]

    def named_modules(self, prefix: str = "") -> Iterator[tuple[str, "Module"]]:
        """This module (path ``prefix``) and every sub-module below it, depth first."""
        seen: set[int] = set()

        def visit(path, module):
            if not _first_visit(seen, module):
                return
            yield path, module
            for name, child in module.named_children():
                yield from visit(_join(path, name), child)

        yield from visit(prefix, self)

    def modules(self) -> list["Module"]:
        return [m for _, m in self.named_modules()]

    def named_parameters(self, prefix: str = "") -> Iterator[tuple[str, Param]]:
        """Every parameter with its dotted path, in definition order.

        A LoRA-adapted weight yields its (frozen) base under its own path, then the adapter's
        factors under ``<path>.lora.a`` and ``<path>.lora.b``.
        """
        seen: set[int] = set()

        def visit_param(path, param):
            if not _first_visit(seen, param):
                return
            yield path, param
            if param._adapter is not None:
                yield from visit_module(_join(path, param._adapter.NAME), param._adapter)

        def visit_value(path, value):
            if isinstance(value, Param):
                yield from visit_param(path, value)
            elif isinstance(value, Module):
                yield from visit_module(path, value)
            elif isinstance(value, Tensor):
                if value._node is not None and value._node.is_leaf:  # put there after assignment
                    _refuse_trainable_tensor(type(self).__name__, path)
            else:
                items = _container_items(value)
                if items:
                    for comp, item in items:
                        yield from visit_value(_join(path, comp), item)

        def visit_module(path, module):
            for name, value in module._items():
                yield from visit_value(_join(path, name), value)

        yield from visit_module(prefix, self)

    def parameters(self) -> list[Param]:
        """Every parameter (see :meth:`named_parameters`)."""
        return [p for _, p in self.named_parameters()]

    def named_params_with_ids(self) -> Iterator[tuple[str, ParamId, Param]]:
        """``(path, param_id, param)`` for every parameter, for parameter groups and optimizers."""
        for path, p in self.named_parameters():
            yield path, p.id, p

    def num_params(self, trainable_only: bool = False) -> int:
        """Number of parameter elements (LoRA factors included, as in Burn).

        Args:
            trainable_only: count only parameters that require grad.
        """
        return sum(p.numel for p in self.parameters() if p.is_require_grad() or not trainable_only)

    def devices(self) -> list[Device]:
        """The devices the parameters live on (first-seen order)."""
        out: list[Device] = []
        for p in self.parameters():
            if p.device not in out:
                out.append(p.device)
        return out

    def _constants(self) -> Iterator[tuple["Module", str, Tensor]]:
        """(module, attribute, tensor) for plain tensor attributes (constants such as
        positional encodings or loss weights)."""
        for _, module in self.named_modules():
            for name, value in vars(module).items():
                if isinstance(value, Tensor):
                    yield module, name, value

    # ---- in-place changes -----------------------------------------------------------------------
    def to(self, target=None, dtype=None) -> "Module":
        """Move parameters and constants to a device and/or cast float ones to a dtype.

        Parameters are re-created as graph leaves (same ids and require-grad flags); integer
        and bool parameters keep their dtype. Changes the module in place and returns it.

        Args:
            target: a device (``"cpu"``, ``"reference"``, ``"cuda:0"``, a Device) or a dtype.
            dtype: a float dtype to cast float parameters to.
        """
        device = None
        if isinstance(target, dt.DType) or _is_dtype_name(target):
            dtype = target
        elif target is not None:
            device = as_device(target)
        if dtype is not None:
            dtype = dt.dtype(dtype)
            if not dtype.is_float:
                raise TypeError(f"Module.to: parameters can only be cast to a float dtype, got {dtype}")

        def convert(t: Tensor) -> Tensor:
            with no_grad():
                if device is not None:
                    t = t.to(device)
                if dtype is not None and t.dtype.is_float:
                    t = t.to(dtype)
            return t.detach()

        for _, p in self.named_parameters():
            p._value = _as_leaf(convert(p._value), p._require_grad)
        for module, name, value in list(self._constants()):
            setattr(module, name, convert(value))
        return self

    def freeze(self, group=None) -> "Module":
        """Stop training parameters (all, or those matching ``group``): they no longer require
        grad. In place; returns the module.

        Args:
            group: an object with ``matches(path, param_id)`` (an ``ember.optim.ParamGroup``),
                a callable ``(path, param_id) -> bool``, or None for every parameter.
        """
        for path, p in self.named_parameters():
            if _group_matches(group, path, p.id):
                p.set_require_grad(False)
        return self

    def unfreeze(self, group=None) -> "Module":
        """Train float parameters again (all, or those matching ``group``). In place.

        Running statistics (BatchNorm) stay non-trainable.

        Args:
            group: as for :meth:`freeze`.
        """
        for path, p in self.named_parameters():
            if p.dtype.is_float and _group_matches(group, path, p.id):
                p.set_require_grad(True)
        return self

    # Burn's ``Module::no_grad``, a second name for freeze() and a clash with ``ember.no_grad()``
    # (which stops graph recording): one release, then gone.
    no_grad = renamed_method("no_grad", "freeze")

    def map_parameters(self, fn: Callable[[str, Tensor], Tensor]) -> "Module":
        """Replace each parameter's stored tensor by ``fn(path, tensor)``. In place.

        The result must keep the parameter's shape; ids and require-grad flags are kept.

        Args:
            fn: receives the dotted path and the stored tensor, returns the new tensor.
        """
        for path, p in self.named_parameters():
            new = fn(path, p._value)
            if not isinstance(new, Tensor):
                raise TypeError(
                    f"map_parameters: fn returned {type(new).__name__} for '{path}', expected a Tensor"
                )
            if new.shape != p.shape:
                raise ValueError(
                    f"map_parameters: fn changed the shape of '{path}' from {list(p.shape)} "
                    f"to {list(new.shape)}"
                )
            p._value = _as_leaf(new.detach(), p._require_grad and new.dtype.is_float)
        return self

    # ---- copies -----------------------------------------------------------------------------------
    def clone(self) -> "Module":
        """An independent deep copy (same ids, same flags, copied data)."""
        return copy.deepcopy(self)

    def valid(self) -> "Module":
        """An inference copy (Burn's ``valid()``/inner module): a deep copy with dropout off,
        BatchNorm on running statistics, LoRA adapters folded into their weights, parameters
        that do not require grad, and forward passes that record no graph.

        The module itself is left as it was: keep the copy (``model_valid = model.valid()``);
        calling it as a statement warns (:class:`~ember.nn.discarded_copy.DiscardedCopyWarning`)."""
        warn_if_discarded("Module.valid()", "model_valid = model.valid()")
        out = copy.deepcopy(self)
        for hook in INFERENCE_COPY_HOOKS:
            hook(out)
        for _, module in out.named_modules():
            module._training = False
        for _, p in out.named_parameters():
            if p._restore_grad is None:
                p._restore_grad = p._require_grad
            p._require_grad = False
            p._value = _as_leaf(p._value, False)
        return out

    def train(self) -> "Module":
        """A training copy of an inference module (Burn's ``train()``): training mode on and
        parameters trainable again as they were before :meth:`valid`.

        The module itself is left as it was: keep the copy (``model = model.train()``); calling
        it as a statement warns (:class:`~ember.nn.discarded_copy.DiscardedCopyWarning`)."""
        warn_if_discarded("Module.train()", "model = model.train()")
        out = copy.deepcopy(self)
        for _, module in out.named_modules():
            module._training = True
        for _, p in out.named_parameters():
            if p._restore_grad is not None:
                p.set_require_grad(p._restore_grad and p.dtype.is_float)
                p._restore_grad = None
        return out

    def fork(self, device) -> "Module":
        """A copy on ``device`` whose parameters are fresh leaves with the same ids and flags
        (Burn's ``fork``); the original is left untouched."""
        return copy.deepcopy(self).to(device)

    def __deepcopy__(self, memo):
        out = object.__new__(type(self))
        memo[id(self)] = out
        for name, value in vars(self).items():
            if isinstance(value, Tensor):
                out.__dict__[name] = _copy_constant(value)
            else:
                out.__dict__[name] = copy.deepcopy(value, memo)
        return out

    # ---- display --------------------------------------------------------------------------------------
    def extra_repr(self) -> dict:
        """Fields shown inline by ``repr`` (default: public scalar attributes)."""
        out = {}
        for name, value in self._items():
            if isinstance(value, (bool, int, float, str)) or value is None:
                out[name] = value
            elif (
                isinstance(value, (tuple, list)) and value and all(isinstance(v, (int, float)) for v in value)
            ):
                out[name] = list(value)
        return out

    def __repr__(self) -> str:
        return "\n".join(self._repr_lines())

    def _repr_lines(self) -> list[str]:
        name = type(self).__name__
        fields = ", ".join(f"{k}: {_fmt(v)}" for k, v in self.extra_repr().items())
        count = f"params: {self.num_params()}"
        subs = [(n, v) for n, v in self._items() if _holds_module_items(v)]
        if not any(_holds_modules(v) for _, v in subs):  # a leaf layer prints on one line
            inner = f"{fields}, {count}" if fields else count
            return [f"{name} {{{inner}}}"]
        lines = [f"{name} {{"]
        for attr, value in subs:
            lines.extend(_indent(_value_lines(attr, value)))
        if fields:
            lines.append(f"  {fields}")
        lines.append(f"  {count}")
        lines.append("}")
        return lines


def _copy_constant(t: Tensor) -> Tensor:
    with no_grad():
        return t.detach().clone()


def _fmt(value) -> str:
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _indent(lines: list[str]) -> list[str]:
    return ["  " + line for line in lines]


def _value_lines(label: str, value) -> list[str]:
    if isinstance(value, Module):
        sub = value._repr_lines()
        return [f"{label}: {sub[0]}"] + sub[1:]
    if isinstance(value, Param):
        return [
            f"{label}: Param {{shape: {list(value.shape)}, dtype: {value.dtype}"
            f"{'' if value.is_require_grad() else ', frozen'}{', lora' if value._adapter else ''}}}"
        ]
    items = _container_items(value) or []
    kind = "{" if isinstance(value, dict) else "["
    lines = [f"{label}: {kind}"]
    for comp, item in items:
        if _holds_module_items(item):
            lines.extend(_indent(_value_lines(comp, item)))
    lines.append("}" if kind == "{" else "]")
    return lines


# Run on each inference copy that Module.valid() makes, before its parameters are frozen; an
# extension registers what it must do there (ember/nn/lora.py folds its adapters in).
INFERENCE_COPY_HOOKS: list[Callable[[Module], object]] = []


def register_methods(mixin: type) -> type:
    """Add the methods of ``mixin`` to :class:`Module`. The extensions that operate on modules
    (LoRA in ``lora.py`` and ``qlora.py``, records in ``module_record.py``) register theirs from
    their own files, so that this file imports none of them (see ``ember/_layers.py``)."""
    for name, value in vars(mixin).items():
        if name.startswith("__"):
            continue
        if name in vars(Module):
            raise TypeError(f"register_methods: Module already has a {name!r} ({mixin.__qualname__})")
        if callable(value):
            value.__qualname__ = f"Module.{name}"
        setattr(Module, name, value)
    return mixin


def _group_matches(group, path: str, param_id: ParamId) -> bool:
    if group is None:
        return True
    matches = getattr(group, "matches", None)
    if callable(matches):
        return bool(matches(path, param_id))
    if callable(group):
        return bool(group(path, param_id))
    raise TypeError(
        f"expected a parameter group with matches(path, param_id) or a callable, got {type(group).__name__}"
    )
