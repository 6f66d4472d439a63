"""Token packing under ONNX export.

A :class:`~ember.nn.TransformerEncoder` given a padding mask runs its layers on the real tokens
only (``ember.nn.token_packing``): it picks their rows from the mask's values on the host, which
no graph can record, and its padded output positions come out as 0. The export runs such an
encoder on every position instead (``skip_padding`` off, as Burn computes) and then zeroes the
padded positions as the packed path leaves them: the same output, from ops a graph can hold.
"""

from __future__ import annotations

from ember.nn.transformer import TransformerEncoder, TransformerEncoderInput


def unpack_encoders(module) -> None:
    """Make every packing encoder of ``module`` (an inference copy) compute every position and
    zero the padded ones after its layers."""
    for _, sub in module.named_modules():
        if isinstance(sub, TransformerEncoder) and sub.skip_padding:
            object.__setattr__(sub, "forward", _zeroing_padding(sub, sub.forward))
            sub.skip_padding = False


def _zeroing_padding(encoder: TransformerEncoder, forward):
    def run(input, mask_pad=None, mask_attn=None):
        out = forward(input, mask_pad, mask_attn)
        x = input.tensor if isinstance(input, TransformerEncoderInput) else input
        if isinstance(input, TransformerEncoderInput):
            mask_pad = input.pad if mask_pad is None else mask_pad
            mask_attn = input.attn if mask_attn is None else mask_attn
        encoder.skip_padding = True  # would the encoder have packed these inputs?
        try:
            packs = encoder._packs(x, mask_pad, mask_attn)
        finally:
            encoder.skip_padding = False
        if not packs:
            return out
        # packed only when some token is real: a batch of padding only keeps its values
        some_real = (~mask_pad).any()
        return out.mask_fill(mask_pad.logical_and(some_real).unsqueeze(-1), 0.0)

    return run
