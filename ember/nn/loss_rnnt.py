"""RNN-Transducer loss (Burn's ``RNNTLoss``; Graves 2012, "Sequence Transduction with Recurrent
Neural Networks"), with torchaudio's ``rnnt_loss`` semantics.

The joiner gives log-probabilities ``lp[b, t, u, k]`` on a lattice of encoder frames t < T_b and
emitted labels u <= U_b. From node (t, u) an alignment either emits the blank and moves to
(t + 1, u), or emits the next label y_{u+1} and moves to (t, u + 1); it ends with the blank at
(T_b − 1, U_b). The forward variable::

    α(0, 0) = 0
    α(t, u) = logaddexp(α(t − 1, u) + lp[t − 1, u, blank],  α(t, u − 1) + lp[t, u − 1, y_u])
    loss_b  = −(α(T_b − 1, U_b) + lp[T_b − 1, U_b, blank])

is computed in log space one anti-diagonal ``n = t + u`` at a time (every node of a diagonal
depends only on the previous one), vectorised over the batch and the diagonal, so the loop
runs ``T + U`` steps; autodiff gives the gradient (the β recursion is its backward pass).
Unreachable nodes stay ``-inf`` with a zero gradient, never NaN.

Differences from torchaudio: the blank defaults to 0 (Burn's; torchaudio's is −1, the last
label), there is no gradient ``clamp``, and lengths may be shorter than the padded T and U.
"""

from __future__ import annotations

import math

import numpy as np

from ember._deprecation import renamed_globals
from ember.nn.loss_ctc import _int_host, _log_sum_exp
from ember.nn.loss_reduction import Reduction, as_reduction, check_float
from ember.nn.module import Module
from ember.nn.rnn.sequence import unbind_steps
from ember.record.config import Config
from ember.tensor.creation import tensor as make_tensor
from ember.tensor.creation import zeros
from ember.tensor.op_functions import stack
from ember.tensor.ops._core import shape_str
from ember.tensor.tensor import Tensor

__all__ = ["RnntLoss", "RnntLossConfig"]


class RnntLossConfig(Config):
    """Configuration of :class:`RnntLoss` (Burn's ``RNNTLossConfig``).

    Args:
        blank: the blank label's index in the vocabulary (0).
        logits: the inputs are logits, normalised by a log-softmax over the vocabulary inside
            the loss (True, torchaudio's ``fused_log_softmax``); False: they are already
            log-probabilities.
    """

    _former_names = ("RNNTLossConfig",)  # config files written before the rename say this

    blank: int = 0
    logits: bool = True

    def init(self, device=None, dtype=None) -> "RnntLoss":
        return RnntLoss(self.blank, self.logits)


class RnntLoss(Module):
    """RNN-T loss: ``−log Σ_alignments Π p(alignment)`` per sample over the (T, U) lattice.

    Args:
        blank: the blank label's index.
        logits: apply a log-softmax over the vocabulary first.
    """

    def __init__(self, blank: int = 0, logits: bool = True):
        if isinstance(blank, bool) or not isinstance(blank, int) or blank < 0:
            raise ValueError(f"RnntLoss: blank must be a non-negative label index, got {blank!r}")
        self.blank = blank
        self.logits = bool(logits)

    def forward(
        self, logits: Tensor, targets: Tensor, logit_lengths: Tensor, target_lengths: Tensor
    ) -> Tensor:
        """One loss per sample, ``[batch]`` (no reduction, as Burn's ``forward``).

        Args:
            logits: ``[batch, T, U + 1, vocab]`` joiner outputs (logits, or log-probabilities
                when ``logits`` is False).
            targets: ``[batch, U]`` int labels, padded past each length (padding ignored);
                never the blank.
            logit_lengths: ``[batch]`` encoder frames used per sample, in [1, T].
            target_lengths: ``[batch]`` labels per sample, in [0, U].
        """
        op = "RnntLoss"
        check_float(op, "logits", logits)
        if logits.ndim != 4:
            raise ValueError(f"{op}: logits must be [batch, T, U+1, vocab], got {shape_str(logits.shape)}")
        batch, frames, nodes, vocab = logits.shape
        if nodes < 1:
            raise ValueError(
                f"{op}: logits must have U+1 >= 1 label positions, got {shape_str(logits.shape)}"
            )
        if self.blank >= vocab:
            raise ValueError(f"{op}: blank index {self.blank} must be less than vocab_size {vocab}")
        width = nodes - 1
        if not isinstance(targets, Tensor) or not targets.dtype.is_int or targets.shape != (batch, width):
            got = (
                f"{targets.dtype} {shape_str(targets.shape)}"
                if isinstance(targets, Tensor)
                else type(targets)
            )
            raise ValueError(
                f"{op}: targets must be int [batch={batch}, U={width}] (logits' U+1 - 1), got {got}"
            )
        t_len = _int_host(op, "logit_lengths", logit_lengths, (batch,))
        u_len = _int_host(op, "target_lengths", target_lengths, (batch,))
        labels = targets.numpy().astype(np.int64)
        for b in range(batch):
            if not 1 <= t_len[b] <= frames:
                raise ValueError(
                    f"{op}: logit_lengths[{b}] = {t_len[b]} must be in [1, {frames}] (the T of logits)"
                )
            if not 0 <= u_len[b] <= width:
                raise ValueError(
                    f"{op}: target_lengths[{b}] = {u_len[b]} must be in [0, {width}] (the U of targets)"
                )
            used = labels[b, : u_len[b]]
            if used.size and (used.min() < 0 or used.max() >= vocab or (used == self.blank).any()):
                raise ValueError(
                    f"{op}: targets[{b}] must hold labels in [0, {vocab}) other than the blank "
                    f"{self.blank}, got {used.tolist()}"
                )
        if batch == 0:
            return zeros(0, dtype=logits.dtype, device=logits.device)
        log_probs = logits.log_softmax(-1) if self.logits else logits
        return self._negative_log_likelihood(log_probs, labels, t_len, u_len)

    def forward_with_reduction(
        self,
        logits: Tensor,
        targets: Tensor,
        logit_lengths: Tensor,
        target_lengths: Tensor,
        reduction=Reduction.Auto,
    ) -> Tensor:
        """The loss reduced over the batch: ``Mean``/``Auto`` average, ``Sum`` adds up (Burn's
        and torchaudio's reductions)."""
        op = "RnntLoss"
        reduction = as_reduction(op, reduction)
        if reduction not in (Reduction.Mean, Reduction.Sum, Reduction.Auto):
            raise ValueError(f"{op}: {reduction.name} reduction is not supported; use Mean, Sum or Auto")
        loss = self.forward(logits, targets, logit_lengths, target_lengths)
        return loss.sum() if reduction is Reduction.Sum else loss.mean()

    def _negative_log_likelihood(
        self, log_probs: Tensor, labels: np.ndarray, t_len: np.ndarray, u_len: np.ndarray
    ) -> Tensor:
        batch, frames, nodes, _ = log_probs.shape
        width = nodes - 1
        dev, dtype = log_probs.device, log_probs.dtype
        blank_index = np.full((batch, frames, nodes, 1), self.blank, dtype=np.int64)
        blank = log_probs.gather(3, make_tensor(blank_index, device=dev)).reshape(batch, frames, nodes)
        if width:
            label_index = np.ascontiguousarray(
                np.broadcast_to(labels[:, None, :, None], (batch, frames, width, 1))
            )
            label = log_probs[:, :, :width, :].gather(3, make_tensor(label_index, device=dev))
            # emit[b, t, u] = lp[b, t, u - 1, y_u]: the label that enters node (t, u); 0 at u = 0
            emit = label.reshape(batch, frames, width).pad([1, 0], 0.0)
        else:
            emit = zeros(batch, frames, 1, dtype=dtype, device=dev)
        # diagonal n holds the nodes (t = n − u, u); skew both tables so row n lines up with it
        diagonals = int((t_len - 1 + u_len).max()) + 1
        n = np.arange(diagonals)[:, None]
        u = np.arange(nodes)[None, :]
        inside = (n - u >= 0) & (n - u < frames)
        blank_rows = np.clip(n - 1 - u, 0, frames - 1)  # blank from (t − 1, u) into (t, u)
        label_rows = np.clip(n - u, 0, frames - 1)  # label from (t, u − 1) into (t, u)

        def skew(table: Tensor, rows: np.ndarray) -> list[Tensor]:
            index = np.ascontiguousarray(
                np.broadcast_to((rows * nodes + u).reshape(1, -1), (batch, rows.size))
            )
            flat = table.reshape(batch, frames * nodes).gather(1, make_tensor(index, device=dev))
            return unbind_steps(flat.reshape(batch, diagonals, nodes), 1)

        blank_in, label_in = skew(blank, blank_rows), skew(emit, label_rows)
        inside_t = make_tensor(
            np.ascontiguousarray(np.broadcast_to(inside[:, None, :], (diagonals, batch, nodes))), device=dev
        )
        start = np.full((batch, nodes), -np.inf)
        start[:, 0] = 0.0
        alpha = make_tensor(start, dtype=dtype, device=dev)
        history = [alpha]
        for d in range(1, diagonals):
            via_blank = alpha + blank_in[d]
            via_label = alpha[:, :width].pad([1, 0], -math.inf) + label_in[d]
            alpha = _log_sum_exp(via_blank, via_label).where(inside_t[d], -math.inf)
            history.append(alpha)
        # read α(T_b − 1, U_b) on diagonal T_b − 1 + U_b, then add the final blank
        end = (t_len - 1 + u_len) * nodes + u_len
        lattice = stack(history, 1).reshape(batch, diagonals * nodes)
        final_alpha = lattice.gather(1, make_tensor(end[:, None], device=dev)).reshape(batch)
        last = ((t_len - 1) * nodes + u_len)[:, None]
        final_blank = (
            blank.reshape(batch, frames * nodes).gather(1, make_tensor(last, device=dev)).reshape(batch)
        )
        return -(final_alpha + final_blank)


# The names before the acronym rule (README, "Names"), kept one release: each use warns.
__getattr__ = renamed_globals(__name__, {"RNNTLoss": "RnntLoss", "RNNTLossConfig": "RnntLossConfig"})
