"""ember: a deep-learning framework you can read end to end, modelled on Burn.

Importing ember loads neither Numba, CuPy nor PyTorch: backends load on first use.
"""

import os as _os

# OpenBLAS threads spin for ~2^28 cycles after each call by default, stealing the cores the
# kernels that follow need. ember's own products run BLAS single-threaded on ember's threads
# (kernels/cpu/gemm.py), so they do not depend on this; a user's NumPy products between ember's
# kernels still do. The value is read when NumPy loads OpenBLAS, so it applies when ember is
# imported before NumPy; set OPENBLAS_THREAD_TIMEOUT yourself to choose otherwise.
_os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "10")
# Likewise OMP_WAIT_POLICY=passive, read when an OpenMP runtime loads: set here, at import, so
# that one loaded after ember (PyTorch's libgomp, which Numba and the C++ kernels then share)
# does not spin either; one loaded before is noted (see kernels/threads.py).
from ember.kernels import threads as _threads  # noqa: F401  (light: os only)
from ember.tensor import (
    Device,
    DType,
    Gradients,
    Tensor,
    bool_,
    default_device,
    detect_anomaly,
    dtype,
    dtype_from_numpy,
    enable_grad,
    float16,
    float32,
    float64,
    int32,
    int64,
    is_grad_enabled,
    no_grad,
    set_default_device,
)
from ember.tensor import op_functions as _op_functions
from ember.tensor.creation import (
    arange,
    bernoulli,
    empty,
    eye,
    from_dlpack,
    from_numpy,
    full,
    full_like,
    linspace,
    ones,
    ones_like,
    rand,
    randint,
    randn,
    seed,
    tensor,
    zeros,
    zeros_like,
)

# The op functions (ember.sum, ember.exp, ember.where, ember.softmax, ...), generated from the op
# table (ember/core/op_table.py); each takes tensor-likes (an nn.Param) wherever it takes a Tensor.
from ember.tensor.op_functions import *  # noqa: F403
from ember.tensor.sparse import RowSparse

# isort: split
# Last: ember.cuda reaches back into the tensor package.
from ember import cuda  # noqa: F401   (device utilities; imports CuPy only when called)

bool = bool_  # (ember.bool, like torch.bool)
from ember._version import __version__  # noqa: E402, F401  (ember.__version__)

__all__ = [
    "DType",
    "Device",
    "Gradients",
    "RowSparse",
    "Tensor",
    "arange",
    "bernoulli",
    "bool",
    "bool_",
    "default_device",
    "detect_anomaly",
    "dtype",
    "dtype_from_numpy",
    "empty",
    "enable_grad",
    "eye",
    "float16",
    "float32",
    "float64",
    "from_dlpack",
    "from_numpy",
    "full",
    "full_like",
    "int32",
    "int64",
    "is_grad_enabled",
    "linspace",
    "no_grad",
    "ones",
    "ones_like",
    "rand",
    "randint",
    "randn",
    "seed",
    "set_default_device",
    "tensor",
    "zeros",
    "zeros_like",
]
__all__ += _op_functions.__all__

# The creation functions take tensor-likes too (``ember.zeros_like(param)``), as the op functions do
# (see ember.tensor.tensor.accepts_tensor_like).
from ember.tensor.tensor import accepts_tensor_like as _accepts_tensor_like  # noqa: E402

for _name in __all__:
    if getattr(globals()[_name], "__module__", None) == "ember.tensor.creation":
        globals()[_name] = _accepts_tensor_like(globals()[_name])
del _name

_LAZY = {"Config": "ember.record.config", "ConfigError": "ember.record.config"}


def __getattr__(name):
    # Sub-packages that pull more imports load on first use, keeping `import ember` fast.
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    if name in ("nn", "optim", "record", "data", "train", "pretrained", "onnx"):
        import importlib

        return importlib.import_module(f"ember.{name}")
    raise AttributeError(f"module 'ember' has no attribute {name!r}")
