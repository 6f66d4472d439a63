"""The optimizer contract: a bare per-group ``Optimizer`` and its ``OptimizerConfig``.

Mirrors Burn's split: an ``XxxConfig`` (an ember ``Config``) holds the hyper-parameters;
``config.build()`` gives the bare :class:`Optimizer`, which updates the parameters of one
group, and ``config.init()`` gives a :class:`~ember.optim.ModuleOptimizer` that applies it
to every parameter of a module (with the config's gradient clipping).

Unlike Burn's per-tensor ``Optimizer::step``, :meth:`Optimizer.update` receives a whole
bucket of parameters (same group, device and dtype) and calls **one** multi-tensor backend
composite (``backend.adam_update`` ...), so the ``cpu`` backend runs one fused Numba kernel
per group per step. Per-parameter state is a set of named arrays — named as the leaves of
Burn's optimizer record (``"momentum.moment_1"``) — plus a step counter.
"""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Mapping, Sequence

from ember._deprecation import renamed_method
from ember.kernels.arg_checks import finite_scalar
from ember.record.config import Config

__all__ = ["Optimizer", "OptimizerConfig", "WeightDecayConfig"]


class WeightDecayConfig(Config):
    """L2 weight decay added to the gradient: ``g ← g + penalty·θ`` (Burn's ``WeightDecayConfig``).

    Args:
        penalty: the L2 coefficient λ.
    """

    penalty: float


def decay_penalty(owner: str, decay) -> float:
    """The L2 penalty of an optional :class:`WeightDecayConfig` (0 when None)."""
    if decay is None:
        return 0.0
    if not isinstance(decay, WeightDecayConfig):
        raise TypeError(
            f"{owner}: `weight_decay` must be a WeightDecayConfig or None, got "
            f"{type(decay).__name__} ({decay!r})"
        )
    return finite_scalar(owner, "weight_decay.penalty", decay.penalty)


class Optimizer(abc.ABC):
    """A bare optimizer: updates one bucket of parameters of a group.

    Subclasses define :meth:`state_names` (state arrays per parameter, created as zeros),
    optionally :attr:`counter` (the record name of the per-parameter step count) and
    :attr:`required_states` (state arrays a record must hold for the state to be restored),
    and :meth:`update`.
    """

    counter: str | None = None
    required_states: tuple[str, ...] = ()

    @abc.abstractmethod
    def state_names(self) -> tuple[str, ...]:
        """Names of the per-parameter state arrays, as leaves of Burn's optimizer record."""

    @abc.abstractmethod
    def update(
        self,
        backend,
        params,
        grads: list,
        states: Mapping[str, object],
        lr: Sequence[float],
        steps: Sequence[int],
        fresh: Sequence[bool],
    ):
        """Apply one step to a bucket of parameters (same device and dtype).

        Args:
            backend: the bucket's backend.
            params: parameter arrays (a list, or a handle from ``backend.optim_pack``).
            grads: gradient arrays, same shapes and dtype.
            states: state name -> arrays (list or handle), one per parameter.
            lr: learning rate per parameter.
            steps: 1-based step number per parameter (previous count + 1).
            fresh: per parameter, whether its state arrays were just created (zeros).

        Returns:
            ``(new_params, {state name: new arrays})``, lists in the bucket's order.
        """

    def update_sparse(
        self, backend, param, rows, values, states: Mapping[str, object], lr: float, step: int, fresh: bool
    ):
        """Apply one step to a table whose gradient is row-sparse (:class:`ember.RowSparse`).

        The default **densifies**: it builds the dense ``[n, d]`` gradient (zeros outside
        ``rows``) and runs :meth:`update`, so the result is exactly the dense update and the
        step costs the whole table. Optimizers with a lazy rule (SGD, Adam, AdamW) override
        it to touch only ``rows``.

        Args:
            backend: the parameter's backend.
            param: the table array ``[n, d]``.
            rows: int64 ``[K]`` row numbers, strictly increasing.
            values: gradient rows ``[K, d]`` (already clipped).
            states: state name -> array ``[n, d]``.
            lr: learning rate.
            step: 1-based step number of this parameter.
            fresh: whether its state arrays were just created (zeros).

        Returns:
            ``(new_param, {state name: new array})``.
        """
        dense = backend.rows_to_dense(rows, values, param.shape[0])
        new_p, new_states = self.update(
            backend, [param], [dense], {n: [a] for n, a in states.items()}, [lr], [step], [fresh]
        )
        return new_p[0], {n: arrays[0] for n, arrays in new_states.items()}

    def record_extras(self, backend, arrays: Mapping[str, object]) -> dict[str, object]:
        """Derived tensors written to records for Burn compatibility (ignored on load)."""
        return {}

    def state_from_record(self, leaves: Mapping[str, object], count) -> tuple[dict, int] | None:
        """Rebuild a parameter's state from record leaves.

        Args:
            leaves: state name -> array found in the record for this parameter.
            count: the step-count scalar (None when absent).

        Returns:
            ``(arrays, step_count)``, or None when a required leaf is missing (the parameter
            then starts afresh, as Burn).
        """
        if any(name not in leaves for name in self.required_states):
            return None
        if self.counter is not None:
            if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                return None
            steps = int(count)
        else:
            steps = 0
        return {n: leaves[n] for n in self.state_names() if n in leaves}, steps

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({fields})"


class OptimizerConfig(Config):
    """Base of the optimizer configs: ``build()`` -> bare :class:`Optimizer`,
    ``init()`` -> :class:`~ember.optim.ModuleOptimizer` with the config's clipping."""

    _clipping_field = "grad_clipping"  # Burn names it `gradient_clipping` in SgdConfig only
    # The bare optimizer build() makes, and whether the config's `weight_decay` is a
    # WeightDecayConfig (given to the optimizer as its L2 penalty) or already a float.
    # Not annotated: an annotation would make them dataclass fields.
    _optimizer = None
    _weight_decay_config = False

    def build(self) -> Optimizer:
        """Validate the hyper-parameters and return the bare optimizer, built from the
        fields other than the clipping (the optimizer's parameters have the fields' names)."""
        if self._optimizer is None:
            raise NotImplementedError(f"{type(self).__name__} does not implement build()")
        args = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        args.pop(self._clipping_field, None)  # MuonConfig has none
        if self._weight_decay_config:
            args["weight_decay"] = decay_penalty(type(self).__name__, self.weight_decay)
        return self._optimizer(**args)

    # init() -> ModuleOptimizer is added by ember/optim/module_optimizer.py, which builds on this file.

    def clipping(self):
        """The configured ``GradientClippingConfig`` (or None), whatever the field's name."""
        return getattr(self, self._clipping_field)

    def with_grad_clipping(self, clipping):
        """Copy with gradient clipping set (works whichever name the field has: ``SgdConfig``'s
        is Burn's ``gradient_clipping``, the others' ``grad_clipping``)."""
        return dataclasses.replace(self, **{self._clipping_field: clipping})

    with_gradient_clipping = renamed_method("with_gradient_clipping", "with_grad_clipping")
