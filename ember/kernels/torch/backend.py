"""The ``torch`` backend class: PyTorch primitives, and the composites PyTorch fuses.

One backend per PyTorch device (``torch``: the CPU, ``torch:cuda`` with an index,
``torch:mps``). Fused overrides live beside their op family (:mod:`.activations`,
:mod:`.norms`...) and return ``DECLINED`` where PyTorch's op would differ from the composed
default, which then runs on the primitives of :mod:`.primitives`.
"""

from __future__ import annotations

import torch

from ember.kernels.backend import Backend
from ember.kernels.torch.activations import TorchActivationOps
from ember.kernels.torch.attention import TorchAttentionOps
from ember.kernels.torch.cross_entropy import TorchLossOps
from ember.kernels.torch.embedding import TorchEmbeddingOps
from ember.kernels.torch.norms import TorchNormOps
from ember.kernels.torch.optimizers import TorchOptimizerOps
from ember.kernels.torch.primitives import TorchPrimitives
from ember.kernels.torch.runtime import torch_device


class TorchBackend(
    TorchActivationOps,
    TorchNormOps,
    TorchLossOps,
    TorchEmbeddingOps,
    TorchAttentionOps,
    TorchOptimizerOps,
    TorchPrimitives,
    Backend,
):
    """PyTorch tensors on one device; ``kind`` is ``torch``, ``torch:cuda`` or ``torch:mps``."""

    name = "torch"
    _array_type = torch.Tensor  # for the float16 rule of the composites (declare.half_via_single)
    _float16 = torch.float16

    def __init__(self, kind: str = "torch", index: int | None = None, seed: int | None = None):
        self.device = torch_device(kind, index)
        self.seed(seed)
