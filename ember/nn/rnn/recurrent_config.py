"""``RecurrentConfig``: what the configs of the recurrent layers (Rnn, Gru, Lstm and their
bidirectional forms) share.

Every one of them starts with ``d_input``, ``d_hidden`` and ``bias``, and takes its activations
as a config, a name or None (its default); an activation field declared with
:func:`activation_field` is normalised to an ``ActivationConfig`` when the config is built. A
bidirectional config builds its two directions from a unidirectional config of the same field
values (:meth:`RecurrentConfig.directions`).
"""

from __future__ import annotations

import dataclasses

from ember.nn.activation import ActivationConfig
from ember.nn.rnn.gate_controller import activation_config
from ember.record.config import Config

__all__ = ["RecurrentConfig", "activation_field"]


def activation_field(default: str):
    """A config field holding an activation, ``ActivationConfig(default)`` unless given."""
    return dataclasses.field(
        default_factory=lambda: ActivationConfig(default), metadata={"activation": default}
    )


class RecurrentConfig(Config):
    """Base of the recurrent layers' configs.

    Args:
        d_input: input features.
        d_hidden: hidden size.
        bias: biases in every gate's two linears.
    """

    d_input: int
    d_hidden: int
    bias: bool

    def __post_init__(self):
        for f in dataclasses.fields(self):
            if "activation" in f.metadata:
                setattr(self, f.name, activation_config(getattr(self, f.name), f.metadata["activation"]))

    def directions(self, cell_config: type[RecurrentConfig], device, dtype) -> tuple:
        """The forward and reverse cells of a bidirectional layer: two ``cell_config`` layers
        built from this config's fields of the same names, batch-first inside (the bidirectional
        layer converts the layout)."""
        own = {f.name for f in dataclasses.fields(self)}
        shared = {f.name: getattr(self, f.name) for f in dataclasses.fields(cell_config) if f.name in own}
        if "batch_first" in shared:
            shared["batch_first"] = True
        cell = cell_config(**shared)
        return cell.init(device, dtype), cell.init(device, dtype)
