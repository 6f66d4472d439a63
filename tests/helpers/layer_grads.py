"""A layer and its PyTorch counterpart run forward and backward on the same arrays.

Both sides take the gradients of ``sum(output · up)`` for a given upstream ``up``, so the
tests compare the outputs and every gradient in one zip. PyTorch is passed in (the callers
import it with ``pytest.importorskip``).
"""

from __future__ import annotations

import ember


def torch_forward_backward(torch, fn, arrays, up) -> tuple:
    """``(fn(*arrays), gradient of each array)`` in PyTorch, as host arrays."""
    inputs = [torch.from_numpy(a).requires_grad_() for a in arrays]
    out = fn(*inputs)
    (out * torch.from_numpy(up)).sum().backward()
    return (out.detach().numpy(), *(t.grad.numpy() for t in inputs))


def ember_forward_backward(layer, x, up, device, params=()) -> tuple:
    """``(layer(x), gradient of x, gradient of each Param named in params)``, as host arrays."""
    xe = ember.tensor(x, device=device).require_grad()
    out = layer(xe)
    grads = (out * ember.tensor(up, device=device)).sum().backward()
    return (out.numpy(), grads.get(xe).numpy(), *(grads.get(getattr(layer, p).value).numpy() for p in params))
