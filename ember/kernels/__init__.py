"""Backends: the contract (backend.py), the registry, and the reference/cpu/cuda/native kernels."""
