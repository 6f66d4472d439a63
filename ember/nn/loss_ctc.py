"""Connectionist temporal classification loss (Burn's ``CTCLoss``; Graves et al. 2006).

The forward (α) recursion runs in log space over the target with blanks interleaved,
``l' = [blank, y1, blank, y2, …, blank]`` (``2·S + 1`` states), vectorised over the batch and
the states, one time step at a time; autodiff gives the gradient (the β recursion is its
backward pass). ``-inf`` log-probabilities and unreachable states stay ``-inf`` without NaN in
the value or the gradient: the log-sum-exp below maps an all ``-inf`` input to ``-inf`` with a
zero gradient instead of ``log 0`` and ``0·inf``.
"""

from __future__ import annotations

import math

import numpy as np

from ember._deprecation import renamed_globals
from ember.nn.loss_reduction import Reduction, as_reduction, check_float
from ember.nn.module import Module
from ember.nn.rnn.sequence import unbind_steps
from ember.record.config import Config
from ember.tensor.creation import tensor as make_tensor
from ember.tensor.grad_mode import no_grad
from ember.tensor.ops._core import shape_str
from ember.tensor.tensor import Tensor

__all__ = ["CtcLoss", "CtcLossConfig"]


def _log_sum_exp(*terms: Tensor) -> Tensor:
    """``log Σ exp(terms)`` element-wise; ``-inf`` (gradient 0) where every term is ``-inf``."""
    with no_grad():
        shift = terms[0]
        for t in terms[1:]:
            shift = shift.maximum(t)
        shift = shift.mask_fill(~shift.isfinite(), 0.0)
    total = (terms[0] - shift).exp()
    for t in terms[1:]:
        total = total + (t - shift).exp()
    reachable = total > 0.0
    return (total.where(reachable, 1.0).log() + shift).where(reachable, -math.inf)


def _int_host(op: str, name: str, t, shape: tuple) -> np.ndarray:
    if not isinstance(t, Tensor) or not t.dtype.is_int or t.shape != shape:
        got = f"{t.dtype} {shape_str(t.shape)}" if isinstance(t, Tensor) else type(t).__name__
        raise ValueError(f"{op}: {name} must be an int tensor {shape_str(shape)}, got {got}")
    return t.numpy().astype(np.int64)


class CtcLossConfig(Config):
    """Configuration of :class:`CtcLoss`.

    Args:
        blank: the blank class index (0).
        zero_infinity: replace infinite losses (no alignment is possible) and their gradients
            by zero (False).
    """

    _former_names = ("CTCLossConfig",)  # config files written before the rename say this

    blank: int = 0
    zero_infinity: bool = False

    def init(self, device=None, dtype=None) -> "CtcLoss":
        return CtcLoss(self.blank, self.zero_infinity)


class CtcLoss(Module):
    """CTC loss: ``−log Σ_alignments Π_t p_t(alignment_t)`` per sample.

    The inputs are log-probabilities (e.g. ``log_softmax`` over the classes), not logits.
    Where no alignment exists (a target needing more frames than the input has) the loss is
    ``inf``, or 0 with ``zero_infinity``.

    Args:
        blank: the blank class index.
        zero_infinity: zero infinite losses and their gradients.
    """

    def __init__(self, blank: int = 0, zero_infinity: bool = False):
        if blank < 0:
            raise ValueError(f"CtcLoss: blank must be a non-negative class index, got {blank}")
        self.blank = int(blank)
        self.zero_infinity = bool(zero_infinity)

    def forward(
        self, log_probs: Tensor, targets: Tensor, input_lengths: Tensor, target_lengths: Tensor
    ) -> Tensor:
        """One loss per sample, ``[batch]`` (no reduction, as Burn's ``forward``).

        Args:
            log_probs: ``[time, batch, classes]`` log-probabilities, blank included.
            targets: ``[batch, max_target_length]`` int labels, padded past each length
                (padding values are ignored); never the blank.
            input_lengths: ``[batch]`` frames used per sample (<= time).
            target_lengths: ``[batch]`` labels per sample (<= max_target_length and <= its
                input length, as Burn requires).
        """
        op = "CtcLoss"
        check_float(op, "log_probs", log_probs)
        if log_probs.ndim != 3:
            raise ValueError(
                f"{op}: log_probs must be [time, batch, classes], got {shape_str(log_probs.shape)}"
            )
        frames, batch, classes = log_probs.shape
        if self.blank >= classes:
            raise ValueError(f"{op}: blank index {self.blank} must be less than num_classes {classes}")
        if (
            not isinstance(targets, Tensor)
            or not targets.dtype.is_int
            or targets.ndim != 2
            or targets.shape[0] != batch
        ):
            got = (
                f"{targets.dtype} {shape_str(targets.shape)}"
                if isinstance(targets, Tensor)
                else type(targets)
            )
            raise ValueError(f"{op}: targets must be int [batch={batch}, max_target_length], got {got}")
        width = targets.shape[1]
        in_len = _int_host(op, "input_lengths", input_lengths, (batch,))
        tg_len = _int_host(op, "target_lengths", target_lengths, (batch,))
        labels = targets.numpy().astype(np.int64)
        for b in range(batch):
            if not 0 <= tg_len[b] <= width:
                raise ValueError(
                    f"{op}: target_lengths[{b}] = {tg_len[b]} must be in [0, {width}] (the width of targets)"
                )
            if not tg_len[b] <= in_len[b] <= frames:
                raise ValueError(
                    f"{op}: input_lengths[{b}] = {in_len[b]} must be in [target_lengths[{b}] = "
                    f"{tg_len[b]}, {frames}] (the time dim of log_probs)"
                )
            used = labels[b, : tg_len[b]]
            if used.size and (used.min() < 0 or used.max() >= classes or (used == self.blank).any()):
                raise ValueError(
                    f"{op}: targets[{b}] must hold classes in [0, {classes}) other than the blank "
                    f"{self.blank}, got {used.tolist()}"
                )
        loss = self._negative_log_likelihood(log_probs, labels, in_len, tg_len)
        if self.zero_infinity:
            loss = loss.mask_fill(loss.isinf(), 0.0)
        return loss

    def forward_with_reduction(
        self,
        log_probs: Tensor,
        targets: Tensor,
        input_lengths: Tensor,
        target_lengths: Tensor,
        reduction=Reduction.Auto,
    ) -> Tensor:
        """The loss reduced: ``Mean``/``Auto`` divides each loss by its target length
        (at least 1, as PyTorch) and averages over the batch; ``Sum`` adds them up."""
        op = "CtcLoss"
        loss = self.forward(log_probs, targets, input_lengths, target_lengths)
        reduction = as_reduction(op, reduction)
        if reduction is Reduction.Sum:
            return loss.sum()
        if reduction not in (Reduction.Mean, Reduction.Auto):
            raise ValueError(f"{op}: {reduction.name} reduction is not supported; use Mean, Sum or Auto")
        lengths = target_lengths.to(loss.device).to(loss.dtype).clamp(min=1.0)
        return (loss / lengths).mean()

    def _negative_log_likelihood(
        self, log_probs: Tensor, labels: np.ndarray, in_len: np.ndarray, tg_len: np.ndarray
    ) -> Tensor:
        frames, batch, _ = log_probs.shape
        states = 2 * labels.shape[1] + 1
        dev, dtype = log_probs.device, log_probs.dtype
        # l': blanks at even states, the labels (blank past each target's length) at odd ones
        extended = np.full((batch, states), self.blank, dtype=np.int64)
        for b in range(batch):
            extended[b, 1 : 2 * tg_len[b] : 2] = labels[b, : tg_len[b]]
        # the skip s-2 -> s is allowed into a label that differs from the label two states back
        skip = np.zeros((batch, states), dtype=bool)
        skip[:, 2:] = (extended[:, 2:] != self.blank) & (extended[:, 2:] != extended[:, :-2])
        index = np.ascontiguousarray(np.broadcast_to(extended[:, None, :], (batch, frames, states)))
        emit = log_probs.permute(1, 0, 2).gather(2, make_tensor(index, device=dev))  # [batch, time, states]
        # α before the first frame: all mass on the first blank state (so an empty input with an
        # empty target has probability 1)
        start = np.full((batch, states), -np.inf)
        start[:, 0] = 0.0
        alpha = make_tensor(start, dtype=dtype, device=dev)
        skip_t = make_tensor(skip, device=dev)
        active = make_tensor(np.arange(frames)[:, None, None] < in_len[None, :, None], device=dev)
        for t, emit_t in enumerate(unbind_steps(emit, 1)[: int(in_len.max(initial=0))]):
            stay = alpha
            step = alpha[:, : states - 1].pad([1, 0], -math.inf)
            candidates = [stay, step]
            if states > 1:
                candidates.append(alpha[:, : states - 2].pad([2, 0], -math.inf).where(skip_t, -math.inf))
            new = _log_sum_exp(*candidates) + emit_t
            alpha = new if (in_len > t).all() else new.where(active[t], alpha)
        last = 2 * tg_len
        ends = make_tensor(np.stack([last, np.maximum(last - 1, 0)], 1), device=dev)
        has_label = make_tensor(np.stack([np.ones(batch, bool), tg_len > 0], 1), device=dev)
        final = alpha.gather(1, ends).where(has_label, -math.inf)
        return -_log_sum_exp(final[:, 0], final[:, 1])


# The names before the acronym rule (README, "Names"), kept one release: each use warns.
__getattr__ = renamed_globals(__name__, {"CTCLoss": "CtcLoss", "CTCLossConfig": "CtcLossConfig"})
