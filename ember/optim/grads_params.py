"""``GradientsParams``: gradients keyed by ``ParamId`` (Burn's ``GradientsParams``).

``loss.backward()`` returns an :class:`ember.Gradients` keyed by graph nodes. An optimizer
needs them keyed by parameter: ``GradientsParams.from_grads(grads, model)`` walks the model
and moves each trainable parameter's gradient into a container keyed by its ``ParamId``,
which is what ``ModuleOptimizer.step`` consumes::

    grads = loss.backward()
    grads = GradientsParams.from_grads(grads, model)
    model = optim.step(lr, model, grads)
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ember.nn.param import Param, ParamId
from ember.optim.burn_len import BurnLen
from ember.tensor import Tensor
from ember.tensor.device import as_device
from ember.tensor.sparse import is_row_sparse

__all__ = ["GradientsParams"]


def _key(owner: str, param_id) -> ParamId:
    if isinstance(param_id, ParamId):
        return param_id
    if isinstance(param_id, int) and not isinstance(param_id, bool):
        return ParamId(param_id)
    pid = getattr(param_id, "id", None)  # a Param
    if isinstance(pid, ParamId):
        return pid
    raise TypeError(
        f"GradientsParams.{owner}: expected a ParamId (or int, or Param), got "
        f"{type(param_id).__name__} ({param_id!r})"
    )


def require_module(owner: str, module) -> None:
    """Raise TypeError unless ``module`` is an ``ember.nn.Module`` (anything with
    ``named_parameters()``), naming ``owner``, the call that was given it."""
    if not callable(getattr(module, "named_parameters", None)):
        raise TypeError(f"{owner}: `module` must be an ember.nn.Module, got {type(module).__name__}")


class GradientsParams(BurnLen):
    """A mapping ``ParamId -> gradient Tensor`` (or :class:`ember.RowSparse` for a table
    trained with row-sparse gradients, e.g. ``nn.EmbeddingBag(sparse=True)``).

    Iterating yields the ids; :meth:`items` yields ``(id, tensor)`` pairs. Ints and
    ``Param`` objects are accepted wherever an id is expected: ``grads[param]`` (a
    ``KeyError`` saying why when there is none), ``grads.get(param.id)``, ``param in grads``.
    """

    __slots__ = ("_grads",)

    def __init__(self):
        self._grads: dict[ParamId, Tensor] = {}

    # ---- construction ---------------------------------------------------------------------
    @classmethod
    def from_grads(cls, grads, module) -> "GradientsParams":
        """Move every trainable parameter's gradient out of ``grads`` (Burn consumes them).

        Parameters that do not require grad, or that received no gradient, are skipped.

        Args:
            grads: the :class:`ember.Gradients` returned by ``loss.backward()``.
            module: the ``ember.nn.Module`` whose parameters produced the loss.

        Raises:
            ValueError: ``grads`` holds gradients but none of them belongs to a trainable
                parameter of ``module`` (they come from another model, or from a copy of it,
                whose parameters are other tensors). :meth:`from_module` allows that.
        """
        out = cls._collect(grads, module, None, "from_grads")
        held = len(grads) if hasattr(grads, "__len__") else 0
        if not out and held:
            trainable = sum(1 for _, p in module.named_parameters() if p.is_require_grad())
            if trainable:
                raise ValueError(
                    f"GradientsParams.from_grads: `grads` holds {held} gradients but none of "
                    f"them belongs to a trainable parameter of the {type(module).__name__} given "
                    f"({trainable} trainable parameters): they come from the backward pass of another "
                    "model, or of a copy of this one (clone(), fork() and to() make new parameter "
                    "tensors), or were already taken out by an earlier from_grads. Pass the module "
                    "whose forward pass produced the loss; if the loss does not use this module, "
                    "GradientsParams.from_module(grads, module) returns an empty container instead"
                )
        return out

    @classmethod
    def from_module(cls, grads, module) -> "GradientsParams":
        """Same as :meth:`from_grads` (Burn's variant taking ``&mut Gradients``): the
        module's gradients are removed from ``grads``; others stay for another module.
        A module the loss did not use gives an empty container (no error)."""
        return cls._collect(grads, module, None, "from_module")

    @classmethod
    def from_params(cls, grads, module, params: Iterable) -> "GradientsParams":
        """Like :meth:`from_module`, restricted to the listed parameters.

        Args:
            grads: the :class:`ember.Gradients` of a backward pass.
            module: the module holding the parameters.
            params: ParamIds (or ints, or Params) to extract.
        """
        wanted = {_key("from_params", p) for p in params}
        return cls._collect(grads, module, wanted, "from_params")

    @classmethod
    def _collect(cls, grads, module, wanted, owner: str) -> "GradientsParams":
        remove = getattr(grads, "remove", None)
        if not callable(remove):
            raise TypeError(
                f"GradientsParams.{owner}: expected the ember.Gradients returned by "
                f"backward(), got {type(grads).__name__}"
            )
        require_module(f"GradientsParams.{owner}", module)
        out = cls()
        for _, param in module.named_parameters():
            if not param.is_require_grad() or (wanted is not None and param.id not in wanted):
                continue
            grad = remove(param.value)
            if grad is not None:
                out._grads[param.id] = grad
        return out

    # ---- access ---------------------------------------------------------------------------
    def get(self, param_id) -> Tensor | None:
        """The gradient of a parameter, or None. Use :meth:`remove` to take it once."""
        return self._grads.get(_key("get", param_id))

    def __getitem__(self, param_id) -> Tensor:
        """The gradient of a parameter (a Param, its ParamId or the id as an int).

        Raises:
            KeyError: there is none, with the likely reasons.
        """
        key = _key("__getitem__", param_id)
        grad = self._grads.get(key)
        if grad is None:
            frozen = isinstance(param_id, Param) and not param_id.is_require_grad()
            why = (
                "the parameter is frozen (is_require_grad() is False), so from_grads skips it"
                if frozen
                else "the parameter does not require grad, the loss does not depend on it, or its gradient "
                "was removed; from_grads collects the trainable parameters of the module it is given"
            )
            raise KeyError(
                f"GradientsParams: no gradient for parameter {key} ({len(self._grads)} held): {why}"
            )
        return grad

    def remove(self, param_id) -> Tensor | None:
        """Remove and return the gradient of a parameter (None if absent)."""
        return self._grads.pop(_key("remove", param_id), None)

    def register(self, param_id, tensor: Tensor) -> None:
        """Set (or replace) the gradient of a parameter.

        Args:
            param_id: the parameter's ParamId (an int or the Param itself is accepted).
            tensor: the gradient (a Tensor, or a :class:`ember.RowSparse` for a table with a
                row-sparse gradient); stored detached from any graph.
        """
        if is_row_sparse(tensor):
            self._grads[_key("register", param_id)] = tensor.detach()
            return
        if not isinstance(tensor, Tensor):
            raise TypeError(
                f"GradientsParams.register: expected an ember Tensor (or RowSparse), got "
                f"{type(tensor).__name__}"
            )
        if not tensor.dtype.is_float:
            raise TypeError(
                f"GradientsParams.register: a gradient must be a float tensor, got {tensor.dtype}"
            )
        self._grads[_key("register", param_id)] = tensor.detach()

    def __len__(self) -> int:
        return len(self._grads)

    def __contains__(self, param_id) -> bool:
        return _key("__contains__", param_id) in self._grads

    def __iter__(self) -> Iterator[ParamId]:
        return iter(list(self._grads))

    def ids(self) -> list[ParamId]:
        return list(self._grads)

    def items(self) -> list[tuple[ParamId, Tensor]]:
        return list(self._grads.items())

    # ---- devices --------------------------------------------------------------------------
    def to(self, device, module=None) -> "GradientsParams":
        """Move the gradients to ``device``, in place; returns ``self``.

        Args:
            device: a device or its name (``"cpu"``, ``"reference"``, ``"cuda:0"``).
            module: when given, only the gradients of this module's parameters are moved
                (Burn's ``to_device(device, module)``).
        """
        target = as_device(device)
        ids = None if module is None else {p.id for _, p in module.named_parameters()}
        for pid, grad in list(self._grads.items()):
            if (ids is None or pid in ids) and grad.device != target:
                self._grads[pid] = grad.to(target)
        return self

    def to_device(self, device, module=None) -> "GradientsParams":
        """Alias of :meth:`to` (Burn's name)."""
        return self.to(device, module)

    def __repr__(self) -> str:
        return f"GradientsParams({len(self._grads)} tensors)"
