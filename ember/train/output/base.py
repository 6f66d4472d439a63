"""What every step output shares: ``sync()`` (detach) and ``adapt(InputType)`` (Burn's ``Adaptor``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import ember
from ember.train.metric._array import detach, shape_of

__all__ = ["AdaptableOutput", "check_rank"]


def check_rank(output: str, field: str, value: Any, rank: int, layout: str) -> tuple[int, ...]:
    """The shape of ``value``, after checking it has ``rank`` dimensions.

    Raises:
        ValueError: naming the output type, the field, the expected layout and the shape.
    """
    shape = shape_of(value)
    if len(shape) != rank:
        raise ValueError(f"{output}: `{field}` must be {layout}, got shape {list(shape)}")
    return shape


class AdaptableOutput:
    """Mixin for the output dataclasses.

    Subclasses list their conversions in :meth:`_adaptors` (``{InputType: method}``).
    """

    _tensor_fields: ClassVar[tuple[str, ...]] = ()

    def _adaptors(self) -> dict[type, Callable[[], Any]]:
        raise NotImplementedError

    def adapt(self, input_type: type) -> Any:
        """This output as a metric input.

        Args:
            input_type: the input class a metric asked for (``AccuracyInput``, ``LossInput``…).

        Raises:
            TypeError: this output cannot provide ``input_type``; lists what it can provide.
        """
        adaptors = self._adaptors()
        convert = adaptors.get(input_type)
        if convert is None:
            wanted = getattr(input_type, "__name__", repr(input_type))
            offered = ", ".join(t.__name__ for t in adaptors)
            raise TypeError(
                f"{type(self).__name__} cannot be adapted to {wanted}; it provides "
                f"{offered}. Use another output type or implement adapt() for {wanted}"
            )
        return convert()

    def sync(self):
        """A copy whose tensors are detached from the autodiff graph (Burn's ``ItemLazy::sync``),
        so the metrics neither keep the graph alive nor record anything.

        Returns:
            An output of the same type.
        """
        with ember.no_grad():
            detached = {name: detach(getattr(self, name)) for name in self._tensor_fields}
        return dataclasses.replace(self, **detached)


@dataclass
class LossOutputTargets(AdaptableOutput):
    """The ``loss``, ``output`` and ``targets`` fields of the classification and regression outputs.

    Args:
        loss: the loss.
        output: ``[B, ...]`` scores or predictions.
        targets: the true labels or values.
    """

    loss: Any
    output: Any
    targets: Any

    _tensor_fields = ("loss", "output", "targets")

    def _check_same_shape(self, layout: str, target_layout: str) -> None:
        """Check that ``output`` and ``targets`` are 2-D (``layout``) and of the same shape.

        Raises:
            ValueError: naming the output type, the field and the shapes.
        """
        name = type(self).__name__
        shape = check_rank(name, "output", self.output, 2, layout)
        tshape = check_rank(name, "targets", self.targets, 2, target_layout)
        if tuple(shape) != tuple(tshape):
            raise ValueError(
                f"{name}: output {list(shape)} and targets {list(tshape)} must have the same shape"
            )
