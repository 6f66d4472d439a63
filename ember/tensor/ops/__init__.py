"""Tensor-level operations: validate, dispatch to the device's backend, record for autodiff."""
