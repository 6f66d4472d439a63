"""``ModuleOptimizer``: optimize a whole module, per parameter group (Burn's ``ModuleOptimizer``).

Usage mirrors Burn::

    optim = AdamConfig().init()                                    # one group: ParamGroup.all()
    optim.with_group(ParamGroup.from_predicate("head"), SgdConfig(), None)  # last match wins
    grads = GradientsParams.from_grads(loss.backward(), model)
    model = optim.step(lr, model, grads)       # lr: a float or scheduler.step()'s rates

Behaviour (Burn's, unless noted):

* Every parameter that requires grad and has a gradient in ``grads`` is updated once (its
  gradient is consumed); frozen parameters and parameters without a gradient are left
  untouched (ember never updates a parameter that does not require grad).
* A parameter is routed to the **last** group that matches its ``(path, id)``; the first
  group, created from the optimizer given to the constructor, is ``ParamGroup.all()``. Once
  a parameter has state it stays with its group until ``with_group`` adds a group matching
  it (which resets its state) or a record is loaded.
* Per-parameter state is keyed by ``ParamId``. Parameters are updated **in place**: the
  parameter keeps its ``ParamId``, its tensor object (a leaf that requires grad) and, on
  ``cpu``, its array. On ``cpu`` each (group, dtype) runs **one** fused multi-tensor Numba
  kernel per step, with the parameter and state arrays packed once and reused while the set
  of parameters is unchanged; ``reference`` composes NumPy per tensor and rebinds the
  tensors to the new arrays; ``cuda`` runs multi-tensor kernels where they exist.
* A row-sparse gradient (:class:`ember.RowSparse`, from ``nn.EmbeddingBag``) goes to the
  optimizer's ``update_sparse``: SGD and Adam/AdamW update only its rows (see their
  docstrings for the exact/lazy semantics), the other optimizers densify. Its state is
  dense like any other and saves/loads the same way; clipping acts on its values.
* Gradient clipping is per group, before the update. A gradient on another device than its
  parameter is moved to the parameter (Burn moves the parameter); one of another float
  dtype is cast to the parameter's.
* ``to_record``/``load_record``/``save``/``load`` use Burn's record layout (see
  :mod:`ember.optim.optimizer_record`).
"""

from __future__ import annotations

import copy
import math
import numbers
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from ember.kernels.fusion.lazy import flush_all
from ember.nn.param import ParamId
from ember.nn.param_group import ParamGroup
from ember.optim.clipping import GradientClipping, as_clipping, clip_buckets
from ember.optim.grads_params import GradientsParams, require_module
from ember.optim.optimizer import Optimizer, OptimizerConfig
from ember.optim.optimizer_record import RANK_KEY, OptimizerRecord, SavedAsRecord
from ember.record import UInt
from ember.tensor.device import as_device
from ember.tensor.sparse import is_row_sparse

__all__ = ["ModuleOptimizer"]


class _Group:
    __slots__ = ("clipping", "group", "optimizer")

    def __init__(self, group, optimizer: Optimizer, clipping: GradientClipping | None):
        self.group, self.optimizer, self.clipping = group, optimizer, clipping


class _State:
    """One parameter's optimizer state: its group, path, rank, arrays and step count.
    ``device`` is None while the arrays are host (NumPy) arrays loaded from a record."""

    __slots__ = ("arrays", "device", "dtype", "group", "path", "rank", "steps")

    def __init__(
        self, group: int, path: str | None, rank: int, arrays: dict, steps: int, device=None, dtype=None
    ):
        self.group, self.path, self.rank = group, path, rank
        self.arrays, self.steps, self.device, self.dtype = arrays, steps, device, dtype


class _Entry:
    """A parameter to update; ``rows`` is set (int64 [K]) when its gradient is row-sparse,
    ``gradient`` then holding the values [K, d]."""

    __slots__ = ("gradient", "param", "path", "rows", "state")

    def __init__(self, path, param, grad, state):
        self.path, self.param, self.gradient, self.state = path, param, grad, state
        self.rows = None


class _Packed:
    """Packed arrays of a bucket, reused while its parameters and state arrays are the same."""

    __slots__ = ("ids", "param_handle", "params", "state_handles", "states")

    def __init__(self, ids, params, states, param_handle, state_handles):
        self.ids, self.params, self.states = ids, params, states
        self.param_handle, self.state_handles = param_handle, state_handles

    def valid(self, ids, params, states) -> bool:
        if ids != self.ids or any(a is not b for a, b in zip(params, self.params)):
            return False
        return all(
            a is not None and a is b
            for name, arrays in states.items()
            for a, b in zip(arrays, self.states[name])
        )


def _as_optimizer(owner: str, value) -> tuple[Optimizer, Any]:
    """A bare optimizer and the clipping of its config (None for a bare optimizer)."""
    if isinstance(value, Optimizer):
        return value, None
    if isinstance(value, OptimizerConfig):
        return value.build(), value.clipping()
    raise TypeError(
        f"{owner}: expected an optimizer config (e.g. AdamConfig()) or a bare optimizer "
        f"(AdamConfig().build()), got {type(value).__name__} ({value!r})"
    )


def _group_of(owner: str, group, optimizer, grad_clipping) -> "_Group":
    """A group's optimizer and clipping. The clipping is set in one place: the config's field,
    or ``grad_clipping`` for a bare optimizer or a config without the field (Muon's)."""
    optim, config_clipping = _as_optimizer(owner, optimizer)
    if grad_clipping is not None and config_clipping is not None:
        # Both: the argument has always won; one release of warning before it is refused.
        warnings.warn(
            f"{owner}: gradient clipping given twice, in {type(optimizer).__name__}'s config "
            f"({config_clipping!r}) and as grad_clipping ({grad_clipping!r}); grad_clipping is "
            "used. Set it in one place: passing both is deprecated and will be an error in the "
            "next release",
            DeprecationWarning,
            stacklevel=3,
        )
    clipping = grad_clipping if grad_clipping is not None else config_clipping
    return _Group(group, optim, as_clipping(owner, clipping))


def _lr_resolver(lr) -> Callable[[ParamId, str], float]:
    if isinstance(lr, numbers.Real) and not isinstance(lr, bool):
        value = float(lr)
        if not math.isfinite(value):
            raise ValueError(f"ModuleOptimizer.step: the learning rate must be finite, got {lr!r}")
        return lambda pid, path: value
    per_param = getattr(lr, "lr_from_param", None)
    if callable(per_param):

        def resolve(pid, path):
            value = float(per_param(pid, path))
            if not math.isfinite(value):
                raise ValueError(f"ModuleOptimizer.step: the learning rate of '{path}' is {value!r}")
            return value

        return resolve
    raise TypeError(
        "ModuleOptimizer.step: `lr` must be a float or a ModuleLearningRate (what "
        f"ModuleLrScheduler.step() returns), got {type(lr).__name__} ({lr!r})"
    )


class ModuleOptimizer(SavedAsRecord):
    """Applies bare optimizers to a module's parameters, routed by :class:`ParamGroup`.

    Args:
        optimizer: the optimizer of the first group, ``ParamGroup.all()``: a config
            (``AdamConfig()``, whose clipping field is the group's clipping) or a bare
            optimizer (``AdamConfig().build()``).
        grad_clipping: clipping of the first group (a ``GradientClippingConfig`` or
            ``GradientClipping``) when ``optimizer`` carries none (a bare optimizer, Muon's
            config), or None. Set in both places, it wins with a ``DeprecationWarning``.
    """

    _record_type = OptimizerRecord

    def __init__(self, optimizer, grad_clipping=None):
        self._groups: list[_Group] = [
            _group_of("ModuleOptimizer", ParamGroup.all(), optimizer, grad_clipping)
        ]
        self._states: dict[ParamId, _State] = {}
        self._packed: dict[tuple, _Packed] = {}

    # ---- groups ---------------------------------------------------------------------------
    def with_group(self, group, optimizer, grad_clipping=None) -> "ModuleOptimizer":
        """Optimize the parameters matching ``group`` with their own optimizer; returns ``self``.

        The last group that matches a parameter wins. The state of every parameter the new
        group matches is reset (it may belong to another optimizer type).

        Args:
            group: a :class:`~ember.nn.ParamGroup` (anything with ``matches(path, param_id)``).
            optimizer: a config or a bare optimizer.
            grad_clipping: this group's clipping when ``optimizer`` carries none (a bare
                optimizer, Muon's config); None uses the config's own, if any. Set in both
                places, it wins with a ``DeprecationWarning``.
        """
        if not callable(getattr(group, "matches", None)):
            raise TypeError(
                f"ModuleOptimizer.with_group: `group` needs a matches(path, param_id) "
                f"method (an ember.nn.ParamGroup), got {type(group).__name__}"
            )
        self._groups.append(_group_of("ModuleOptimizer.with_group", group, optimizer, grad_clipping))
        self._states = {pid: st for pid, st in self._states.items() if not group.matches(st.path, pid)}
        self._packed.clear()
        return self

    def with_grad_clipping(self, grad_clipping) -> "ModuleOptimizer":
        """Set the gradient clipping of the first group; returns ``self`` (Burn's behaviour)."""
        self._groups[0].clipping = as_clipping("ModuleOptimizer.with_grad_clipping", grad_clipping)
        return self

    def has_gradient_clipping(self) -> bool:
        """Whether any group clips its gradients."""
        return any(g.clipping is not None for g in self._groups)

    def grad_clipping(self) -> GradientClipping | None:
        """The first group's clipping."""
        return self._groups[0].clipping

    @property
    def groups(self) -> list[tuple[Any, Optimizer, GradientClipping | None]]:
        """``(group, optimizer, clipping)`` for every group, the ``all()`` fallback first."""
        return [(g.group, g.optimizer, g.clipping) for g in self._groups]

    def _route(self, pid: ParamId, path: str | None) -> int:
        for index in range(len(self._groups) - 1, -1, -1):
            if self._groups[index].group.matches(path, pid):
                return index
        return 0  # unreachable: group 0 is all()

    # ---- stepping -------------------------------------------------------------------------
    def step(self, lr, module, grads: GradientsParams):
        """Update every trainable parameter of ``module`` that has a gradient in ``grads``.

        Args:
            lr: the learning rate: a float, or a ``ModuleLearningRate`` (from
                ``ModuleLrScheduler.step()``) giving each parameter its group's rate.
            module: the model (an ``ember.nn.Module``); updated in place.
            grads: gradients keyed by ParamId; the ones used are removed from it.

        Returns:
            ``module``.

        Raises:
            ValueError: ``grads`` is not empty but none of its gradients belongs to a parameter
                of ``module`` (gradients of another model). An empty ``grads``, or one holding
                gradients of frozen parameters only, is a step that updates nothing.
        """
        if not isinstance(grads, GradientsParams):
            raise TypeError(
                f"ModuleOptimizer.step: `grads` must be GradientsParams (use "
                f"GradientsParams.from_grads(loss.backward(), model)), got {type(grads).__name__}"
            )
        require_module("ModuleOptimizer.step", module)
        # the fused updates write parameters and states in place: compute every pending fusion
        # value first, or one reading a parameter would see its updated value
        flush_all("optimizer step")
        lr_of = _lr_resolver(lr)
        named = list(module.named_parameters())
        selected = [(path, param) for path, param in named if param.is_require_grad() and param.id in grads]
        if not selected and len(grads) and not any(param.id in grads for _, param in named):
            trainable = sum(1 for _, param in named if param.is_require_grad())
            raise ValueError(
                f"ModuleOptimizer.step: `grads` holds {len(grads)} gradients but none of them belongs "
                f"to a parameter of the {type(module).__name__} being stepped ({trainable} trainable of "
                f"{len(named)} parameters), so nothing would be updated: they were taken from another "
                "model, whose parameters have other ParamIds (e.g. one built again with init()). Take "
                "them from the model you step: GradientsParams.from_grads(loss.backward(), model)"
            )
        for path, param in selected:  # check every gradient before updating anything
            grad = grads.get(param.id)
            if grad.shape != param.value.shape:
                raise ValueError(
                    f"ModuleOptimizer.step: the gradient of '{path}' has shape "
                    f"{list(grad.shape)} but the parameter has shape {list(param.value.shape)}"
                )
        per_group: dict[int, list[_Entry]] = {}
        for path, param in selected:
            grad = grads.remove(param.id)
            state = self._states.get(param.id)
            index = state.group if state is not None else self._route(param.id, path)
            per_group.setdefault(index, []).append(_Entry(path, param, grad, state))
        for index, entries in per_group.items():
            self._step_group(index, entries, lr_of)
        return module

    def _step_group(self, index: int, entries: list[_Entry], lr_of) -> None:
        group = self._groups[index]
        buckets: dict[tuple, list[_Entry]] = {}
        for e in entries:
            value, grad = e.param.value, e.gradient
            if grad.device is not value.device and grad.device != value.device:
                grad = grad.to(value.device)
            if grad.dtype is not value.dtype:
                grad = grad.to(value.dtype)
            if is_row_sparse(grad):  # clipping sees the values: same norm as the dense gradient
                e.rows, e.gradient = grad.indices._data, grad.values._data
            else:
                e.gradient = grad._data
            buckets.setdefault((value.device, value.dtype), []).append(e)
        keys = list(buckets)
        if group.clipping is not None:
            clipped = clip_buckets(
                group.clipping, [(k[0].backend, [e.gradient for e in buckets[k]]) for k in keys]
            )
            for key, arrays in zip(keys, clipped):
                for e, g in zip(buckets[key], arrays):
                    e.gradient = g
        for key in keys:
            self._step_bucket(index, group.optimizer, key, buckets[key], lr_of)

    def _step_bucket(self, index: int, optim: Optimizer, key: tuple, entries: list[_Entry], lr_of) -> None:
        device, _ = key
        backend = device.backend
        names = optim.state_names()
        fresh, seen, tensors = [], set(), {}
        for e in entries:
            value = e.param.value
            other = tensors.setdefault(id(value), e.path)
            if other != e.path:
                raise ValueError(
                    f"ModuleOptimizer.step: parameters '{other}' and '{e.path}' share one tensor, "
                    "which would be updated twice; tie weights by reusing one Param instead"
                )
            if e.state is None:
                e.state = self._states[e.param.id] = _State(index, e.path, value.ndim, {}, 0)
            e.state.path = e.path
            fresh.append(any(name not in e.state.arrays for name in names))
            self._place_state(e, backend, device, names)
            # the in-place kernels need private, contiguous, writeable parameter arrays
            owned = backend.optim_own(value._data, copy=id(value._data) in seen)
            seen.add(id(owned))
            if owned is not value._data:
                value._data = owned
        dense = [(e, is_fresh) for e, is_fresh in zip(entries, fresh) if e.rows is None]
        for e, is_fresh in zip(entries, fresh):
            if e.rows is not None:  # row-sparse: one lazy update per table, never packed
                new_param, new_state = optim.update_sparse(
                    backend,
                    e.param.value._data,
                    e.rows,
                    e.gradient,
                    {name: e.state.arrays[name] for name in names},
                    lr_of(e.param.id, e.path),
                    e.state.steps + 1,
                    is_fresh,
                )
                self._finish(e, new_param, {name: new_state[name] for name in names})
        if not dense:
            return
        entries, fresh = [e for e, _ in dense], [f for _, f in dense]
        ids = tuple(e.param.id for e in entries)
        params = [e.param.value._data for e in entries]
        states = {name: [e.state.arrays[name] for e in entries] for name in names}
        packed = self._packed.get((index,) + key)
        if packed is None or not packed.valid(ids, params, states):
            packed = _Packed(
                ids,
                params,
                states,
                backend.optim_pack(params),
                {name: backend.optim_pack(arrays) for name, arrays in states.items()},
            )
            self._packed[(index,) + key] = packed
        lrs = [lr_of(e.param.id, e.path) for e in entries]
        steps = [e.state.steps + 1 for e in entries]
        new_params, new_states = optim.update(
            backend,
            packed.param_handle,
            [e.gradient for e in entries],
            packed.state_handles,
            lrs,
            steps,
            fresh,
        )
        for i, e in enumerate(entries):
            self._finish(e, new_params[i], {name: new_states[name][i] for name in names})

    @staticmethod
    def _finish(e: _Entry, new_param, new_states: dict) -> None:
        value = e.param.value
        if new_param is not value._data:  # a functional backend returned new arrays
            value._data = new_param
        e.state.arrays.update(new_states)
        e.state.steps += 1
        e.gradient = e.rows = None

    def _place_state(self, e: _Entry, backend, device, names) -> None:
        """Create missing state arrays (zeros) and move loaded ones to the parameter's device
        and dtype."""
        st, value = e.state, e.param.value
        if st.device is device and st.dtype is value.dtype and len(st.arrays) == len(names):
            return  # placed by an earlier step; only this optimizer has written the arrays since
        for name in names:
            array = st.arrays.get(name)
            if array is None:
                st.arrays[name] = backend.full(value.shape, 0.0, value.dtype)
                continue
            if st.device != device:
                host = array if st.device is None else st.device.backend.to_host(array)
                array = backend.from_host(host)
            if tuple(array.shape) != tuple(value.shape):
                raise ValueError(
                    f"ModuleOptimizer.step: the optimizer state '{name}' of parameter '{e.path}' "
                    f"(id {e.param.id}) has shape {list(array.shape)} but the parameter has shape "
                    f"{list(value.shape)}; was the optimizer record saved for another model?"
                )
            if backend.dtype_of(array) != value.dtype:
                array = backend.cast(array, value.dtype)
            st.arrays[name] = backend.optim_own(array)
        st.device, st.dtype = device, value.dtype
        st.rank = value.ndim

    # ---- inspection -------------------------------------------------------------------------
    def __len__(self) -> int:
        """Number of parameters with state."""
        return len(self._states)

    def state_of(self, param_id) -> dict | None:
        """A parameter's state: its record leaves as NumPy copies, plus ``"steps"`` (the
        number of updates applied) and ``"path"``; None when it has no state.

        Args:
            param_id: a ParamId (an int or the Param itself is accepted).
        """
        pid = getattr(param_id, "id", param_id)
        st = self._states.get(pid if isinstance(pid, ParamId) else ParamId(pid))
        if st is None:
            return None
        out = {name: _host_copy(st, array) for name, array in st.arrays.items()}
        out["steps"] = st.steps
        out["path"] = st.path
        return out

    def clone(self) -> "ModuleOptimizer":
        """An independent copy: same groups, copied state."""
        out = object.__new__(ModuleOptimizer)
        out._groups = [_Group(g.group, g.optimizer, g.clipping) for g in self._groups]
        out._states = {
            pid: _State(
                st.group,
                st.path,
                st.rank,
                {n: copy.deepcopy(a) for n, a in st.arrays.items()},
                st.steps,
                st.device,
                st.dtype,
            )
            for pid, st in self._states.items()
        }
        out._packed = {}
        return out

    # ---- records ----------------------------------------------------------------------------
    def to_record(self) -> OptimizerRecord:
        """The state as an :class:`OptimizerRecord` (tensors ``"{id}.{leaf}"``, scalars
        ``"{id}.__rank"`` and counters, metadata id -> path), copied to host memory."""
        tensors, ids, scalars, paths = {}, {}, {}, {}
        reference = as_device("reference").backend
        for pid in sorted(self._states, key=int):
            st = self._states[pid]
            optim = self._groups[st.group].optimizer
            prefix = str(int(pid))
            scalars[f"{prefix}.{RANK_KEY}"] = UInt(st.rank)
            if optim.counter is not None:
                scalars[f"{prefix}.{optim.counter}"] = UInt(st.steps)
            if st.path is not None:
                paths[prefix] = st.path
            backend = reference if st.device is None else st.device.backend
            leaves = dict(st.arrays)
            if all(name in leaves for name in optim.state_names()):
                leaves.update(optim.record_extras(backend, st.arrays))
            for name, array in leaves.items():
                tensors[f"{prefix}.{name}"] = _host_copy(st, array)
                ids[f"{prefix}.{name}"] = int(pid)
        return OptimizerRecord(tensors, scalars, paths, ids)

    def load_record(self, record: OptimizerRecord) -> "ModuleOptimizer":
        """Replace the state with ``record``'s; returns ``self``.

        Each parameter is routed to the last group matching its recorded path and id. A
        parameter whose state cannot be rebuilt (a required leaf missing) starts afresh,
        as Burn. State arrays move to their parameter's device on the next step.

        Args:
            record: an :class:`OptimizerRecord` (from :meth:`to_record`, a file, or Burn).
        """
        if not isinstance(record, OptimizerRecord):
            raise TypeError(
                f"ModuleOptimizer.load_record: expected an OptimizerRecord, got {type(record).__name__}"
            )
        ranks: dict[int, int] = {}
        suffix = f".{RANK_KEY}"
        for name, value in record.scalars.items():
            head = name[: -len(suffix)] if name.endswith(suffix) else ""
            if head.isdigit() and isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                ranks[int(head)] = int(value)
        leaves: dict[int, dict] = {}
        for name, array in record.tensors.items():
            pid = record.param_ids[name]
            prefix = f"{pid}."
            leaf = name[len(prefix) :] if name.startswith(prefix) else name.partition(".")[2]
            leaves.setdefault(pid, {})[leaf] = array
            ranks.setdefault(pid, array.ndim)
        states = {}
        for pid_value, rank in ranks.items():
            pid = ParamId(pid_value)
            path = record.paths.get(str(pid_value))
            index = self._route(pid, path)
            optim = self._groups[index].optimizer
            count = record.scalars.get(f"{pid_value}.{optim.counter}") if optim.counter else None
            rebuilt = optim.state_from_record(leaves.get(pid_value, {}), count)
            if rebuilt is not None:
                arrays, steps = rebuilt
                # private copies: the in-place kernels must not write into the record's arrays
                arrays = {name: np.array(array, copy=True) for name, array in arrays.items()}
                states[pid] = _State(index, path, rank, arrays, steps)
        self._states = states
        self._packed.clear()
        return self

    def __repr__(self) -> str:
        groups = ", ".join(
            f"{g.group!r}: {g.optimizer!r}" + (f" + {g.clipping!r}" if g.clipping else "")
            for g in self._groups
        )
        return f"ModuleOptimizer([{groups}], {len(self._states)} parameter states)"


def _host_copy(st: _State, array):
    """A NumPy copy of a state array (host arrays of loaded states included)."""
    host = array if st.device is None else st.device.backend.to_host(array)
    return np.array(host, copy=True)


def _init(self: OptimizerConfig) -> ModuleOptimizer:
    """A ``ModuleOptimizer`` with one group, ``ParamGroup.all()``, running this optimizer
    with this config's gradient clipping."""
    return ModuleOptimizer(self.build(), self.clipping())


# Every optimizer config's init(), added from here: optimizer.py, below this file, cannot import it.
_init.__qualname__ = "OptimizerConfig.init"
OptimizerConfig.init = _init
