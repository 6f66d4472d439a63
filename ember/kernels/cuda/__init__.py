"""Fused CUDA kernels of ember's ``cuda`` backend, on CuPy arrays.

Importing this package needs neither CuPy nor a GPU: CuPy is imported on the first kernel
call (see :mod:`ember.kernels.cuda.runtime`), which raises :class:`CudaUnavailableError`
saying why when it cannot run. Kernel sources live in ``kernels/*.cu`` and are compiled by
NVRTC through ``cupy.RawModule`` on first use (see :mod:`ember.kernels.cuda.modules`).

Every function follows the composite contract of :mod:`ember.kernels.backend` (inputs are
never modified, outputs are new C-contiguous arrays, reductions over the last axis), with
float16 inputs computed in float32; the optimizer updates work in place.
"""

from ember.kernels.cuda.activations import gelu, gelu_backward, swiglu, swiglu_backward
from ember.kernels.cuda.attention import attention, attention_backward
from ember.kernels.cuda.cross_entropy import cross_entropy, cross_entropy_backward
from ember.kernels.cuda.dropout import dropout, dropout_backward, dropout_keep_mask
from ember.kernels.cuda.embedding import embedding, embedding_backward
from ember.kernels.cuda.norms import layer_norm, layer_norm_backward, rms_norm, rms_norm_backward
from ember.kernels.cuda.optimizers import adam_update, sgd_update
from ember.kernels.cuda.runtime import (
    CudaUnavailableError,
    cupy_or_error,
    is_available,
    unavailable_reason,
)
from ember.kernels.cuda.softmax import log_softmax, log_softmax_backward, softmax, softmax_backward

__all__ = [
    "CudaUnavailableError",
    "adam_update",
    "attention",
    "attention_backward",
    "cross_entropy",
    "cross_entropy_backward",
    "cupy_or_error",
    "dropout",
    "dropout_backward",
    "dropout_keep_mask",
    "embedding",
    "embedding_backward",
    "gelu",
    "gelu_backward",
    "is_available",
    "layer_norm",
    "layer_norm_backward",
    "log_softmax",
    "log_softmax_backward",
    "rms_norm",
    "rms_norm_backward",
    "sgd_update",
    "softmax",
    "softmax_backward",
    "swiglu",
    "swiglu_backward",
    "unavailable_reason",
]
