"""Tensors, dtypes, devices and the autodiff engine."""

from ember.core.dtypes import DType, bool_, dtype, dtype_from_numpy, float16, float32, float64, int32, int64
from ember.tensor.device import Device, default_device, set_default_device
from ember.tensor.grad_mode import detect_anomaly, enable_grad, is_grad_enabled, no_grad
from ember.tensor.gradients import Gradients
from ember.tensor.tensor import Tensor

# isort: split
# Last: hands the op functions to Tensor's methods (see binding.py).
from ember.tensor import binding as _binding  # noqa: F401

__all__ = [
    "DType",
    "Device",
    "Gradients",
    "Tensor",
    "bool_",
    "default_device",
    "detect_anomaly",
    "dtype",
    "dtype_from_numpy",
    "enable_grad",
    "float16",
    "float32",
    "float64",
    "int32",
    "int64",
    "is_grad_enabled",
    "no_grad",
    "set_default_device",
]
