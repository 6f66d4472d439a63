"""ember implementations of ONNX's convolution and pooling ops, over any number of spatial dims,
built on the same im2col windows as ``ember.nn``'s layers (``ember.nn.unfold``)."""

from __future__ import annotations

import numpy as np

import ember
from ember.nn.conv import conv_nd
from ember.nn.unfold import max_over_windows, out_size, unfold_windows
from ember.onnx.node import OnnxNode
from ember.tensor import Tensor


def _per_dim(node: OnnxNode, name: str, n: int, default: int) -> tuple:
    value = node.attr(name)
    if value is None:
        return (default,) * n
    value = tuple(int(v) for v in value)
    if len(value) != n:
        raise node.fail(f"{name} {list(value)} should have {n} values (one per spatial dim)")
    return value


def _pads(node: OnnxNode, spatial: tuple, kernel: tuple, stride: tuple, dilation: tuple) -> list:
    """(before, after) per spatial dim, from ``pads`` or ``auto_pad``."""
    n = len(spatial)
    auto = node.attr("auto_pad", "NOTSET")
    if auto == "VALID":
        return [(0, 0)] * n
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        out = []
        for size, k, s, d in zip(spatial, kernel, stride, dilation):
            total = max((-(-size // s) - 1) * s + (k - 1) * d + 1 - size, 0)
            small, big = total // 2, total - total // 2
            out.append((small, big) if auto == "SAME_UPPER" else (big, small))
        return out
    flat = _per_dim(node, "pads", 2 * n, 0)
    return list(zip(flat[:n], flat[n:]))


def _flat_pads(pairs) -> list:
    """(before, after) per spatial dim -> ember.pad's last-dim-first list."""
    return [p for pair in reversed(pairs) for p in pair]


def conv(node, x, weight, bias=None):
    n = weight.ndim - 2
    kernel = tuple(weight.shape[2:])
    stride = _per_dim(node, "strides", n, 1)
    dilation = _per_dim(node, "dilations", n, 1)
    pads = _pads(node, tuple(x.shape[2:]), kernel, stride, dilation)
    return conv_nd(
        x, weight, bias, stride, tuple(pads), dilation, int(node.attr("group", 1)), f"ONNX Conv {node.name!r}"
    )


def _windows(node: OnnxNode, x: Tensor, fill: float):
    """The padded input, its windows ``[B, C, K, L]`` and the pooling geometry."""
    if x.ndim < 3:
        raise node.fail(f"expected an input [batch, channels, *spatial], got {list(x.shape)}")
    n = x.ndim - 2
    kernel = _per_dim(node, "kernel_shape", n, 0)
    stride = _per_dim(node, "strides", n, 1)
    dilation = _per_dim(node, "dilations", n, 1)
    pads = _pads(node, tuple(x.shape[2:]), kernel, stride, dilation)
    ceil = bool(node.attr("ceil_mode", 0))
    outs, full = [], []
    for size, k, s, d, (before, after) in zip(x.shape[2:], kernel, stride, dilation, pads):
        padded = size + before + after
        count = out_size(padded, k, s, d, ceil, after)
        if count <= 0:
            raise node.fail(
                f"input {list(x.shape)} with pads {pads} is smaller than the kernel {list(kernel)}"
            )
        overhang = max((count - 1) * s + d * (k - 1) + 1 - padded, 0)  # ceil mode's partial window
        full.append((before, after + overhang))
        outs.append(count)
    xp = x.pad(_flat_pads(full), fill) if any(p for pair in full for p in pair) else x
    geometry = (kernel, stride, dilation, tuple(outs))
    return xp, unfold_windows(xp, *geometry), geometry, pads, full


def pads_unsupported(node):
    auto = node.attr("auto_pad", "NOTSET")
    return None if auto in ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER") else f"auto_pad={auto!r}"


def max_pool_unsupported(node):
    if len([o for o in node.outputs if o]) > 1:
        return "the Indices output"
    return pads_unsupported(node)


def max_pool(node, x):
    xp, windows, geometry, pads, _ = _windows(node, x, float("-inf"))
    inside = np.zeros(xp.shape[2:], dtype=bool)
    inside[tuple(slice(before, before + size) for (before, _), size in zip(pads, x.shape[2:]))] = True
    return max_over_windows(windows, inside, *geometry).reshape(*x.shape[:2], *geometry[3])


def average_pool(node, x):
    xp, windows, geometry, pads, full = _windows(node, x, 0.0)
    # the divisor counts each window's cells inside the input, or inside the explicit padding too
    counted = np.zeros(xp.shape[2:], dtype=x.dtype.numpy)
    include_pad = bool(node.attr("count_include_pad", 0))
    region = pads if include_pad else [(0, 0)] * len(pads)
    starts = [f[0] - r[0] for f, r in zip(full, region)]
    counted[tuple(slice(s, s + r[0] + size + r[1]) for s, r, size in zip(starts, region, x.shape[2:]))] = 1
    ones = ember.from_numpy(counted.reshape(1, 1, *counted.shape), x.device)
    divisor = unfold_windows(ones, *geometry).sum(2)
    return (windows.sum(2) / divisor).reshape(*x.shape[:2], *geometry[3])


def global_average_pool(node, x):
    return x.mean(tuple(range(2, x.ndim)), keepdim=True)


def global_max_pool(node, x):
    return x.max(tuple(range(2, x.ndim)), keepdim=True)
