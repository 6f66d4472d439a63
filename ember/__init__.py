"""ember: a deep-learning framework you can read end to end, modelled on Burn.

Importing ember loads neither Numba, CuPy nor PyTorch: backends load on first use.
"""
import os as _os

# OpenBLAS threads spin for ~2^28 cycles after each GEMM by default, stealing the cores the
# Numba kernels between GEMMs need (AG News train step 0.63 s -> 0.45 s with 2^10 here). The
# value is read when NumPy loads OpenBLAS, so it applies when ember is imported before NumPy;
# set OPENBLAS_THREAD_TIMEOUT yourself to choose otherwise.
_os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "10")
from ember.tensor import (Device, DType, Gradients, Tensor, bool_, default_device, detect_anomaly, dtype,
                          dtype_from_numpy, enable_grad, float16, float32, float64, int32, int64,
                          is_grad_enabled, no_grad, set_default_device)
from ember.tensor.creation import (arange, bernoulli, empty, eye, from_dlpack, from_numpy, full, full_like,
                                   linspace, ones, ones_like, rand, randint, randn, seed, tensor, zeros,
                                   zeros_like)
from ember.tensor.ops.elementwise import clamp, leaky_relu, mask_fill, relu, sigmoid, silu, softplus, where
from ember.tensor.ops.indexing import (argsort, gather, index_put, index_select, one_hot, scatter_add, sort,
                                       take_along_dim, topk)
from ember.tensor.ops.linalg import matmul
from ember.tensor.ops.movement import cat, chunk, flatten, pad, split, stack
from ember.tensor.ops.nn import (attention, cross_entropy_per_sample, dropout, embedding, embedding_bag, gelu,
                                 layer_norm, log_softmax, quiet_softmax, rms_norm, softmax)
from ember.tensor.sparse import RowSparse
from ember.tensor.ops.reduction import logsumexp
from ember import cuda  # noqa: E402,F401  (device utilities; imports CuPy only when called)

bool = bool_  # noqa: A001  (ember.bool, like torch.bool)
__version__ = "0.1.0"

__all__ = [
    "Device", "DType", "Gradients", "RowSparse", "Tensor", "arange", "argsort", "attention", "bernoulli",
    "bool", "bool_", "cat", "chunk", "clamp", "cross_entropy_per_sample", "default_device", "detect_anomaly",
    "dropout", "dtype", "dtype_from_numpy", "embedding", "embedding_bag", "empty", "enable_grad", "eye",
    "flatten", "float16", "float32", "float64", "from_dlpack", "from_numpy", "full", "full_like", "gather",
    "gelu", "index_put", "index_select", "int32", "int64", "is_grad_enabled", "layer_norm", "leaky_relu",
    "linspace", "log_softmax", "logsumexp", "mask_fill", "matmul", "no_grad", "one_hot", "ones", "ones_like",
    "pad", "quiet_softmax", "rand", "randint", "randn", "relu", "rms_norm", "scatter_add", "seed",
    "set_default_device", "sigmoid", "silu", "softmax", "softplus", "sort", "split", "stack", "take_along_dim",
    "tensor", "topk", "where", "zeros", "zeros_like",
]

# The top-level op and creation functions take tensor-likes (an nn.Param) wherever they take
# a Tensor, as Tensor methods do (see ember.tensor.tensor.accepts_tensor_like).
from ember.tensor.tensor import accepts_tensor_like as _accepts_tensor_like  # noqa: E402

for _name in __all__:
    if callable(globals()[_name]) and getattr(globals()[_name], "__module__", "").startswith(
            ("ember.tensor.ops.", "ember.tensor.creation")):
        globals()[_name] = _accepts_tensor_like(globals()[_name])
del _name

_LAZY = {"Config": "ember.record.config", "ConfigError": "ember.record.config"}


def __getattr__(name):
    # Sub-packages that pull more imports load on first use, keeping `import ember` fast.
    if name in _LAZY:
        import importlib
        return getattr(importlib.import_module(_LAZY[name]), name)
    if name in ("nn", "optim", "record", "data", "train"):
        import importlib
        return importlib.import_module(f"ember.{name}")
    raise AttributeError(f"module 'ember' has no attribute {name!r}")
