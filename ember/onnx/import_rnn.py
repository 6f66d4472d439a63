"""ember implementations of ONNX's recurrences ``LSTM``, ``GRU`` and ``RNN``, unrolled over the
sequence with ember's tensor ops (so gradients flow to the weights).

ONNX packs each direction's gates along one axis: ``W [directions, gates·H, input]``,
``R [directions, gates·H, H]``, ``B [directions, 2·gates·H]`` (the input biases, then the
recurrent ones), in the gate order LSTM ``i o f c``, GRU ``z r h``, RNN one gate. ``layout`` 1
puts the batch first in ``X``, ``Y`` and the states. With ``sequence_lens`` a batch row stops at
its length: its state is held and its later ``Y`` steps are zeros (a reverse direction starts at
the row's last step); a row of length 0 ends in zero states, as in ONNX Runtime. Only the
default activations (sigmoid gates, tanh) without ``clip`` and without peepholes are
implemented; any other setting is refused at load.
"""

from __future__ import annotations

import numpy as np

import ember
from ember.onnx.node import OnnxNode
from ember.tensor import Tensor

_DEFAULT_ACTIVATIONS = {"LSTM": ("sigmoid", "tanh", "tanh"), "GRU": ("sigmoid", "tanh"), "RNN": ("tanh",)}
_GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
_DIRECTIONS = {"forward": 1, "reverse": 1, "bidirectional": 2}


def rnn_unsupported(node: OnnxNode):
    """The setting of a recurrence ember does not implement, or None."""
    direction = node.attr("direction", "forward")
    if direction not in _DIRECTIONS:
        return f"direction={direction!r}"
    activations = node.attr("activations")
    if activations is not None:
        activations = [a.decode() if isinstance(a, bytes) else str(a) for a in activations]
        wanted = _DEFAULT_ACTIVATIONS[node.op_type] * _DIRECTIONS[direction]
        if tuple(a.lower() for a in activations) != wanted:
            return f"activations={list(activations)} (only the defaults {list(wanted)})"
    if node.attr("clip") is not None:
        return f"clip={node.attr('clip')}"
    if node.attr("layout", 0) not in (0, 1):
        return f"layout={node.attr('layout')}"
    if node.op_type == "LSTM" and len(node.inputs) > 7 and node.inputs[7]:
        return "peepholes (input P)"
    return None


def lstm(node, x, w, r, b=None, sequence_lens=None, initial_h=None, initial_c=None, p=None):
    return _recurrence(node, x, w, r, b, sequence_lens, initial_h, initial_c)


def gru(node, x, w, r, b=None, sequence_lens=None, initial_h=None):
    return _recurrence(node, x, w, r, b, sequence_lens, initial_h, None)


def rnn(node, x, w, r, b=None, sequence_lens=None, initial_h=None):
    return _recurrence(node, x, w, r, b, sequence_lens, initial_h, None)


def _recurrence(node: OnnxNode, x, w, r, b, sequence_lens, initial_h, initial_c) -> list:
    """``[Y, Y_h]`` (``[Y, Y_h, Y_c]`` for LSTM) in the node's layout."""
    batch_first = node.attr("layout", 0) == 1
    if x.ndim != 3:
        raise node.fail(
            f"expected X of rank 3 ([seq, batch, input] or, layout 1, [batch, seq, input]), got {list(x.shape)}"
        )
    if not x.dtype.is_float:
        raise node.fail(f"expected a float X, got {x.dtype}")
    if batch_first:
        x = x.transpose(0, 1)
        initial_h = None if initial_h is None else initial_h.transpose(0, 1)
        initial_c = None if initial_c is None else initial_c.transpose(0, 1)
    seq, batch, _ = x.shape
    directions = _DIRECTIONS[node.attr("direction", "forward")]
    gates = _GATES[node.op_type]
    size = _hidden_size(node, w, r, x, directions, gates)
    for name, value in (("B", b), ("initial_h", initial_h), ("initial_c", initial_c)):
        want = [directions, 2 * gates * size] if name == "B" else [directions, batch, size]
        if value is not None and list(value.shape) != want:
            layout = " (layout 1: [batch, directions, H])" if batch_first and name != "B" else ""
            raise node.fail(f"{name} should be {want}{layout}, got {list(value.shape)}")
    mask = _length_mask(node, sequence_lens, seq, batch, x)
    empty = None if mask is None or mask.shape[0] == 0 else _nonempty_rows(sequence_lens, x)

    ys, hs, cs = [], [], []
    for d in range(directions):
        reverse = node.attr("direction", "forward") == "reverse" or d == 1
        bias = None if b is None else b[d]
        h = _initial(initial_h, d, batch, size, x)
        c = _initial(initial_c, d, batch, size, x) if node.op_type == "LSTM" else None
        y, h, c = _run_direction(node, x, w[d], r[d], bias, h, c, mask, reverse, size)
        if empty is not None:  # a row of length 0 ends in zero states (ONNX Runtime's choice)
            h, c = h * empty, None if c is None else c * empty
        ys.append(y)
        hs.append(h)
        cs.append(c)
    y = ember.stack(ys, 1)  # [seq, directions, batch, H]
    y_h = ember.stack(hs, 0)  # [directions, batch, H]
    outs = [y, y_h] + ([ember.stack(cs, 0)] if node.op_type == "LSTM" else [])
    if batch_first:
        outs = [outs[0].permute(2, 0, 1, 3)] + [o.transpose(0, 1) for o in outs[1:]]
    return outs


def _hidden_size(node: OnnxNode, w: Tensor, r: Tensor, x: Tensor, directions: int, gates: int) -> int:
    if w.ndim != 3 or r.ndim != 3:
        raise node.fail(f"W and R should be rank 3, got {list(w.shape)} and {list(r.shape)}")
    size = r.shape[2]
    want_w = [directions, gates * size, x.shape[2]]
    want_r = [directions, gates * size, size]
    if list(w.shape) != want_w or list(r.shape) != want_r:
        raise node.fail(
            f"with {directions} direction(s), {gates} gate(s) and input size {x.shape[2]}, expected "
            f"W {want_w} and R {want_r} (H = R's last dim), got W {list(w.shape)} and R {list(r.shape)}"
        )
    declared = node.attr("hidden_size")
    if declared is not None and int(declared) != size:
        raise node.fail(f"hidden_size={declared} but R {list(r.shape)} has H = {size}")
    return size


def _length_mask(node: OnnxNode, sequence_lens, seq: int, batch: int, x: Tensor):
    """``[seq, batch, 1]``: 1 where a step is inside its row's length; None when every row is full."""
    if sequence_lens is None:
        return None
    lens = np.asarray(sequence_lens).reshape(-1)
    if lens.shape != (batch,) or (lens < 0).any() or (lens > seq).any():
        raise node.fail(
            f"sequence_lens should be {batch} lengths in 0..{seq}, got {np.asarray(sequence_lens).tolist()}"
        )
    if (lens == seq).all():
        return None
    inside = np.arange(seq)[:, None] < lens[None, :]
    return ember.from_numpy(inside[:, :, None].astype(x.dtype.numpy), x.device)


def _nonempty_rows(sequence_lens, x: Tensor):
    """``[batch, 1]``: 0 for a row of length 0, else 1; None when there is no such row."""
    lens = np.asarray(sequence_lens).reshape(-1, 1)
    return None if (lens > 0).all() else ember.from_numpy((lens > 0).astype(x.dtype.numpy), x.device)


def _initial(state, d: int, batch: int, size: int, x: Tensor) -> Tensor:
    if state is not None:
        return state[d]
    return ember.zeros(batch, size, dtype=x.dtype, device=x.device)


def _run_direction(node, x, w, r, bias, h, c, mask, reverse: bool, size: int):
    """One direction over the sequence: its ``Y [seq, batch, H]`` and final ``h`` and ``c``."""
    kind = node.op_type
    gates = _GATES[kind]
    # the input side of every step at once: [seq, batch, gates·H]
    xw = x.matmul(w.transpose(0, 1))
    rb = None
    if bias is not None:
        wb, rb = bias[: gates * size], bias[gates * size :]
        if kind != "GRU":  # the recurrent bias sits outside the reset gate's product only in GRU
            xw, rb = xw + (wb + rb), None
        else:
            xw = xw + wb
    rt = r.transpose(0, 1)
    if kind == "GRU":  # the update and reset gates' recurrent weights, then the new gate's
        r_zr, r_h = rt[:, : 2 * size], rt[:, 2 * size :]
        rb_zr, rb_h = (None, None) if rb is None else (rb[: 2 * size], rb[2 * size :])
    input_forget = kind == "LSTM" and bool(node.attr("input_forget", 0))
    before_reset = kind == "GRU" and bool(node.attr("linear_before_reset", 0))
    ys = [None] * x.shape[0]
    for t in reversed(range(x.shape[0])) if reverse else range(x.shape[0]):
        if kind == "LSTM":
            hr = h.matmul(rt)
            i, o, f, g = (xw[t] + hr).chunk(4, -1)
            i, o, g = i.sigmoid(), o.sigmoid(), g.tanh()
            f = 1.0 - i if input_forget else f.sigmoid()
            c_new = f * c + i * g
            h_new = o * c_new.tanh()
        elif kind == "GRU":
            xz, xr, xh = xw[t].chunk(3, -1)
            hzr = h.matmul(r_zr)
            hz, hr_ = (hzr if rb_zr is None else hzr + rb_zr).chunk(2, -1)
            z, reset = (xz + hz).sigmoid(), (xr + hr_).sigmoid()
            if before_reset:  # r · (h R_h + Rb_h)
                hh = h.matmul(r_h)
                hh = reset * (hh if rb_h is None else hh + rb_h)
            else:  # (r · h) R_h + Rb_h
                hh = (reset * h).matmul(r_h)
                hh = hh if rb_h is None else hh + rb_h
            n = (xh + hh).tanh()
            h_new = (1.0 - z) * n + z * h
            c_new = None
        else:
            h_new = (xw[t] + h.matmul(rt)).tanh()
            c_new = None
        if mask is None:
            h, c = h_new, c_new
            ys[t] = h
        else:  # rows past their length keep their state and output zeros
            m = mask[t]
            h = m * h_new + (1.0 - m) * h
            c = None if c_new is None else m * c_new + (1.0 - m) * c
            ys[t] = m * h_new
    if not ys:
        return ember.zeros(0, x.shape[1], size, dtype=x.dtype, device=x.device), h, c
    return ember.stack(ys, 0), h, c
