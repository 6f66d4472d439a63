"""Every fused CUDA op in one namespace, for :class:`ember.kernels.cuda.backend.CudaBackend`.

The implementations live in one module per concept (softmax, norms, gelu, cross_entropy,
embedding, dropout, attention, optimizers); this module only re-exports them. Importing it
does not import CuPy.
"""

from ember.kernels.cuda.attention import attention, attention_backward
from ember.kernels.cuda.attention import fits as attention_fits
from ember.kernels.cuda.attention import supports as attention_supports
from ember.kernels.cuda.cross_entropy import cross_entropy, cross_entropy_backward
from ember.kernels.cuda.dropout import dropout, dropout_backward, dropout_keep_mask
from ember.kernels.cuda.embedding import embedding, embedding_backward
from ember.kernels.cuda.gelu import gelu, gelu_backward
from ember.kernels.cuda.launch import row_fits
from ember.kernels.cuda.norms import layer_norm, layer_norm_backward, rms_norm, rms_norm_backward
from ember.kernels.cuda.optimizers import adam_update, sgd_update
from ember.kernels.cuda.optimizers import fits as optim_fits
from ember.kernels.cuda.softmax import log_softmax, log_softmax_backward, softmax, softmax_backward

__all__ = [
    "adam_update",
    "attention",
    "attention_backward",
    "attention_fits",
    "attention_supports",
    "cross_entropy",
    "cross_entropy_backward",
    "dropout",
    "dropout_backward",
    "dropout_keep_mask",
    "embedding",
    "embedding_backward",
    "gelu",
    "gelu_backward",
    "layer_norm",
    "layer_norm_backward",
    "log_softmax",
    "log_softmax_backward",
    "optim_fits",
    "rms_norm",
    "rms_norm_backward",
    "row_fits",
    "sgd_update",
    "softmax",
    "softmax_backward",
]
