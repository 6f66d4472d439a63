"""QLoRA: LoRA adapters over quantized frozen weights (Burn's ``QLora`` reparameterizer).

``apply_qlora(module, QLora(Lora(rank, alpha), Quantizer(...)))`` does what Burn's
``Module::apply_qlora`` does: it first quantizes every float parameter the quantizer's group
matches (all of them by default — biases and norm weights too, as in Burn), then applies
LoRA exactly as :func:`ember.nn.lora.apply_lora`: every float parameter is frozen, and each
rank-2 one in the LoRA group gets full-precision factors ``a: [d_in, r]``, ``b: [r, d_out] = 0``.
The effective weight is ``dequantize(base) + alpha/r · (a @ b)``, dequantized on the fly
directly to the factors' dtype at each ``Param.val()``.

A quantized parameter stores the int32 values (one per element, or packed into words with
``QuantStore.PackedU32``) of :mod:`ember.nn.quantize` under its own path; its scales sit at ``<path>.lora.quant.scales`` (adapted) or ``<path>.quant.scales``
(quantized without an adapter), the factors at ``<path>.lora.a`` / ``.lora.b`` as for LoRA.
Records round-trip through ``.bpk`` files into a model prepared with the same ``QLora``
settings. :func:`ember.nn.lora.merge_lora` (and ``Module.valid()``) dequantizes and folds:
the merged weight is ``dequantize(base) + delta`` in float, and trainability comes back.

One departure from Burn: factors default to the weight's dtype *before* quantization (Burn
has no float dtype left for a packed base and falls back to the default float).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ember.nn.lora import Lora, LoraAdapter, _check_no_adapters, _make_adapter
from ember.nn.module import Module, _group_matches, register_methods
from ember.nn.param import Param, _as_leaf
from ember.nn.quantize import QuantizedStorage, Quantizer
from ember.tensor.tensor import Tensor

__all__ = ["QLora", "QLoraAdapter", "apply_qlora"]


class QLoraAdapter(LoraAdapter):
    """LoRA factors over a quantized base: ``dequantize(base) + scale · (a @ b)``.

    Args:
        a: the down-projection ``[d_in, rank]`` (trainable).
        b: the up-projection ``[rank, d_out]`` (trainable).
        scale: the factor applied to ``a @ b`` (``alpha / rank``).
        quant: how the quantized base dequantizes (its scales are saved under ``quant.scales``).
    """

    def __init__(self, a: Param, b: Param, scale: float, quant: QuantizedStorage):
        super().__init__(a, b, scale)
        self.quant = quant

    def materialize(self, base: Tensor) -> Tensor:
        """``dequantize(base) + delta``, the base dequantized straight to the factors' dtype."""
        delta = self.delta()
        base = self.quant.dequantize(base, delta.dtype)
        return base + delta.reshape(base.shape)

    def extra_repr(self) -> dict:
        return {**super().extra_repr(), "value": self.quant.scheme.value.name}


@dataclass
class QLora:
    """QLoRA settings for :func:`apply_qlora` (Burn's ``QLora::new(lora, quantizer)``).

    Args:
        lora: the LoRA settings (rank, alpha, init_std, dtype, param_group).
        quantizer: which parameters are quantized and how (default: all, Q8F per tensor).
    """

    lora: Lora
    quantizer: Quantizer = field(default_factory=Quantizer)

    def __post_init__(self):
        if not isinstance(self.lora, Lora):
            raise TypeError(f"QLora: lora must be an nn.Lora, got {type(self.lora).__name__}")
        if not isinstance(self.quantizer, Quantizer):
            raise TypeError(f"QLora: quantizer must be an nn.Quantizer, got {type(self.quantizer).__name__}")


def apply_qlora(module: Module, qlora: QLora) -> Module:
    """Quantize the matching float parameters of ``module``, freeze every float parameter and
    attach LoRA adapters to the rank-2 ones in the LoRA group. In place; returns the module.

    Args:
        module: the model.
        qlora: the settings.

    Raises:
        ValueError: the module already carries adapters or quantized parameters, or a
            parameter cannot be quantized (NaN/inf values, a shape that is not a whole number
            of blocks); nothing is changed then.
    """
    if not isinstance(qlora, QLora):
        raise TypeError(f"apply_qlora: expected a QLora, got {type(qlora).__name__}")
    params = list(module.named_parameters())
    _check_no_adapters("apply_qlora", params)
    lora, quantizer = qlora.lora, qlora.quantizer
    plans = []
    for path, p in params:  # quantize everything first, so an error leaves the module as it was
        if not p.dtype.is_float:
            continue
        quantized = None
        if _group_matches(quantizer.param_group, path, p.id):
            try:
                quantized = QuantizedStorage.quantize(p._value, quantizer.scheme, quantizer.calibration)
            except ValueError as exc:
                raise ValueError(f"apply_qlora: parameter '{path}' {list(p.shape)}: {exc}") from None
        plans.append((path, p, quantized))
    for path, p, quantized in plans:
        p._lora_restore_grad = p.is_require_grad()  # merge_lora gives it back
        p.set_require_grad(False)
        adapter = None
        if p.ndim == 2 and _group_matches(lora.param_group, path, p.id):
            adapter = _make_adapter(lora, p._value)  # factors in the pre-quantization dtype
        if quantized is None:
            p._adapter = adapter
            continue
        stored, storage = quantized
        p._value = _as_leaf(stored, False)
        p._adapter = (
            storage if adapter is None else QLoraAdapter(adapter.a, adapter.b, adapter.scale, storage)
        )
    return module


@register_methods
class _QLoraMethods:
    """Module's QLoRA method, registered from here: Module itself knows nothing of QLoRA."""

    def apply_qlora(self, qlora) -> "Module":
        """Quantize the frozen weights and attach LoRA adapters (see
        :func:`ember.nn.qlora.apply_qlora`). In place."""
        return apply_qlora(self, qlora)
