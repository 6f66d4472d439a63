"""The ``cpu`` backend: NumPy primitives (BLAS GEMM), fused Numba composites, and native C++
kernels where they measure faster than their Numba twins (see bench/)."""
from __future__ import annotations

import numpy as np

from ember.kernels import native_ops
from ember.kernels.cpu import activations, attention, cross_entropy, dropout, embedding, norms, softmax
from ember.kernels.reference import ArrayBackend


class CpuBackend(ArrayBackend):
    name = "cpu"

    def __init__(self, seed=None):
        super().__init__(seed)
        # The native GELU measured faster than the Numba one at the AG News sizes (bench/).
        self._native = native_ops.available()

    # ---- primitives with a faster kernel than NumPy's -----------------------------------
    def _erf(self, x):
        return activations.erf(x)

    # ---- fused composites ---------------------------------------------------------------
    def softmax(self, x):
        return softmax.softmax(x)

    def softmax_backward(self, y, dy):
        return softmax.softmax_backward(y, dy)

    def log_softmax(self, x):
        return softmax.log_softmax(x)

    def log_softmax_backward(self, y, dy):
        return softmax.log_softmax_backward(y, dy)

    def layer_norm(self, x, gamma, beta, eps):
        return norms.layer_norm(x, gamma, beta, eps)

    def layer_norm_backward(self, dy, x, mean, rstd, gamma):
        return norms.layer_norm_backward(dy, x, mean, rstd, gamma)

    def rms_norm(self, x, gamma, eps):
        return norms.rms_norm(x, gamma, eps)

    def rms_norm_backward(self, dy, x, rstd, gamma):
        return norms.rms_norm_backward(dy, x, rstd, gamma)

    def gelu(self, x, approximate):
        if self._native and x.dtype in (np.float32, np.float64):
            return native_ops.gelu(x, approximate)
        return activations.gelu(x, approximate)

    def gelu_backward(self, x, dy, approximate):
        if self._native and x.dtype in (np.float32, np.float64):
            return native_ops.gelu_backward(x, dy, approximate)
        return activations.gelu_backward(x, dy, approximate)

    def cross_entropy(self, logits, targets, smoothing):
        return cross_entropy.cross_entropy(logits, targets, smoothing)

    def cross_entropy_backward(self, logits, targets, lse, dloss, smoothing):
        return cross_entropy.cross_entropy_backward(logits, targets, lse, dloss, smoothing)

    def embedding(self, weight, ids):
        return embedding.embedding(weight, ids)

    def embedding_backward(self, dout, ids, num_embeddings):
        return embedding.embedding_backward(dout, ids, num_embeddings)

    def dropout(self, x, p, seed):
        return dropout.dropout(x, p, seed)

    def dropout_backward(self, dy, p, seed):
        return dropout.dropout_backward(dy, p, seed)

    def attention(self, q, k, v, mask_pad, scale, quiet, dropout_p, seed):
        return attention.attention(q, k, v, mask_pad, scale, quiet, dropout_p, seed)

    def attention_backward(self, dout, q, k, v, out, lse, mask_pad, scale, quiet, dropout_p, seed):
        return attention.attention_backward(dout, q, k, v, out, lse, mask_pad, scale, quiet, dropout_p, seed)
