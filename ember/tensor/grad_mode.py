"""Global switches of the autodiff engine: grad recording and anomaly detection."""

from __future__ import annotations

import contextlib
import threading


class _State(threading.local):
    def __init__(self):
        self.grad_enabled = True
        self.anomaly = False


_state = _State()


def is_grad_enabled() -> bool:
    return _state.grad_enabled


@contextlib.contextmanager
def no_grad():
    """Context in which no operation is recorded for backward."""
    prev = _state.grad_enabled
    _state.grad_enabled = False
    try:
        yield
    finally:
        _state.grad_enabled = prev


@contextlib.contextmanager
def enable_grad():
    """Context that turns recording back on (inside ``no_grad``)."""
    prev = _state.grad_enabled
    _state.grad_enabled = True
    try:
        yield
    finally:
        _state.grad_enabled = prev


def is_anomaly_enabled() -> bool:
    return _state.anomaly


@contextlib.contextmanager
def detect_anomaly():
    """Context in which backward raises ``FloatingPointError`` at the first op whose gradient
    is NaN or Inf, naming the op and where it was created in the forward pass."""
    prev = _state.anomaly
    _state.anomaly = True
    try:
        yield
    finally:
        _state.anomaly = prev
