"""``GradientsAccumulator``: sum gradients over several batches (Burn's ``GradientsAccumulator``).

Gradient accumulation runs several forward/backward passes and applies one optimizer step
with the **sum** of their gradients (lower the learning rate accordingly, as Burn's docs
say). Row-sparse gradients (:class:`ember.RowSparse`) sum to a row-sparse gradient (the
union of the rows), and to a dense one when a dense gradient is added::

    accumulator = GradientsAccumulator()
    for batch in batches:
        grads = GradientsParams.from_grads(model_loss(batch).backward(), model)
        accumulator.accumulate(model, grads)
    model = optim.step(lr, model, accumulator.grads())
"""

from __future__ import annotations

from ember.optim.grads_params import GradientsParams
from ember.tensor.grad_mode import no_grad

__all__ = ["GradientsAccumulator"]


class GradientsAccumulator:
    """Accumulates :class:`GradientsParams` by summing per ``ParamId``."""

    __slots__ = ("_count", "_grads")

    def __init__(self):
        self._grads = GradientsParams()
        self._count = 0

    def accumulate(self, module, grads: GradientsParams) -> None:
        """Add ``grads`` to the running sums, for the parameters of ``module``.

        Gradients of ids that are not parameters of ``module`` are dropped, as in Burn.

        Args:
            module: the model the gradients belong to.
            grads: gradients of one backward pass (consumed).

        Raises:
            ValueError: ``grads`` is not empty but none of its gradients belongs to a
                parameter of ``module`` (gradients of another model).
        """
        if not isinstance(grads, GradientsParams):
            raise TypeError(
                f"GradientsAccumulator.accumulate: expected GradientsParams, got {type(grads).__name__}"
            )
        held, named = len(grads), list(module.named_parameters())
        if held and not any(param.id in grads for _, param in named):
            raise ValueError(
                f"GradientsAccumulator.accumulate: `grads` holds {held} gradients but none of them belongs "
                f"to a parameter of the {type(module).__name__} given ({len(named)} parameters): they were "
                "taken from another model; take them from this one with "
                "GradientsParams.from_grads(loss.backward(), model)"
            )
        with no_grad():
            for _, param in named:
                new = grads.remove(param.id)
                if new is None:
                    continue
                old = self._grads.remove(param.id)
                if old is not None:
                    if old.shape != new.shape:
                        raise ValueError(
                            f"GradientsAccumulator.accumulate: gradient of parameter {param.id} has "
                            f"shape {list(new.shape)} but the accumulated one has {list(old.shape)}"
                        )
                    new = old + (new if new.device == old.device else new.to(old.device))
                self._grads.register(param.id, new)
        self._count += 1

    @property
    def num_accumulated(self) -> int:
        """How many times :meth:`accumulate` was called since the last :meth:`grads`."""
        return self._count

    def grads(self) -> GradientsParams:
        """Return the accumulated sums and reset the accumulator."""
        out, self._grads, self._count = self._grads, GradientsParams(), 0
        return out

    def __repr__(self) -> str:
        return f"GradientsAccumulator({len(self._grads)} tensors, {self._count} accumulated)"
